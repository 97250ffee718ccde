"""RELINE's experiment settings: the games and agents, the paper's figures (Table 1, §4) and
:class:`RelineConfig` (Tufano et al., 2022)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from jgtest.errors import BadInput
from jgtest.losses.cem import ELITE_PERCENTILE
from jgtest.seeds import check_seed

GAMES = ("CartPoleBugs-v0", "PacMaze-v0", "KartTrack-v0")
#: The real SuperTuxKart on any race track, ``supertuxkart:<track>``: the package's ``scotland``
#: (``SuperTuxKart_RELINE.py``, ``GAME_LEVEL``) or another, such as ``lighthouse``.
REAL_KART_PREFIX = "supertuxkart:"
#: The real games, through the host loop (:mod:`jgtest.methods.reline.host`); the kart on any track.
HOST_GAMES = ("ale:MsPacman", "supertuxkart:scotland")
#: The kart games, on device and real: calibration, low-FPS points, no Table 1.
KART_GAMES = ("KartTrack-v0", "supertuxkart:scotland")
#: The real games RELINE load-tests with the generic terms of :mod:`jgtest.methods.reline.level`, by
#: prefix: any ViZDoom scenario or WAD map, any Gymnasium game whose telemetry gives a position;
#: calibration and low-FPS areas, as on the kart.
GENERIC_PREFIXES = ("vizdoom:", "gym:")


def uses_generic_terms(game: str) -> bool:
    """Whether RELINE load-tests ``game`` with the generic terms (:data:`GENERIC_PREFIXES`)."""
    return game.startswith(GENERIC_PREFIXES)


def is_real_kart(game: str) -> bool:
    """Whether ``game`` is the real SuperTuxKart (:data:`REAL_KART_PREFIX`, any track)."""
    return game.startswith(REAL_KART_PREFIX)


def is_kart(game: str) -> bool:
    """Whether ``game`` is a kart game, the twin or the real one (:data:`KART_GAMES`)."""
    return game == "KartTrack-v0" or is_real_kart(game)


def is_bridged(game: str) -> bool:
    """Whether ``game`` is one of RELINE's real games (played through the host loop)."""
    return game in HOST_GAMES or is_real_kart(game) or uses_generic_terms(game)


def calibrates(game: str) -> bool:
    """Whether RELINE's campaign on ``game`` calibrates ``t`` and finds low-FPS points (the karts
    and the levels)."""
    return is_kart(game) or uses_generic_terms(game)


AGENTS = ("reline", "rl-baseline", "random")
#: CEM's elite rule (CartPole): the replication package's percentile cut, or the paper's rank
#: (:class:`RelineConfig`).
ELITES = ("percentile", "rank")
#: How the trained models play their evaluation episodes: still learning (the package), or frozen.
EVALUATIONS = ("training", "frozen")

#: RELINE's Table 1 (§3.2): {agent: {n: (mean, median, sd)}} episodes out of 1,000.
PAPER_TABLE1 = {
    "CartPoleBugs-v0": {
        "reline": {1: (965, 984, 47), 2: (102, 47, 177)},
        "rl-baseline": {1: (715, 706, 107), 2: (5, 1, 7)},
        "random": {1: (12, 11, 4), 2: (0, 0, 0)},
    },
    "PacMaze-v0": {
        "reline": {1: (971, 989, 59), 2: (966, 985, 63), 3: (914, 941, 87), 4: (879, 907, 106)},
        "rl-baseline": {1: (700, 680, 228), 2: (356, 343, 169), 3: (114, 80, 90), 4: (25, 23, 17)},
        "random": {1: (24, 23, 5), 2: (17, 16, 3), 3: (1, 1, 1), 4: (1, 1, 1)},
    },
}
PAPER_TABLE1["ale:MsPacman"] = PAPER_TABLE1[
    "PacMaze-v0"
]  # the paper's MsPacman row, twin and real game
#: The paper's kart figures: the calibration and the replay check (§4.1.3); low-FPS points,
#: their mean visits per 1,000 episodes and median confidence, render-time medians, Cliff's
#: delta (Table 2) and shared points (§4.2, Fig. 4).
PAPER_KART = {
    "threshold_ms": 18.36,
    "baseline_render_times": 48_825,
    "threshold_episodes": 300,
    "warmup_episodes": 100,
    "points": {"reline": 173, "rl-baseline": 33, "random": 90},
    "confidence_median": {"reline": 0.99, "rl-baseline": 0.94, "random": 0.76},
    "visits_per_point": {"reline": 89, "rl-baseline": 210, "random": 829},
    # the package's logs (SuperTuxKart/FPS_info_*.xlsx): steps above t of each agent's 1,000
    # counted episodes (benchmarks/results/reline_kart_package_logs.json)
    "slow_steps_share": {"reline": 0.0709, "rl-baseline": 0.0448, "random": 0.3848},
    "cliffs_delta": {
        "reline vs rl-baseline": 0.34,
        "reline vs random": 0.36,
        "rl-baseline vs random": 0.16,
    },
    "overlap": {"reline&rl-baseline": 14, "reline&random": 11, "rl-baseline&random": 10},
    "median_ms_at_points": {"reline": 24.54, "rl-baseline": 21.69, "random": 19.39},
    "replay": {"replays": 300, "rho_min": 0.77, "rho_median": 0.91},
}


@dataclasses.dataclass(frozen=True)
class RelineConfig:
    """The RELINE experiment on one game.

    Attributes:
      game: one of :data:`GAMES`.
      models: trained models per learning agent (and random runs), N; by
        default the paper's: 10 on the toy games (§3.1.4), 1 on the kart (§4,
        one model per agent, 1,000 episodes each).
      eval_episodes: the episodes the tables count per model: evaluation
        episodes, or under ``evaluation="training"`` on the DQN games the last
        episodes of each model's learning run.
      agents: which of :data:`AGENTS` to run.
      seed: experiment seed.
      quick: the small budget (fewer training steps on PacMaze and the kart;
        the CartPole budget is the paper's either way).
      train_steps: override of the DQN training steps per model.
      theta, progress_cap: the kart's θ and M (§4.1.1: 20 and 10).
      threshold_episodes, warmup_episodes: the kart's calibration (§4.1.3: 300, 100).
      train_load_scale, train_load_offset_ms: the machine's load while
        training, on the kart's frame times (δ measures it): fitted to the package's logs,
        whose counted episodes start 3.3 ms above its calibration laps (16.2–16.7 ms against
        13.1) and whose ``t`` is 3.33 ms above ``t_b`` (18.36 against 15.03).
      replays: constant-action replays of the reliability check (§4.1.3: 300).
      game_kwargs: extra ``jgtest.make`` options of the game (e.g. a shorter
        ``max_steps_in_episode`` for a smoke test); recorded in bug records.
      learner_overrides: ``(field, value)`` pairs replacing fields of the
        learner's config (:func:`learner`), e.g. ``(("num_iterations", 50),)``.
      actors: bridged games only: play them as a Ray game farm of this many
        actors (0: in this process; :mod:`jgtest.methods.reline.host`).
      ray_address: with ``actors``, the Ray cluster the farm joins (``"auto"``
        or ``host:port``); by default a local Ray is started.
      elites: CEM's elite rule on CartPole. ``"percentile"`` (default), the
        replication package's, which made the published numbers
        (``rlgameauthors/rlgameauthors``, ``CartPole/CartPole_RELINE_train.py``
        and ``CartPole_RL-baseline_train.py``, lines 21–24: ``BATCH_SIZE = 16``,
        ``PERCENTILE = 70``; ``filter_batch``, RELINE lines 83–90:
        ``reward_bound = np.percentile(rewards, percentile)``, then
        ``if example.reward < reward_bound: continue``): the episodes at or above
        the batch's ``elite_percentile``-th percentile of returns, about the best
        30%, ties included. ``"rank"``, the paper's sentence (§3.1.2: "selects
        the m = 11 (70%) episodes having the highest score"): exactly 11 of 16.
      elite_percentile: the percentile of the batch's returns an episode must reach to be an
        elite under ``elites="percentile"``, in (0, 100)
        (:data:`jgtest.losses.cem.ELITE_PERCENTILE`).
      evaluation: how the trained models play their ``eval_episodes``.
        ``"training"`` (default), the package's evaluation scripts
        (``CartPole/CartPole_RELINE_1k_episodes.py``, line 7: "Play 1000 episodes
        (still training)"; lines 121–136: a fresh Adam, lr 0.01, and the training
        loop's batches of 16 with their elite updates; line 140: the first 1,000
        episodes counted): the model keeps learning on them, and Table 1 counts
        those episodes (for Ms. Pac-Man the package counts the last 1,000 training
        episodes, ``MsPacman/msPacman_RELINE.py`` line 349, with its DQN settings:
        :func:`jgtest.methods.reline.learners.bridged_dqn`; so do PacMaze, its
        twin, and the kart twin, whose package counts the last 1,000 of its
        3,300 training episodes, over a run of at least the step budget and
        ``eval_episodes`` episodes: :mod:`jgtest.methods.reline.learning_run`).
        ``"frozen"``, the paper's text (§3.1.4, "we run each of the trained
        models for 1,000 episodes"): the weights are fixed first; not on the
        real kart (§4.1.3: its 1,000 evaluation episodes are the last of its
        training, :mod:`jgtest.methods.reline.stk`) or the levels.
    """

    game: str
    models: int | None = None
    eval_episodes: int = 1000
    agents: tuple[str, ...] = AGENTS
    seed: int = 0
    quick: bool = False
    train_steps: int | None = None
    theta: float = 20.0
    progress_cap: float = 10.0
    threshold_episodes: int = 300
    warmup_episodes: int = 100
    train_load_scale: float = 1.0
    train_load_offset_ms: float = 3.3
    replays: int = 300
    game_kwargs: tuple[tuple[str, Any], ...] = ()
    learner_overrides: tuple[tuple[str, Any], ...] = ()
    actors: int = 0
    ray_address: str | None = None
    elites: str = "percentile"
    elite_percentile: float = ELITE_PERCENTILE
    evaluation: str = "training"

    def __post_init__(self):
        check_seed(self.seed)
        if self.elites not in ELITES:
            raise BadInput(
                f"RelineConfig.elites must be one of {', '.join(ELITES)}, got {self.elites!r}"
            )
        if not (
            isinstance(self.elite_percentile, (int, float)) and 0 < self.elite_percentile < 100
        ):
            raise BadInput(
                f"RelineConfig.elite_percentile must be in (0, 100), got {self.elite_percentile!r}"
            )
        if self.evaluation not in EVALUATIONS:
            raise BadInput(
                f"RelineConfig.evaluation must be one of {', '.join(EVALUATIONS)}, got "
                f"{self.evaluation!r}"
            )
        if self.evaluation == "frozen" and (
            is_real_kart(self.game) or uses_generic_terms(self.game)
        ):
            raise BadInput(
                f"{self.game}'s campaign evaluates while it trains (§4.1.3): evaluation='frozen' "
                "is not available there"
            )
        if self.game not in GAMES and not is_bridged(self.game):
            raise ValueError(
                f"RELINE runs on {', '.join(GAMES + HOST_GAMES)} (any supertuxkart:<track>) and "
                f"{', '.join(p + '…' for p in GENERIC_PREFIXES)}; got game {self.game!r}"
            )
        if self.actors < 0 or (self.actors and self.game in GAMES):
            raise ValueError(
                f"RelineConfig.actors is for bridged games, a count >= 0; got {self.actors} on "
                f"{self.game}"
            )
        if self.ray_address is not None and not self.actors:
            raise ValueError(
                "RelineConfig.ray_address joins a Ray cluster for a game farm: set actors too "
                f"(got {self.actors})"
            )
        if self.actors and calibrates(self.game):
            raise ValueError(
                f"{self.game}'s campaign runs its game in this process (actors=0): RELINE's "
                "reward and the calibration's stuck rule read the game's own info, which a game "
                "farm does not carry"
            )
        if (
            self.models is None
        ):  # the paper's (10 models, 1 on the kart and the levels); a quick real game: 1
            quick_real = self.quick and is_bridged(self.game)
            object.__setattr__(self, "models", 1 if calibrates(self.game) or quick_real else 10)
        unknown = [a for a in self.agents if a not in AGENTS]
        if unknown or not self.agents:
            raise ValueError(
                f"unknown RELINE agent(s) {unknown or list(self.agents)}; choose from "
                f"{', '.join(AGENTS)}"
            )
        for name in ("models", "eval_episodes", "threshold_episodes", "warmup_episodes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(
                    f"RelineConfig.{name} must be a positive integer, got {getattr(self, name)!r}"
                )
        if self.replays < 2:
            raise ValueError(
                "RelineConfig.replays must be at least 2 (pairwise correlations), got "
                f"{self.replays}"
            )
        for name in ("theta", "progress_cap"):
            if not np.isfinite(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(
                    f"RelineConfig.{name} must be a non-negative number, got {getattr(self, name)}"
                )
        if self.train_load_scale <= 0:
            raise ValueError(
                f"RelineConfig.train_load_scale must be positive, got {self.train_load_scale}"
            )
        if self.train_steps is not None and self.train_steps < 1:
            raise ValueError(f"RelineConfig.train_steps must be positive, got {self.train_steps}")
        if is_real_kart(self.game):
            from jgtest.envs.kart import EnvParams as KartParams

            fixed = {name: getattr(KartParams, name) for name in ("theta", "progress_cap")}
            if any(getattr(self, name) != value for name, value in fixed.items()):
                raise ValueError(
                    f"{self.game}'s bridge pays rl-baseline r_g with θ = {fixed['theta']} and M = "
                    f"{fixed['progress_cap']} "
                    f"(KartTrack's); RELINE must use the same, got theta={self.theta}, "
                    f"progress_cap={self.progress_cap}"
                )
        if calibrates(self.game) and "reline" in self.agents and "rl-baseline" not in self.agents:
            raise ValueError(
                f"RELINE on {self.game} needs rl-baseline: its threshold comes from the trained "
                "rl-baseline (§4.1.3)"
            )


#: PacMaze as RELINE plays it: one pixel a maze cell (:mod:`jgtest.methods.reline.learners`).
PACMAZE_OPTIONS = (("cell_px", 1),)


def game_options(config: RelineConfig, **params) -> dict[str, Any]:
    """``jgtest.make`` options of the game as RELINE plays it (recorded in bug records)."""
    options = dict(PACMAZE_OPTIONS) if config.game == "PacMaze-v0" else {}
    if config.game == "KartTrack-v0":
        options.update(theta=config.theta, progress_cap=config.progress_cap)
    return {**options, **dict(config.game_kwargs), **{k: float(v) for k, v in params.items()}}


def protocol(config: RelineConfig) -> dict:
    """The protocol a run followed, as its ``summary.json`` and ``table1.json`` name it: CEM's elite
    rule (on CartPole) and whether the models learned through their evaluation episodes."""
    elites = (
        {"elites": config.elites, "elite_percentile": config.elite_percentile}
        if config.game == "CartPoleBugs-v0"
        else {}
    )
    return {**elites, "evaluation": config.evaluation}


def eval_seed(config: RelineConfig, agent: str, model: int) -> int:
    """Run seed of ``agent``'s model ``model`` in evaluation (recorded, so traces replay)."""
    return config.seed * 100_000 + 1_000 * (AGENTS.index(agent) + 1) + model
