"""RELINE: reinforcement learning for load testing games (Tufano et al., 2022, ICSE).

RELINE trains an agent on ``r = r_g + r_p`` (:mod:`jgtest.rewards`), a game
reward and a reward for slow frames, and compares it with **rl-baseline** (the
same learner on the game reward only) and a **random** agent:

* CartPoleBugs-v0 (§3): CEM (:mod:`jgtest.agents.cem`: 16 episodes an
  iteration, "the m = 11 (70%) episodes having the highest score" kept, by
  rank (:func:`jgtest.losses.cem_top_m_mask`; a percentile cut keeps every
  episode tied at the 1,000-step cap, and then nothing favours the bugs:
  RELINE found both bugs in 54/1000 episodes that way, 126-131 with m = 11),
  3,200 training episodes of at most 1,000 steps).
* PacMaze-v0 (§3): DQN on 4 stacked grayscale frames with a 10k replay, one
  gradient step per environment step from 10k steps on, Lapan's (2018)
  defaults (:func:`jgtest.agents.dqn.lapan_config`). Frames are the 21×21
  maze at one pixel a cell; the network a small CNN (two 3×3 stride-2
  convolutions of 16 and 32 filters, 128 features; :data:`PACMAZE_NETWORK`)
  computed as patches × kernel, which CPUs run ~6× faster than XLA's
  convolution (the paper: 84×84 Atari frames and the Nature CNN, 1,000
  episodes). ``quick`` trains fewer steps; an MLP over the frames, tried as
  the cheaper quick network, learned neither tunnel.
* KartTrack-v0 (§4): the same DQN on 4 stacked observation vectors (the twin
  exposes the game's internals and the heavy spot in view, where the paper's
  agent saw four 200x150 screenshots; the SuperTuxKart bridge gives pixels),
  2,300 training episodes in the paper.
* The real games, through the host loop: Ms. Pac-Man (ALE, :mod:`jgtest.methods.reline_host`,
  Table 1) and SuperTuxKart (pystk2, :mod:`jgtest.methods.reline_stk`: the kart
  experiment with real render times, the warm-up inside RELINE's training as the
  paper, and the replay check by track section).

The experiment (:func:`run`): N models per learning agent trained **vmapped**
(one compiled program for all), each evaluated on ``eval_episodes`` episodes
(the paper: 10 models, 1,000 episodes each; §3.1.4). Toy games: **Table 1**,
per agent and n = 1…k the number of episodes in which at least n of the k
injected bugs showed, mean / median / sd over the models, next to the paper's.
Kart (§4.1.3): the threshold ``t = t_b + δ`` (``t_b`` = mean + 5·sd of the
render times of the trained rl-baseline in ``threshold_episodes`` episodes,
each stopped when the kart gets stuck, footnote 2; ``δ`` from
``warmup_episodes`` driven by the rl-baseline under training load), RELINE
trained against ``t``, then each agent's low-FPS points (cells above ``t`` in
more than 50% of their visits) with visits and confidence, Mann-Whitney U
with Holm's correction and Cliff's delta between the render times at the
agents' points, the constant-action replay reliability check (pairwise
Spearman, Holm) and the violin and position plots.

Choices where the paper is silent or unclear: the evaluation episodes of the
kart are played under training load, as the paper's (it "train[s] both
agents for additional 1,000 episodes" and judges them with ``t``, which
includes δ), with the weights fixed (the same sentence says "as also done in
our preliminary study", whose agents were "run" for 1,000 episodes, §3.1.4);
the warm-up episodes that measure δ are rollouts of the trained rl-baseline
under the training load outside RELINE's training loop (the paper plays them
at the start of RELINE's training, its network learning from them; here the
load is a game parameter, so δ does not depend on where they run); the DQN
agents evaluate ε-greedily with Lapan's final ε = 0.02 and CEM samples its
policy, as they played in training; ``sd`` is the sample sd (ddof = 1).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.agents import cem, dqn
from jgtest.analysis import at_least_n_table, compare_groups, replay_reliability
from jgtest.checkpoint import Checkpointer, config_fingerprint
from jgtest.envs.registration import make
from jgtest.envs.wrappers import FrameStack, GrayscaleResize
from jgtest.oracles import low_fps_points, reline_threshold
from jgtest.report.records import BugRecord, BugRecordWriter, jsonable, records_to_resume
from jgtest.rewards import RelineReward
from jgtest.rollout import play_episodes, replay_trace

GAMES = ("CartPoleBugs-v0", "PacMaze-v0", "KartTrack-v0")
#: The real games, through the host loop (:mod:`jgtest.methods.reline_host`).
HOST_GAMES = ("ale:MsPacman", "supertuxkart:lighthouse")
#: The kart games, on device and real: calibration, low-FPS points, no Table 1.
KART_GAMES = ("KartTrack-v0", "supertuxkart:lighthouse")
AGENTS = ("reline", "rl-baseline", "random")

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
PAPER_TABLE1["ale:MsPacman"] = PAPER_TABLE1["PacMaze-v0"]  # the paper's MsPacman row, twin and real game
#: The paper's kart figures: the calibration and the replay check (§4.1.3); low-FPS points,
#: their mean visits per 1,000 episodes and median confidence, render-time medians, Cliff's
#: delta (Table 2) and shared points (§4.2, Fig. 4).
PAPER_KART = {
    "threshold_ms": 18.36, "baseline_render_times": 48_825, "threshold_episodes": 300, "warmup_episodes": 100,
    "points": {"reline": 173, "rl-baseline": 33, "random": 90},
    "confidence_median": {"reline": 0.99, "rl-baseline": 0.94, "random": 0.76},
    "visits_per_point": {"reline": 89, "rl-baseline": 210, "random": 829},
    "cliffs_delta": {"reline vs rl-baseline": 0.34, "reline vs random": 0.36, "rl-baseline vs random": 0.16},
    "overlap": {"reline&rl-baseline": 14, "reline&random": 11, "rl-baseline&random": 10},
    "median_ms_at_points": {"reline": 24.54, "rl-baseline": 21.69, "random": 19.39},
    "replay": {"replays": 300, "rho_min": 0.77, "rho_median": 0.91},
}  # fmt: skip

#: Stuck (footnote 2): path_done advanced less than this over the last STUCK_WINDOW steps.
STUCK_PROGRESS, STUCK_WINDOW = 1.0, 10


@dataclasses.dataclass(frozen=True)
class RelineConfig:
    """The RELINE experiment on one game.

    Attributes:
      game: one of :data:`GAMES`.
      models: trained models per learning agent (and random runs), N; by
        default the paper's: 10 on the toy games (§3.1.4), 1 on the kart (§4,
        one model per agent, 1,000 episodes each).
      eval_episodes: evaluation episodes per model.
      agents: which of :data:`AGENTS` to run.
      seed: experiment seed.
      quick: the small budget (fewer training steps on PacMaze and the kart;
        the CartPole budget is the paper's either way).
      train_steps: override of the DQN training steps per model.
      theta, progress_cap: the kart's θ and M (§4.1.1: 20 and 10).
      threshold_episodes, warmup_episodes: the kart's calibration (§4.1.3: 300, 100).
      train_load_scale, train_load_offset_ms: the machine's load while
        training, on the kart's frame times (δ measures it).
      replays: constant-action replays of the reliability check (§4.1.3: 300).
      game_kwargs: extra ``jgtest.make`` options of the game (e.g. a shorter
        ``max_steps_in_episode`` for a smoke test); recorded in bug records.
      learner_overrides: ``(field, value)`` pairs replacing fields of the
        learner's config (:func:`learner`), e.g. ``(("num_iterations", 50),)``.
      actors: bridged games only: play them as a Ray game farm of this many
        actors (0: in this process; :mod:`jgtest.methods.reline_host`).
      ray_address: with ``actors``, the Ray cluster the farm joins (``"auto"``
        or ``host:port``); by default a local Ray is started.
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
    train_load_scale: float = 1.03
    train_load_offset_ms: float = 0.4
    replays: int = 300
    game_kwargs: tuple[tuple[str, Any], ...] = ()
    learner_overrides: tuple[tuple[str, Any], ...] = ()
    actors: int = 0
    ray_address: str | None = None

    def __post_init__(self):
        if self.game not in GAMES + HOST_GAMES:
            raise ValueError(f"RELINE runs on {', '.join(GAMES + HOST_GAMES)}; got game {self.game!r}")
        if self.actors < 0 or (self.actors and self.game in GAMES):
            raise ValueError(f"RelineConfig.actors is for bridged games, a count >= 0; got {self.actors} on {self.game}")
        if self.ray_address is not None and not self.actors:
            raise ValueError(f"RelineConfig.ray_address joins a Ray cluster for a game farm: set actors too (got {self.actors})")
        if self.actors and self.game in KART_GAMES:
            raise ValueError(
                f"{self.game}'s campaign runs its race in this process (actors=0): RELINE's kart reward and the "
                "stuck rule read the race's path_done and centering, which a game farm does not carry"
            )
        if self.models is None:  # the paper's (10 models, 1 on the kart); a quick real game: 1
            quick_real = self.quick and self.game in HOST_GAMES
            object.__setattr__(self, "models", 1 if self.game in KART_GAMES or quick_real else 10)
        unknown = [a for a in self.agents if a not in AGENTS]
        if unknown or not self.agents:
            raise ValueError(f"unknown RELINE agent(s) {unknown or list(self.agents)}; choose from {', '.join(AGENTS)}")
        for name in ("models", "eval_episodes", "threshold_episodes", "warmup_episodes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"RelineConfig.{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.replays < 2:
            raise ValueError(f"RelineConfig.replays must be at least 2 (pairwise correlations), got {self.replays}")
        for name in ("theta", "progress_cap"):
            if not np.isfinite(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(f"RelineConfig.{name} must be a non-negative number, got {getattr(self, name)}")
        if self.train_load_scale <= 0:
            raise ValueError(f"RelineConfig.train_load_scale must be positive, got {self.train_load_scale}")
        if self.train_steps is not None and self.train_steps < 1:
            raise ValueError(f"RelineConfig.train_steps must be positive, got {self.train_steps}")
        if self.game in HOST_GAMES and self.game in KART_GAMES:
            from jgtest.envs.kart import EnvParams as KartParams

            fixed = {name: getattr(KartParams, name) for name in ("theta", "progress_cap")}
            if any(getattr(self, name) != value for name, value in fixed.items()):
                raise ValueError(
                    f"{self.game}'s bridge pays rl-baseline r_g with θ = {fixed['theta']} and M = {fixed['progress_cap']} "
                    f"(KartTrack's); RELINE must use the same, got theta={self.theta}, progress_cap={self.progress_cap}"
                )
        if self.game in KART_GAMES and "reline" in self.agents and "rl-baseline" not in self.agents:
            raise ValueError("the kart's RELINE needs rl-baseline: its threshold comes from the trained rl-baseline (§4.1.3)")


# ----- the learners -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Learner:
    """A learning agent's algorithm on a game: config, hyperparameters, how it sees the game and acts."""

    module: Any  # jgtest.agents.cem or jgtest.agents.dqn
    config: Any
    hparams: Any
    wrap: Callable  # env -> the env the agent sees (observation wrappers)
    policy: Callable  # network -> (params, obs, key) -> action, as in evaluation


def _sampled(network):
    return lambda params, obs, key: jax.random.categorical(key, network.apply(params, obs))


def _epsilon_greedy(epsilon: float):
    def policy(network):
        def act(params, obs, key):
            k_explore, k_random = jax.random.split(key)
            q = network.apply(params, obs)
            random = jax.random.randint(k_random, (), 0, q.shape[-1])
            return jnp.where(jax.random.uniform(k_explore) < epsilon, random, jnp.argmax(q))

        return act

    return policy


#: Training steps per DQN model: (paper-scale budget, --quick budget). PacMaze, 3 models
#: per agent on 2 CPU cores: 300k steps train in ≈ 41 min an agent, RELINE above both
#: baselines at every n (976/973/350/346 vs rl-baseline 704/694/67/61); at 120k RELINE
#: leads at n = 1, 2 only (955/944/12/12 vs 352/348/15/14).
DQN_STEPS = {"PacMaze-v0": (300_000, 120_000), "KartTrack-v0": (400_000, 150_000)}
PACMAZE_OPTIONS = (("cell_px", 1),)
#: PacMaze's Q-network: two 3×3 stride-2 convolutions (16, 32 filters) and 128 ReLU features
#: over the 21×21×4 frames, computed as patches × kernel (a training step costs ~1.8 ms a model
#: on 2 CPU cores, 3 models vmapped, where XLA's convolution cost ~12; an MLP over the frames,
#: as cheap, did not learn the gates).
PACMAZE_NETWORK = dict(
    torso="cnn", cnn_layers=((16, 3, 2), (32, 3, 2)), cnn_dense=128, cnn_padding="SAME", conv_impl="im2col"
)


def learner(config: RelineConfig) -> Learner:
    """The paper's learning algorithm for ``config.game`` (see the module docstring),
    with ``config.learner_overrides`` applied.

    Raises:
      ValueError: an override names no field of the learner's config.
    """
    learn = _paper_learner(config)
    fields = {f.name for f in dataclasses.fields(learn.config)}
    unknown = sorted(set(dict(config.learner_overrides)) - fields)
    if unknown:
        raise ValueError(f"learner_overrides: {type(learn.config).__name__} has no field(s) {', '.join(unknown)}")
    return dataclasses.replace(learn, config=dataclasses.replace(learn.config, **dict(config.learner_overrides)))


def _paper_learner(config: RelineConfig) -> Learner:
    if config.game in HOST_GAMES:
        from jgtest.methods import reline_host

        dqn_config, hparams = reline_host.paper_dqn(config)
        return Learner(dqn, dqn_config, hparams, lambda env: env, _epsilon_greedy(float(hparams.epsilon_end)))
    if config.game == "CartPoleBugs-v0":
        cem_config = cem.CEMConfig(game=config.game, elite_episodes=11, num_evals=10, eval_episodes=4)
        return Learner(cem, cem_config, cem.CEMHyperparams(), lambda env: env, _sampled)
    full, quick = DQN_STEPS[config.game]
    steps = config.train_steps or (quick if config.quick else full)
    # Lapan anneals ε over 100k steps; a budget under 200k steps anneals over its first half.
    hparams = dqn.LAPAN_HYPERPARAMS.replace(epsilon_anneal_steps=float(min(100_000, steps // 2)))
    if config.game == "PacMaze-v0":
        dqn_config = dqn.lapan_config(
            config.game, game_kwargs=PACMAZE_OPTIONS, total_timesteps=steps, num_evals=10, eval_episodes=2,
            track_coverage=False, **PACMAZE_NETWORK,
        )  # fmt: skip
        wrap = lambda env: FrameStack(GrayscaleResize(env), 4)
    else:
        dqn_config = dqn.lapan_config(
            config.game, hidden_sizes=(128, 128), total_timesteps=steps, num_evals=10, eval_episodes=2, track_coverage=False
        )  # fmt: skip
        wrap = lambda env: FrameStack(env, 4)
    return Learner(dqn, dqn_config, hparams, wrap, _epsilon_greedy(float(hparams.epsilon_end)))


def game_options(config: RelineConfig, **params) -> dict[str, Any]:
    """``jgtest.make`` options of the game as RELINE plays it (recorded in bug records)."""
    options = dict(PACMAZE_OPTIONS) if config.game == "PacMaze-v0" else {}
    if config.game == "KartTrack-v0":
        options.update(theta=config.theta, progress_cap=config.progress_cap)
    return {**options, **dict(config.game_kwargs), **{k: float(v) for k, v in params.items()}}


# ----- training and evaluation ------------------------------------------------------------
def train_models(learn: Learner, env, params, agent: str, keys, on_period=None, checkpoints: Checkpointer | None = None):
    """Trains ``len(keys)`` models vmapped; ``agent`` picks the reward (RELINE's or the game's).

    Returns ``(network, stacked params, per-period metrics)``; ``on_period(i, n)``
    is called after each of the ``num_evals`` periods (one device call each).
    With ``checkpoints``, the models' training state and the metrics so far are
    saved after every period and training continues from the last checkpoint
    there: every period is the same pure function of the state, so a resumed
    training ends where an uninterrupted one ends.
    """
    game = RelineReward(env, "kart" if learn.config.game == "KartTrack-v0" else "bugs") if agent == "reline" else env
    trainer = learn.module.make_agent(learn.config, (learn.wrap(game), params))
    init = jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))
    period = jax.jit(jax.vmap(trainer.period, in_axes=(0, None)))
    state = init(keys, learn.hparams)
    periods = learn.config.num_evals
    shapes = jax.eval_shape(period, state, learn.hparams)[1]
    history = {k: np.zeros((periods, *v.shape), v.dtype) for k, v in shapes.items()}
    done = 0 if checkpoints is None else (checkpoints.latest_step() or 0)
    if done:
        state, history = checkpoints.restore((state, history), done)
        history = jax.tree.map(np.asarray, history)
    for i in range(done, periods):
        state, metrics = period(state, learn.hparams)
        for k, v in jax.device_get(metrics).items():
            history[k][i] = v
        if checkpoints is not None:
            checkpoints.save(i + 1, (state, history))
        if on_period is not None:
            on_period(i + 1, periods)
    return trainer.network, state.params, {k: np.swapaxes(v, 0, 1) for k, v in history.items()}


def evaluate_models(env, params, policy, policy_params, seeds, num_episodes: int, info_keys=()):
    """:func:`jgtest.rollout.play_episodes` for each model (vmapped): ``[N, E, T]`` arrays on the host."""
    max_steps = int(np.asarray(params.max_steps_in_episode))
    play = lambda pp, seed: play_episodes(env, params, policy, pp, seed, num_episodes, max_steps, info_keys)
    return jax.device_get(jax.jit(jax.vmap(play))(policy_params, jnp.asarray(seeds, jnp.int32)))


def eval_seed(config: RelineConfig, agent: str, model: int) -> int:
    """Run seed of ``agent``'s model ``model`` in evaluation (recorded, so traces replay)."""
    return config.seed * 100_000 + 1_000 * (AGENTS.index(agent) + 1) + model


def bugs_found(out) -> np.ndarray:
    """``bool[N, E, k]``: which injected bugs showed in each evaluation episode."""
    return (out["telemetry"].bugs_fired & out["valid"][..., None]).any(axis=2)


def first_records(config: RelineConfig, env, out, agent: str, options: dict, start: float):
    """One :class:`BugRecord` per (model, bug): the first evaluation episode in which it showed."""
    fired = out["telemetry"].bugs_fired & out["valid"][..., None]  # [N, E, T, k]
    records = []
    for m in range(fired.shape[0]):
        for bug in range(fired.shape[3]):
            episodes = np.flatnonzero(fired[m, :, :, bug].any(axis=1))
            if not episodes.size:
                continue
            e = int(episodes[0])
            t = int(np.argmax(fired[m, e, :, bug]))
            records.append(BugRecord(
                kind=env.bug_kinds[bug], game=config.game, bug_id=bug, step=t, episode=0,
                seed=eval_seed(config, agent, m), env_index=e,
                actions=tuple(int(a) for a in out["actions"][m, e, : t + 1]), game_kwargs=options,
                position=tuple(float(p) for p in out["telemetry"].position[m, e, t]),
                wall_s=round(time.perf_counter() - start, 3),
                detail=f"{agent} model {m}, evaluation episode {e}: injected bug {bug} showed",
            ))  # fmt: skip
    return records


def table1(config: RelineConfig, found: dict[str, np.ndarray]) -> dict:
    """Table 1 rows per agent (:func:`jgtest.analysis.at_least_n_table`) with the paper's values."""
    paper = PAPER_TABLE1.get(config.game, {})
    rows = {}
    for agent, bugs in found.items():
        k = bugs.shape[-1]
        table = at_least_n_table(bugs.sum(axis=-1), k)
        for n, row in table.items():
            ref = paper.get(agent, {}).get(n)
            row["paper"] = None if ref is None else dict(zip(("mean", "median", "sd"), ref))
        rows[agent] = {str(n): row for n, row in table.items()}
    return rows


# ----- the kart's threshold and low-FPS analysis --------------------------------------------
def until_stuck(delta_path_done: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``valid`` cut where the kart got stuck (footnote 2 of §4.1.3: "we stopped an episode
    if the agent got stuck against some obstacle"; the paper gives no rule, ours: less than
    ``STUCK_PROGRESS`` path done over ``STUCK_WINDOW`` consecutive steps). The episode ends
    before the first such window, so none of its steps enter the render times."""
    steps = delta_path_done.shape[-1]
    done = np.cumsum(np.where(valid, delta_path_done, 0.0), axis=-1)
    before = np.concatenate([np.zeros(done.shape[:-1] + (1,)), done[..., :-1]], axis=-1)  # path done before step i
    window = done[..., STUCK_WINDOW - 1 :] - before[..., : steps - STUCK_WINDOW + 1]  # steps i .. i + W - 1
    stuck = np.concatenate([window < STUCK_PROGRESS, np.zeros(done.shape[:-1] + (STUCK_WINDOW - 1,), bool)], axis=-1)
    return valid & (np.cumsum(stuck, axis=-1) == 0)


def cell_centres(env, params, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(path_done, centering) at the centre of each kart cell (RELINE's point coordinates)."""
    n_path, n_cent = env.map_shape
    rows, cols = np.divmod(np.asarray(cells), n_cent)
    span = 1.5 * float(params.theta)
    length = float(params.track.length)
    return (rows + 0.5) * length / n_path, -span + (cols + 0.5) * 2 * span / n_cent


def low_fps_analysis(
    num_cells: int, centres: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], threshold_ms: float,
    outs: dict[str, dict], spots: Callable[[np.ndarray, np.ndarray], list[int]] | None = None,
) -> dict:  # fmt: skip
    """Low-FPS points per agent and the comparisons of §4.1.3 (render times at the points).

    Args:
      num_cells: the game's cell count (``telemetry.cell`` range).
      centres: cells → ``(path_done, centering)`` of their centres (the twin's
        :func:`cell_centres`, the real game's bucket centres).
      threshold_ms: ``t``.
      outs: per agent, evaluation episodes (``telemetry``, ``valid``).
      spots: ``(path_done, centering)`` of the points → the known heavy spots
        among them (the twin's :func:`heavy_spots_found`); a real game has none.
    """
    per_agent, visits_all, exceed_all = {}, 0, 0
    for agent, out in outs.items():
        cells, ms, valid = (np.asarray(x) for x in (out["telemetry"].cell, out["telemetry"].frame_time_ms, out["valid"]))
        is_low, visits, confidence = (np.asarray(x) for x in low_fps_points(cells, ms, threshold_ms, num_cells, valid))
        points = np.flatnonzero(is_low)
        at_points = valid & is_low[cells]
        path_done, centering = centres(points)
        per_agent[agent] = {
            "count": int(points.size),
            "visits_mean": float(visits[points].mean()) if points.size else 0.0,
            "visits_per_1000_episodes": float(visits[points].mean() * 1000 / valid[..., 0].size) if points.size else 0.0,
            "confidence": _describe(confidence[points]),
            **({} if spots is None else {"spots_found": spots(path_done, centering)}),
            "points": [{"cell": int(c), "path_done": float(p), "centering": float(x), "visits": int(visits[c]),
                        "confidence": float(confidence[c])} for c, p, x in zip(points, path_done, centering)],
            "render_ms": ms[at_points],
        }  # fmt: skip
        visits_all = visits_all + visits
        exceed_all = exceed_all + np.bincount(cells[valid & (ms > threshold_ms)], minlength=num_cells)
    regular_cells = (visits_all > 0) & (exceed_all == 0)
    regular = np.concatenate([
        np.asarray(o["telemetry"].frame_time_ms)[np.asarray(o["valid"]) & regular_cells[np.asarray(o["telemetry"].cell)]]
        for o in outs.values()
    ])  # fmt: skip
    groups = {"Regular FPS": regular, **{a: r["render_ms"] for a, r in per_agent.items()}}
    agents = list(per_agent)
    at_points = {a: per_agent[a]["render_ms"] for a in agents if len(per_agent[a]["render_ms"])}
    overlap = {f"{a}&{b}": len({p["cell"] for p in per_agent[a]["points"]} & {p["cell"] for p in per_agent[b]["points"]})
               for i, a in enumerate(agents) for b in agents[i + 1:]}  # fmt: skip
    nonempty = {k: v for k, v in groups.items() if len(v)}
    return {
        "per_agent": per_agent,
        "groups": groups,
        "medians_ms": {k: float(np.median(v)) for k, v in nonempty.items()},
        "comparisons": compare_groups(at_points) if len(at_points) >= 2 else [],  # the agents only, as §4.2
        "overlap": overlap,
    }


def heavy_spots_found(params, path_done: np.ndarray, centering: np.ndarray) -> list[int]:
    """Indices of the heavy spots with a low-FPS point within their radius."""
    pos, radius = np.asarray(params.heavy_pos), np.asarray(params.heavy_radius)
    length = float(params.track.length)
    found = []
    for k in range(len(radius)):
        ds = (path_done - pos[k, 0] + length / 2) % length - length / 2
        if np.any(np.hypot(ds, centering - pos[k, 1]) <= radius[k]):
            found.append(k)
    return found


def _describe(values: np.ndarray) -> dict:
    if not len(values):
        return {"mean": None, "median": None, "min": None, "max": None}
    return {"mean": float(np.mean(values)), "median": float(np.median(values)), "min": float(np.min(values)), "max": float(np.max(values))}


# ----- the experiment ---------------------------------------------------------------------
def _random_policy(num_actions: int):
    return lambda params, obs, key: jax.random.randint(key, (), 0, num_actions)


class _Phases:
    """Wall time per phase, and the progress callback ``progress(phase, done, total)``."""

    def __init__(self, progress):
        self.progress = progress or (lambda phase, done, total: None)
        self.wall_s: dict[str, float] = {}

    def run(self, phase: str, fn, periods: int = 1):
        start = time.perf_counter()
        self.progress(phase, 0, periods)
        result = fn(lambda done, total: self.progress(phase, done, total))
        self.progress(phase, periods, periods)
        self.wall_s[phase] = round(time.perf_counter() - start, 2)
        return result


def run(config: RelineConfig, out_dir: str | Path, progress: Callable[[str, int, int], None] | None = None,
        resume: bool = False) -> dict:  # fmt: skip
    """Runs the experiment, writing in ``out_dir``: ``config.json``, ``bugs.jsonl`` (a record
    per agent, model and bug, written as each agent's evaluation ends), ``checkpoints/``,
    ``summary.json``, and ``table1.json`` (toy games) or ``low_fps.json`` and the plots (kart).

    On the on-device games each learning agent's models are checkpointed after every
    training period (``checkpoints/train-AGENT``, :func:`train_models`); ``resume``
    continues their training from there and plays the rest again (the calibration and
    evaluations are pure functions of the trained models and the seeds), writing no
    record twice, so a resumed run ends where an uninterrupted one ends.

    Args:
      config: the experiment.
      out_dir: an existing, writable directory.
      progress: called with ``(phase, done, total)`` as phases advance.
      resume: continue the run in ``out_dir`` (the bridged games skip the phases done instead:
        :func:`jgtest.methods.reline_host.run`, :func:`jgtest.methods.reline_stk.run`).

    Returns:
      The summary written to ``summary.json``.
    """
    if config.game in HOST_GAMES:
        from jgtest.methods import reline_host, reline_stk

        if config.game in KART_GAMES:
            return reline_stk.run(config, out_dir, progress, resume)
        return reline_host.run(config, out_dir, progress, resume)
    out_dir = Path(out_dir)
    start = time.perf_counter()
    env, params = make(config.game, **game_options(config))
    learn = learner(config)
    phases = _Phases(progress)
    (out_dir / "config.json").write_text(json.dumps({"method": "reline", **dataclasses.asdict(config),
                                                     "learner": jsonable(dataclasses.asdict(learn.config))}, indent=2))  # fmt: skip
    models = np.arange(config.models)
    keys = {a: jax.random.split(jax.random.fold_in(jax.random.key(config.seed), i), config.models) for i, a in enumerate(AGENTS)}
    summary: dict[str, Any] = {"method": "reline", "game": config.game, "models": config.models,
                               "eval_episodes": config.eval_episodes, "learner": type(learn.config).__name__}  # fmt: skip
    trained, curves, outs = {}, {}, {}

    def train(agent, train_params):
        def go(report):
            where = out_dir / "checkpoints" / f"train-{agent}"
            with Checkpointer(where, config_fingerprint({"reline": config, "agent": agent})) as checkpoints:
                return train_models(learn, env, train_params, agent, keys[agent], report, checkpoints)

        network, pp, history = phases.run(f"train {agent}", go, learn.config.num_evals)
        trained[agent] = (learn.policy(network), pp)
        curves[agent] = {k: np.asarray(v).mean(axis=0).tolist() for k, v in history.items() if k.endswith("_mean")}

    def evaluate(agent, eval_params, writer, options):
        policy, pp = trained.get(agent) or (_random_policy(env.num_actions), jnp.zeros(config.models))
        eval_env = env if agent == "random" else learn.wrap(env)
        seeds = [eval_seed(config, agent, m) for m in models]
        outs[agent] = phases.run(f"evaluate {agent}", lambda _: evaluate_models(
            eval_env, eval_params, policy, pp, seeds, config.eval_episodes))  # fmt: skip
        for record in first_records(config, env, outs[agent], agent, options, start):
            if record.detail not in written:  # written before a resumed run was stopped
                writer.write(record)

    if not resume:
        shutil.rmtree(out_dir / "checkpoints", ignore_errors=True)
    written = {r.detail for r in records_to_resume(out_dir, resume)}
    with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
        if config.game != "KartTrack-v0":
            options = game_options(config)
            for agent in config.agents:
                if agent != "random":
                    train(agent, params)
                evaluate(agent, params, writer, options)
            rows = table1(config, {a: bugs_found(o) for a, o in outs.items()})
            (out_dir / "table1.json").write_text(json.dumps(jsonable(rows), indent=2))
            summary["table1"] = rows
        else:
            summary.update(_kart(config, env, params, learn, phases, train, evaluate, trained, outs, writer, out_dir))
    summary.update(training_curves=curves, phases_s=phases.wall_s, wall_s=round(time.perf_counter() - start, 2))
    (out_dir / "summary.json").write_text(json.dumps(jsonable(summary), indent=2))
    return summary


def _kart(config, env, params, learn, phases, train, evaluate, trained, outs, writer, out_dir) -> dict:
    """The kart's part of :func:`run`: calibration, RELINE against ``t``, low-FPS analysis, plots."""
    loaded = params.replace(load_scale=config.train_load_scale, load_offset_ms=config.train_load_offset_ms)
    result: dict[str, Any] = {}
    threshold = float(params.threshold_ms)
    if "rl-baseline" in config.agents:
        train("rl-baseline", loaded)
        policy, pp = trained["rl-baseline"]
        seeds = lambda offset: [eval_seed(config, "rl-baseline", m) + offset for m in range(config.models)]
        per_model = lambda n: -(-n // config.models)  # at least n episodes in all

        def calibrate(_):
            base = evaluate_models(learn.wrap(env), params, policy, pp, seeds(500), per_model(config.threshold_episodes), ("delta_path_done",))
            warm = evaluate_models(learn.wrap(env), loaded, policy, pp, seeds(700), per_model(config.warmup_episodes))
            base_ms = base["telemetry"].frame_time_ms[until_stuck(base["delta_path_done"], base["valid"])]
            warm_ms = warm["telemetry"].frame_time_ms[warm["valid"]]
            return base_ms, warm_ms

        base_ms, warm_ms = phases.run("calibrate threshold", calibrate)
        t_b = reline_threshold(base_ms)
        threshold = reline_threshold(base_ms, warm_ms)
        result["threshold"] = {"t_b_ms": t_b, "delta_ms": threshold - t_b, "t_ms": threshold,
                               "baseline_render_times": int(base_ms.size), "warmup_render_times": int(warm_ms.size),
                               "paper": PAPER_KART}  # fmt: skip
    in_force = loaded.replace(threshold_ms=threshold)
    options = game_options(config, threshold_ms=threshold, load_scale=config.train_load_scale, load_offset_ms=config.train_load_offset_ms)
    if "reline" in config.agents:
        train("reline", in_force)
    for agent in config.agents:
        evaluate(agent, in_force, writer, options)
    analysis = phases.run("low-FPS analysis", lambda _: low_fps_analysis(
        env.num_cells, lambda cells: cell_centres(env, params, cells), threshold, outs,
        lambda path_done, centering: heavy_spots_found(params, path_done, centering)))  # fmt: skip
    if "rl-baseline" in outs:
        result["replay_reliability"] = phases.run("replay check", lambda _: _replay_check(config, env, in_force, outs["rl-baseline"]))
    heavy_spots = [{"index": k, "path_done": float(p[0]), "centering": float(p[1]), "on_racing_line": bool(abs(p[1]) <= float(params.half_width))}
                   for k, p in enumerate(np.asarray(params.heavy_pos))]  # fmt: skip
    low_fps = write_low_fps(
        config, analysis, threshold, out_dir, float(params.half_width), float(params.track.length),
        heavy_spots=heavy_spots, replay_reliability=result.get("replay_reliability"),
    )  # fmt: skip
    result["low_fps"] = {a: {"count": r["count"], "spots_found": r["spots_found"], "visits_per_1000_episodes": r["visits_per_1000_episodes"]}
                         for a, r in low_fps["per_agent"].items()}  # fmt: skip
    return result


def write_low_fps(config: RelineConfig, analysis: dict, threshold: float, out_dir: Path, road_half_width: float,
                  path_length: float, **extra) -> dict:  # fmt: skip
    """Plots the low-FPS analysis (render-time violins, the points on the track) and writes
    ``low_fps.json`` (the points per agent, medians, comparisons, overlap, ``extra``, the paper's
    figures); returns what it wrote."""
    from jgtest.report.plots import position_plot, violin_plot

    points = {a: (np.array([p["path_done"] for p in r["points"]]), np.array([p["centering"] for p in r["points"]]))
              for a, r in analysis["per_agent"].items()}  # fmt: skip
    plots = {
        "violin": str(violin_plot(analysis["groups"], out_dir / "render_times.png", threshold_ms=threshold,
                                  title=f"{config.game}: render times at low-FPS points")),
        "positions": str(position_plot(points, out_dir / "low_fps_points.png", theta=config.theta,
                                       road_half_width=road_half_width, path_length=path_length)),
    }  # fmt: skip
    low_fps = {
        "threshold_ms": threshold,
        "per_agent": {a: {k: v for k, v in r.items() if k != "render_ms"} for a, r in analysis["per_agent"].items()},
        "medians_ms": analysis["medians_ms"], "comparisons": analysis["comparisons"], "overlap": analysis["overlap"],
        **extra, "plots": plots, "paper": PAPER_KART,
    }  # fmt: skip
    (out_dir / "low_fps.json").write_text(json.dumps(jsonable(low_fps), indent=2))
    return low_fps


def _replay_check(config: RelineConfig, env, params, out) -> dict:
    """The constant-action reliability check (§4.1.3): one rl-baseline episode's actions
    (a completed lap if there is one) replayed ``config.replays`` times with fresh noise;
    pairwise Spearman correlations of the render-time series, Holm-adjusted."""
    lengths = out["valid"][0].sum(axis=-1)
    laps = np.flatnonzero(lengths < out["valid"].shape[-1])
    episode = int(laps[0]) if laps.size else int(np.argmax(lengths))
    actions = jnp.asarray(out["actions"][0, episode, : lengths[episode]], jnp.int32)
    seeds = jnp.arange(config.replays, dtype=jnp.int32) + config.seed * 100_000 + 90_000
    telemetry, _, _ = jax.vmap(lambda s: replay_trace(env, params, s, 0, 0, actions))(seeds)
    return {**replay_reliability(np.asarray(telemetry.frame_time_ms)), "episode_steps": int(lengths[episode]), "lap_completed": bool(laps.size)}
