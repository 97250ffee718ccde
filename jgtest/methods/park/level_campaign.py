"""Inspector and the random agent exploring a real level, with object tests (PPGTA §V-C, §VI-A).

The park's comparison on a Doom level (``vizdoom:freedoom2/MAP01``) or a Gymnasium game reporting
the player and the things in view (``gym:ENV_ID``), through the host loop, testing things with
:mod:`jgtest.methods.park.level_walk`. Measured: the walkable area covered (the paper's pathway
coverage, §VI-A) and things tested.

* chosen: Inspector sees 4 grayscale frames of 60 × 80 (:data:`PIPELINE`), the level RELINE's;
* chosen: no resume, because a bridged game's state lives in its process.
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jgtest import host_loop
from jgtest.agents import ppo
from jgtest.envs.wrappers import ObservationPipeline
from jgtest.errors import BadInput, ResumeRefused
from jgtest.files import jsonable, write_json_atomically
from jgtest.methods.park.inspector import (
    INSPECTOR_CNN,
    INSPECTOR_RND,
    INSPECTOR_RND_UPDATES,
    PAPER_PPO,
    inspector_ppo,
)
from jgtest.methods.park.level_walk import LabelWalk, LabelWalkSettings
from jgtest.novelty import RND, RNDConfig
from jgtest.records import BugRecord, BugRecordWriter
from jgtest.report.level_maps import level_map
from jgtest.run_dir import begin_campaign
from jgtest.seeds import check_seed
from jgtest.types import Progress, Transition

AGENTS = ("inspector", "random")
#: Inspector's view of the level: 4 stacked grayscale frames of 60 × 80 (the level RELINE's DQN's).
PIPELINE = ObservationPipeline(size=(60, 80), num_frames=4)


@dataclasses.dataclass(frozen=True)
class LevelExplorationConfig:
    """One campaign on a level (:func:`run`).

    Attributes:
      game: a level with a map (``vizdoom:freedoom2/MAP01``).
      agent: ``"inspector"`` or ``"random"``.
      episodes: episodes in all (the paper's 45).
      num_envs: games played side by side.
      episode_steps: the episode cap (the paper's 2,000 steps: 229 s of Doom's game time at 4 tics a
        step).
      rollout_steps: steps of the ``num_envs`` games between PPO updates.
      seed: the campaign's seed (episode starts, networks, actions).
      walk: the object tests' settings.
      rnd, rnd_updates, cnn_layers, cnn_dense, hparams: Inspector's learner, as on the park.
      game_kwargs: the level's options (``assertions``, ``cell_size`` …), kept in the records.
    """

    game: str
    agent: str = "inspector"
    episodes: int = 45
    num_envs: int = 5
    episode_steps: int = 2000
    rollout_steps: int = 200
    seed: int = 0
    walk: LabelWalkSettings = LabelWalkSettings()
    rnd: RNDConfig = INSPECTOR_RND
    rnd_updates: int = INSPECTOR_RND_UPDATES
    cnn_layers: tuple[tuple[int, int, int], ...] = INSPECTOR_CNN
    cnn_dense: int = 256
    hparams: ppo.PPOHyperparams = PAPER_PPO
    game_kwargs: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        check_seed(self.seed)
        if self.agent not in AGENTS:
            raise BadInput(f"agent must be one of {', '.join(AGENTS)}, got {self.agent!r}")
        for name in ("episodes", "num_envs", "episode_steps", "rollout_steps", "rnd_updates"):
            if getattr(self, name) < 1:
                raise BadInput(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.num_envs * self.rollout_steps > self.rnd.buffer_size:
            raise BadInput(
                f"a rollout of {self.num_envs} × {self.rollout_steps} frames exceeds RND's buffer "
                f"of {self.rnd.buffer_size}"
            )


class _Inspector:
    """Inspector's jitted pieces on the host game's spaces: ``act`` and ``learn`` (a PPO update on
    the rollout's RND rewards, then the predictor's steps)."""

    def __init__(self, config: LevelExplorationConfig, game):
        c = self.config = config
        self.rnd = RND(c.rnd)
        self.ppo = ppo.make_agent(
            inspector_ppo(
                c, c.game, max(c.episodes * c.episode_steps, c.num_envs * c.rollout_steps)
            ),
            game=host_loop.spec_game(game, PIPELINE),
        )
        self.act = jax.jit(lambda params, obs, key: self.ppo.act(params, obs, key))

    def init(self, key, obs):
        k_ppo, k_rnd = jax.random.split(key)
        return {
            "ppo": jax.jit(self.ppo.init_learner)(k_ppo, obs, self.config.hparams).replace(
                obs=None
            ),
            "rnd": jax.jit(self.rnd.init)(k_rnd),
        }

    @partial(jax.jit, static_argnums=0)
    def learn(self, learner: dict, traj: Transition, screens, key) -> tuple[dict, jax.Array]:
        k_ppo, k_rnd = jax.random.split(key)
        inputs = self.rnd.preprocess(screens)  # [T, N, 64, 64, 3]: the screens after each step
        intrinsic = self.rnd.reward(learner["rnd"], inputs)
        ppo_state, _ = self.ppo.update(
            learner["ppo"], traj.replace(reward=intrinsic), k_ppo, self.config.hparams
        )
        rnd_state = self.rnd.observe(learner["rnd"], inputs)
        rnd_state, _ = jax.lax.scan(
            lambda s, k: self.rnd.update(s, k),
            rnd_state,
            jax.random.split(k_rnd, self.config.rnd_updates),
        )
        return {"ppo": ppo_state, "rnd": rnd_state}, intrinsic.mean()


def run(
    config: LevelExplorationConfig,
    out_dir: str | Path,
    progress: Progress | None = None,
    resume: bool = False,
) -> dict:
    """Runs the campaign, writing ``config.json``, ``bugs.jsonl``, ``summary.json`` and
    ``coverage.png`` in ``out_dir``; ``progress(done, episodes, tested)`` as episodes end.

    Inspector learns as on the park: PPO on the frames (:data:`PIPELINE`) with the RND error of the
    RGB screen resized to 64 × 64 as its only reward (over the error's running standard deviation);
    every ``rollout_steps`` steps of its ``num_envs`` games one PPO update, then ``rnd_updates``
    predictor steps. The random agent plays uniform actions. Both run the walk's tests, its actions
    replacing the explorer's (whose transition keeps its own action), the games sharing the memory
    of things tested. A game whose player dies starts its next episode at once (``autoreset``), that
    step a terminal transition in PPO's rollout. After every episode that ends: the share of the
    level's walkable cells (:attr:`envs_bridge.vizdoom.VizDoomEnv.walkable`; every cell on a game
    without a map) the games entered so far, and the things tested. The bridge's oracles (crash,
    stuck, Doom's and the user's assertions) are written to ``bugs.jsonl`` as each first shows, with
    the episode's seed and actions, for ``jgtest replay``.

    Raises:
      ResumeRefused: ``resume`` (the game's state is in its process).
      BadInput: a game without the walk's buttons, or reporting no objects or angle.
    """
    if resume:
        raise ResumeRefused(
            f"a campaign on {config.game} cannot resume (the game's state is in its process): run "
            "it again"
        )
    out_dir, start = Path(out_dir), time.perf_counter()
    options = {**dict(config.game_kwargs), "max_steps_in_episode": config.episode_steps}
    try:
        game = host_loop.host_game(
            config.game, num_envs=config.num_envs, seed=config.seed, **options
        )
    except (ValueError, TypeError) as error:
        raise BadInput(str(error)) from None
    with game:
        try:
            walk = LabelWalk(config.num_envs, game.action_names, game.frame_shape[1], config.walk)
        except ValueError as error:
            raise BadInput(str(error)) from None
        begin_campaign(
            out_dir, {"method": config.agent, **jsonable(dataclasses.asdict(config))}, None, False
        )
        with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
            played = _play(config, game, walk, options, writer, start, progress)
        summary = _summary(config, game, walk, played, time.perf_counter() - start)
        has_map = getattr(game, "walkable", None) is not None
        covered = (
            (
                played["visited"].reshape(game.map_shape) & game.walkable.reshape(game.map_shape),
                game.bounds,
                game.cell_size,
            )
            if has_map
            else None
        )
        summary["plot"] = str(
            level_map(
                game.walls if has_map else (),
                out_dir / "coverage.png",
                covered=covered,
                traces={config.agent: played["trace"]},
                title=f"{config.game}\n{config.agent}, "
                f"{summary['coverage_walkable']:.1%} of the walkable area",
            )
        )
    write_json_atomically(out_dir / "summary.json", summary)
    return summary


def _play(config, game, walk: LabelWalk, options, writer, start, progress) -> dict:
    """The campaign's loop (:func:`run`): curves per ended episode, the cells visited, a trace."""
    n = config.num_envs
    k_init, k_act, k_learn = jax.random.split(jax.random.key(config.seed), 3)
    rng = np.random.default_rng(config.seed)
    inspector = _Inspector(config, game) if config.agent == "inspector" else None
    begin, push = jax.jit(PIPELINE.reset), jax.jit(PIPELINE.push)
    frames, info = game.reset(config.seed)
    lacking = [key for key in ("objects", "angle") if key not in info]
    if lacking:
        raise BadInput(
            f"{config.game} reports no {' or '.join(lacking)}, which the 360° walk reads: a level "
            "of a WAD reports them; "
            "a Gymnasium game's telemetry function returns and declares them (provides = "
            "('position', 'angle', 'objects'))"
        )
    walkable = _walkable(game)
    obs = begin(frames)
    learner = inspector.init(k_init, obs) if inspector else None
    visited = np.zeros(game.num_cells, bool)
    visited[info["telemetry"].cell] = True
    history, seen = host_loop.StepHistory(n), np.zeros(game.num_bugs, bool)
    curves = {"coverage_walkable": [], "tested": [], "tested_succeeded": []}
    trace, novelty, ended, updates = [], [], 0, 0

    def on_bug(fields):
        kind = game.bug_kinds[fields["bug_id"]]
        writer.write(
            BugRecord(
                kind=kind,
                game=config.game,
                game_kwargs=options,
                wall_s=round(time.perf_counter() - start, 3),
                detail=f"{config.agent} exploring: {game.bug_names[fields['bug_id']]}",
                **fields,
            )
        )

    while ended < config.episodes:
        steps = []
        for t in range(config.rollout_steps):
            k_step = jax.random.fold_in(k_act, updates * config.rollout_steps + t)
            if inspector:
                chosen, log_prob, value = (
                    np.asarray(x) for x in inspector.act(learner["ppo"].params, obs, k_step)
                )
            else:
                chosen, log_prob, value = (
                    rng.integers(0, game.num_actions, n),
                    np.zeros(n, np.float32),
                    np.zeros(n, np.float32),
                )
            action = walk.actions(chosen, info["objects"], info["angle"])
            frames, _, terminated, truncated, info = game.step(action)
            fresh, tel = info["autoreset"], info["telemetry"]
            live = ~fresh
            next_obs = push(obs, frames, fresh)
            walk.observe(info["objects"], info["angle"], fresh)
            visited[tel.cell[live]] = True
            history.append(action, tel, {}, live)
            host_loop.report_first_bugs(tel, live, seen, history, config.seed, on_bug)
            if t % 4 == 0:
                trace.append(np.where(live[:, None], tel.position, np.nan))
            if inspector:
                steps.append(
                    (
                        obs,
                        chosen,
                        terminated | fresh,
                        truncated & live,
                        next_obs,
                        value,
                        log_prob,
                        frames,
                    )
                )
            obs = next_obs
            for i in np.flatnonzero(live & (terminated | truncated)):
                history.end_episode(i)
                ended += 1
                outcomes = list(walk.outcomes.values())
                curves["coverage_walkable"].append(
                    float((visited & walkable).sum() / walkable.sum())
                )
                curves["tested"].append(
                    sum(1 for oid in walk.outcomes if oid not in walk.target[walk.testing()])
                )
                curves["tested_succeeded"].append(sum(ok for _, ok in outcomes))
                if progress is not None:
                    progress(min(ended, config.episodes), config.episodes, curves["tested"][-1])
            if ended >= config.episodes:
                break
        if inspector and len(steps) == config.rollout_steps:
            o, a, term, trunc, nxt, v, lp, screens = (np.stack(x) for x in zip(*steps))
            traj = Transition(
                obs=o,
                action=a,
                reward=np.zeros(a.shape, np.float32),
                terminated=term,
                truncated=trunc,
                next_obs=nxt,
                value=v,
                log_prob=lp,
            )
            learner, mean_novelty = inspector.learn(
                learner, traj, screens, jax.random.fold_in(k_learn, updates)
            )
            novelty.append(float(mean_novelty))
        updates += 1
    by_game = np.asarray(trace).transpose(
        1, 0, 2
    )  # [N, T, 2]: each game's trace, a gap between games
    trace = np.concatenate([np.vstack([positions, [[np.nan, np.nan]]]) for positions in by_game])
    return {
        "curves": curves,
        "visited": visited,
        "trace": trace,
        "novelty": novelty,
        "updates": updates if inspector else 0,
    }


def _walkable(game) -> np.ndarray:
    """``bool[num_cells]``: the cells a player can enter: a level's walkable area, or every cell of
    a game without a map."""
    walkable = getattr(game, "walkable", None)
    return (
        np.ones(game.num_cells, bool)
        if walkable is None
        else np.asarray(walkable, bool).reshape(-1)
    )


def _summary(config, game, walk: LabelWalk, played: dict, wall_s: float) -> dict:
    curves = {k: v[: config.episodes] for k, v in played["curves"].items()}
    tested = {
        int(oid): {"name": name, "succeeded": ok} for oid, (name, ok) in walk.outcomes.items()
    }
    return {
        "method": config.agent,
        "game": config.game,
        "episodes": config.episodes,
        "seed": config.seed,
        "episode_steps": config.episode_steps,
        "coverage_walkable": curves["coverage_walkable"][-1],
        "walkable_cells": int(_walkable(game).sum()),
        "tested": curves["tested"][-1],
        "tested_succeeded": curves["tested_succeeded"][-1],
        "curves": curves,
        "tests": tested,
        "ppo_updates": played["updates"],
        "novelty_per_update": played["novelty"],
        "wall_s": round(wall_s, 1),
    }
