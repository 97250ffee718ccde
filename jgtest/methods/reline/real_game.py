"""RELINE's kart phases (§4.1.3) on one open real game, whatever the game.

:func:`run_real_game` trains rl-baseline, calibrates ``t = t_b + δ``, trains RELINE, evaluates
every agent, finds the low-FPS points and runs the replay check (Fig. 3); a :class:`GameTerms`
holds what differs between games (:mod:`~jgtest.methods.reline.stk`,
:mod:`~jgtest.methods.reline.level`), and :class:`RunProgress` keeps each phase for ``resume``.

* chosen: the learning agents train on through the evaluation, because the paper "train[s]
  both agents for additional 1,000 episodes" to collect the render times (§4.1.3).
"""

from __future__ import annotations

import abc
import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jgtest import host_loop
from jgtest.agents import dqn
from jgtest.analysis import replay_reliability
from jgtest.checkpoint import Checkpointer, config_fingerprint
from jgtest.envs.wrappers import ObservationPipeline
from jgtest.files import jsonable, write_json_atomically
from jgtest.methods.reline.analysis import low_fps_analysis, slowest_areas, write_low_fps
from jgtest.methods.reline.config import AGENTS, RelineConfig, eval_seed, protocol
from jgtest.methods.reline.learners import learner, random_policy
from jgtest.methods.reline.phases import Phases
from jgtest.oracles import low_fps_points, reline_threshold
from jgtest.records import BugRecord, BugRecordWriter, records_to_resume
from jgtest.report.plots import section_plot
from jgtest.rewards import FINISH_FACTOR
from jgtest.run_dir import begin_campaign
from jgtest.types import Telemetry

#: ``--quick``'s caps on the episode counts (the paper's: 300, 100, 1,000 and 300).
QUICK_EPISODES = {"threshold_episodes": 10, "warmup_episodes": 4, "eval_episodes": 6, "replays": 6}


def settings(config: RelineConfig) -> dict[str, int]:
    """The episode counts of the run: ``config``'s, capped by :data:`QUICK_EPISODES` under
    ``quick``."""
    counts = {name: getattr(config, name) for name in QUICK_EPISODES}
    return {k: min(v, QUICK_EPISODES[k]) for k, v in counts.items()} if config.quick else counts


class HostRelineReward(abc.ABC):
    """RELINE's reward over a host game's steps (§4.1.2): ``r = r_g + r_p``, and
    ``FINISH_FACTOR · Σ r_p`` (10 ×) on the step that finishes the game's course (the kart's lap, a
    level's exit: ``finished``). The running ``Σ r_p`` restarts on each game's autoreset step,
    whose reward is 0 (it is not learned from). ``threshold_ms`` may be changed between steps (the
    warm-up uses ``t_b``). Call signature: :func:`jgtest.host_loop.train_dqn`'s ``reward``.
    """

    def __init__(self, num_envs: int, threshold_ms: float):
        self.threshold_ms = float(threshold_ms)
        self.performance_return = np.zeros(num_envs, np.float32)

    def reset(self) -> None:
        """Starts every game's ``Σ r_p`` afresh (a new phase resets the game without an autoreset
        step)."""
        self.performance_return[:] = 0.0

    @abc.abstractmethod
    def terms(self, game_reward, terminated, info) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(r_g, r_p, finished)`` of each game's step."""

    def __call__(self, game_reward, terminated, info) -> np.ndarray:
        fresh = info["autoreset"]
        r_g, r_p, finished = (np.asarray(x) for x in self.terms(game_reward, terminated, info))
        self.performance_return = np.where(fresh, 0.0, self.performance_return + r_p).astype(
            np.float32
        )
        reward = r_g + r_p + np.where(finished, FINISH_FACTOR * self.performance_return, 0.0)
        return np.where(fresh, 0.0, reward).astype(np.float32)


class GameTerms(abc.ABC):
    """What RELINE's campaign (:func:`run_real_game`) needs to know of one real game, made over the
    open game.

    Attributes:
      pipeline: the DQN's observation (grayscale, size, frames stacked).
      info_keys: the entries of the game's ``info`` the evaluation keeps (``terms`` read them).
      section_key: the ``info`` entry (or ``"cell"``, the telemetry's) the replay check's sections
        are made of.
      paper: the paper's figures to report beside ours.
    """

    pipeline: ObservationPipeline
    info_keys: tuple[str, ...] = ()
    section_key: str = "cell"
    paper: dict | None = None

    def __init__(self, config: RelineConfig, game):
        self.config, self.game = config, game

    @abc.abstractmethod
    def reward(self, threshold_ms: float) -> HostRelineReward:
        """RELINE's reward against ``threshold_ms``."""

    @abc.abstractmethod
    def calibration_steps(self, out: dict) -> np.ndarray:
        """``bool[E, T]``: the steps of rl-baseline's calibration episodes ``out`` whose render
        times calibrate ``t_b`` (each episode cut where the agent got stuck, footnote 2 of
        §4.1.3)."""

    @abc.abstractmethod
    def coordinates(self, cells: np.ndarray) -> dict[str, np.ndarray]:
        """Where each cell's centre is, by named coordinate (a point's place in
        ``low_fps.json``)."""

    @abc.abstractmethod
    def replay_episode(self, out: dict) -> tuple[int, bool]:
        """``(episode, completed)``: which of rl-baseline's evaluation episodes ``out`` the replay
        check replays, and whether it completed the course."""

    @abc.abstractmethod
    def sections(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
        """``(section [R, T], starts [S], x label)``: the replay check's section of each replayed
        step (from its ``section_key`` values ``[R, T]``) and where each section starts on the
        plot."""

    @abc.abstractmethod
    def plot_points(self, points: dict[str, list[dict]], path: Path, outs: dict[str, dict]) -> Path:
        """The agents' low-FPS points (``low_fps.json``'s lists) drawn over the game's course (and,
        where the game has a map, the evaluation episodes ``outs`` that found them)."""

    def observe(self, out: dict) -> None:  # noqa: B027 -- optional: most games' terms learn nothing from episodes
        """Reads an evaluation's episodes ``out`` before its points are placed (a game whose cells
        have no fixed place: where its episodes went)."""

    def describe(self, where: dict[str, float]) -> str:
        """A point's place in words (a record's detail)."""
        return ", ".join(f"{name} {value:.0f}" for name, value in where.items())

    def extra(self) -> dict:
        """What ``low_fps.json`` also says of the game (its geometry)."""
        return {}


def run_real_game(
    config: RelineConfig,
    make_terms: Callable[[RelineConfig, Any], GameTerms],
    out_dir: str | Path,
    progress=None,
    resume: bool = False,
    game_options: dict | None = None,
) -> dict:
    """Runs the campaign on ``config.game``, with the terms ``make_terms(config, game)`` gives,
    writing in ``out_dir``: ``config.json``, ``bugs.jsonl`` (low-FPS points, as each agent's
    evaluation ends), ``low_fps.json``, the plots (``render_times.png``, ``low_fps_points.png``,
    ``sections.png``), ``summary.json``, and what ``resume`` continues from (``progress.json``,
    ``checkpoints/``, ``measurements/``; :class:`RunProgress`). Its phases:

    1. **rl-baseline** learns on the game reward ``r_g`` alone (``terms.reward(∞)``: no frame is
       over an infinite threshold, so no ``r_p`` and no finish bonus).
    2. **Calibration** (§4.1.3): the trained rl-baseline plays ``threshold_episodes`` episodes, cut
       where it got stuck (footnote 2, ``terms.calibration_steps``), and ``t_b = mean + 5 sd`` of
       their render times (all their steps if it was stuck from the first: ``stuck_cut_skipped``,
       an under-trained rl-baseline of a quick run). RELINE's training then starts with
       ``warmup_episodes`` episodes in which rl-baseline picks the actions while RELINE's network
       learns: ``δ = max(Q1ᵗʳ − Q1, Q3ᵗʳ − Q3)`` and ``t = t_b + δ``
       (:func:`jgtest.oracles.reline_threshold`); the warm-up's rewards use ``t_b`` (``t`` is not
       known yet).
    3. **RELINE** learns on ``r_g + r_p`` and the finish bonus against ``t`` (``terms.reward``), up
       to the same budget of steps as rl-baseline (the warm-up counts).
    4. **Evaluation**: each agent plays ``eval_episodes`` episodes, the learning agents training on
       their own rewards meanwhile (the paper's "we train both agents for additional 1,000
       episodes and collect the frame render times": the render times are taken under the
       training load ``δ`` allows for); the random agent does not learn. Low-FPS points are the
       coverage cells whose render time exceeded ``t`` in more than half their visits, with their
       confidence (:func:`jgtest.oracles.low_fps_points`); each is written as a ``low_fps`` bug
       record when its agent's evaluation ends (a point needs all its visits): the trace of its
       first visit over ``t``.
    5. **Replay check** (§4.1.3, Fig. 3): an rl-baseline evaluation episode
       (``terms.replay_episode``) is replayed ``replays`` times from its seed and actions: the
       pairwise Spearman correlations of the per-step render times (the paper's check: ρ min
       0.77, median 0.91 over 300), and per section (``terms.sections``: the kart's stretches of
       the lap, a level's cells) each replay's mean render time, the sections' correlation
       from replay to replay and each one's median (``sections.png``).

    Beside the points, ``low_fps.json`` lists the slowest areas
    (:func:`~jgtest.methods.reline.analysis.slowest_areas`).
    """
    out_dir, start = Path(out_dir), time.perf_counter()
    phases = Phases(progress)
    learn = learner(config)
    counts = settings(config)
    begin_campaign(
        out_dir,
        {
            "method": "reline",
            **dataclasses.asdict(config),
            "episodes": counts,
            "learner": jsonable(dataclasses.asdict(learn.config)),
        },
        None,
        resume,
    )
    key = jax.random.key(config.seed)
    train_seed = config.seed * 100_000 + 50_000
    summary: dict[str, Any] = {
        "method": "reline",
        "game": config.game,
        "episodes": counts,
        "train_steps": learn.config.total_timesteps,
        "protocol": protocol(config),
    }
    done = RunProgress(out_dir, config, resume)
    options = {**dict(config.game_kwargs), **(game_options or {})}
    with (
        host_loop.host_game(config.game, seed=train_seed, **options) as game,
        BugRecordWriter(out_dir / "bugs.jsonl") as writer,
    ):
        terms = make_terms(config, game)
        campaign = _Campaign(config, learn, terms, phases, writer, start, counts, done, options)
        threshold = campaign.train(key, train_seed)
        outs = {agent: campaign.evaluate(agent, threshold) for agent in config.agents}
        analysis = phases.run(
            "low-FPS analysis",
            lambda _: low_fps_analysis(game.num_cells, terms.coordinates, threshold["t_ms"], outs),
        )
        replay = None
        if "rl-baseline" in outs:
            replay = done.figures("replay check") or done.finish(
                "replay check",
                phases.run(
                    "replay check",
                    lambda _: campaign.replay_sections(
                        outs["rl-baseline"], threshold["t_ms"], out_dir
                    ),
                ),
            )
        slowest = slowest_areas(game.num_cells, terms.coordinates, threshold["t_ms"], outs)
        low_fps = write_low_fps(
            config,
            analysis,
            threshold["t_ms"],
            out_dir,
            lambda points, path: terms.plot_points(points, path, outs),
            paper=terms.paper,
            replay_reliability=replay,
            slowest_areas=slowest,
            **terms.extra(),
        )
    summary.update(
        threshold=threshold,
        training=campaign.curves,
        low_fps={
            a: {
                "count": r["count"],
                "visits_per_1000_episodes": r["visits_per_1000_episodes"],
                "slow_steps_share": r["slow_steps_share"],
                "confidence_median": r["confidence"]["median"],
            }
            for a, r in low_fps["per_agent"].items()
        },
        medians_ms=low_fps["medians_ms"],
        slowest_areas=slowest[:3],
        replay_reliability=replay,
        phases_s=phases.wall_s,
        resumed_phases=done.resumed,
        wall_s=round(time.perf_counter() - start, 2),
        paper=terms.paper,
    )
    write_json_atomically(out_dir / "summary.json", summary)
    return summary


class RunProgress:
    """The phases a run has finished, and their results, for ``resume``.

    Each phase's result is saved as the phase ends: a learner's whole DQN state with orbax
    (``checkpoints/AGENT``: networks, Adam, replay buffer, counters, key; the evaluation trains on
    from it), the measurements later phases read as ``measurements/NAME.npz`` (the calibration's
    render times, each evaluation's episodes) and the phase's figures in ``progress.json``; a
    resumed run skips every phase done. A phase a kill cut short is run again from its start; its
    records already written stay, and one with the same detail is not written twice. Render times
    are measured, not computed, so a resumed run is a continuation, not a bit-for-bit copy of an
    uninterrupted one.

    ``figures(phase)`` is a finished phase's JSON figures (``None`` when it is
    not finished, or the run does not resume); ``finish(phase, figures)``
    records them, after the phase's learner and measurements are saved
    (``save_learner``, ``save_measurements``), so a phase is finished only
    when all it left is on disk. Without ``resume`` a run starts afresh:
    what an earlier run left is removed.
    """

    def __init__(self, out_dir: Path, config: RelineConfig, resume: bool):
        self.path, self.checkpoints, self.measurements = (
            out_dir / "progress.json",
            out_dir / "checkpoints",
            out_dir / "measurements",
        )
        if not resume:
            self.path.unlink(missing_ok=True)
            shutil.rmtree(self.checkpoints, ignore_errors=True)
            shutil.rmtree(self.measurements, ignore_errors=True)
        self.done = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.resumed = sorted(self.done)
        self.fingerprint = config_fingerprint(config)
        self.written = {r.detail for r in records_to_resume(out_dir, resume)}

    def figures(self, phase: str):
        return self.done.get(phase)

    def finish(self, phase: str, figures):
        """Marks ``phase`` finished with its ``figures`` (written atomically); returns them."""
        self.done[phase] = jsonable(figures)
        write_json_atomically(self.path, self.done)
        return figures

    def save_learner(self, agent: str, state) -> None:
        shutil.rmtree(
            self.checkpoints / agent, ignore_errors=True
        )  # a phase run again replaces what a kill left
        with Checkpointer(self.checkpoints / agent, self.fingerprint, loop=False) as ckpt:
            ckpt.save(1, state)

    def learner(self, agent: str, state_like):
        with Checkpointer(self.checkpoints / agent, self.fingerprint, loop=False) as ckpt:
            return ckpt.restore(state_like)

    def save_measurements(self, name: str, arrays: dict) -> None:
        """``arrays`` (host arrays, a :class:`Telemetry` under ``"telemetry"``) as
        ``measurements/NAME.npz``."""
        flat = {k: v for k, v in arrays.items() if k != "telemetry"}
        if "telemetry" in arrays:
            flat.update(
                {
                    f"telemetry/{f.name}": getattr(arrays["telemetry"], f.name)
                    for f in dataclasses.fields(Telemetry)
                }
            )
        self.measurements.mkdir(parents=True, exist_ok=True)
        with open(self.measurements / f"{name}.npz.tmp", "wb") as f:
            np.savez(f, **flat)
        os.replace(self.measurements / f"{name}.npz.tmp", self.measurements / f"{name}.npz")

    def measurements_of(self, name: str) -> dict:
        with np.load(self.measurements / f"{name}.npz") as saved:
            flat = dict(saved)
        out = {k: v for k, v in flat.items() if not k.startswith("telemetry/")}
        telemetry = {k.split("/", 1)[1]: v for k, v in flat.items() if k.startswith("telemetry/")}
        return {**out, "telemetry": Telemetry(**telemetry)} if telemetry else out


class _Campaign:
    """The phases of :func:`run_real_game` over one open game; ``done`` (a :class:`RunProgress`)
    skips those finished."""

    def __init__(
        self,
        config,
        learn,
        terms: GameTerms,
        phases,
        writer,
        start,
        counts,
        done,
        game_options: dict,
    ):
        self.config, self.learn, self.terms, self.game, self.phases = (
            config,
            learn,
            terms,
            terms.game,
            phases,
        )
        # the game's options as played, in the records: they replay on the same game
        self.game_options = game_options
        self.writer, self.start, self.counts, self.done = writer, start, counts, done
        self.curves: dict[str, dict] = {}
        #: Per learning agent, what its evaluation trains on: ``(trainer, DQNState, reward, key)``.
        self.learners: dict[str, tuple] = {}

    def _trainer(self):
        return dqn.make_agent(
            self.learn.config, host_loop.spec_game(self.game, self.terms.pipeline)
        )

    def _train(self, agent, trainer, key, seed, reward, state=None, **options):
        """``train_dqn`` up to the budget (counting the steps ``state`` has taken: RELINE's
        warm-up)."""
        hparams, steps = (
            self.learn.hparams,
            self.learn.config.total_timesteps - (0 if state is None else int(state.timesteps)),
        )
        return self.phases.run(
            f"train {agent}",
            lambda report: host_loop.train_dqn(
                trainer,
                self.game,
                self.terms.pipeline,
                hparams,
                key,
                max(steps, 0),
                reward,
                seed=seed,
                on_progress=report,
                state=state,
                **options,
            ),
        )

    def _saved_learner(self, agent, trainer, key):
        """``agent``'s DQN state as its training phase saved it."""
        spec, spec_params = host_loop.spec_game(self.game, self.terms.pipeline)
        space = spec.observation_space(spec_params)
        obs = jax.ShapeDtypeStruct((self.game.num_envs, *space.shape), space.dtype)
        return self.done.learner(
            agent, jax.eval_shape(trainer.init_learner, key, obs, self.learn.hparams)
        )

    @staticmethod
    def _curve(stats):
        returns = stats["episode_return"]
        return {
            "episodes": int(returns.size),
            "return_last_10_mean": float(returns[-10:].mean()) if returns.size else None,
        }

    def train(self, key, seed) -> dict:
        """rl-baseline, the calibration and RELINE (kept in :attr:`learners`): the threshold
        dict."""
        config, learn, done, terms = self.config, self.learn, self.done, self.terms
        pipeline = terms.pipeline
        t_b = None
        if "rl-baseline" in config.agents:
            trainer = self._trainer()
            k_base = jax.random.fold_in(key, AGENTS.index("rl-baseline"))
            game_only = terms.reward(float("inf"))
            if done.figures("train rl-baseline") is None:
                state, stats = self._train("rl-baseline", trainer, k_base, seed, game_only)
                done.save_learner("rl-baseline", state)
                done.finish("train rl-baseline", self._curve(stats))
            else:
                state = self._saved_learner("rl-baseline", trainer, k_base)
            self.curves["rl-baseline"] = done.figures("train rl-baseline")
            self.learners["rl-baseline"] = (trainer, state, game_only, k_base)
            baseline = (learn.policy(trainer.network), state.params)
            if done.figures("calibrate t_b") is None:
                base = self.phases.run(
                    "calibrate t_b",
                    lambda report: host_loop.play(
                        self.game,
                        pipeline,
                        *baseline,
                        self.counts["threshold_episodes"],
                        jax.random.fold_in(key, 500),
                        seed=eval_seed(config, "rl-baseline", 0) + 500,
                        info_keys=terms.info_keys,
                        on_progress=report,
                    ),
                )
                moving = terms.calibration_steps(base)
                stuck_everywhere = (
                    moving.sum() < 2
                )  # an under-trained agent that never gets going: keep every step
                done.save_measurements(
                    "calibration",
                    {
                        "render_times_ms": base["telemetry"].frame_time_ms[
                            base["valid"] if stuck_everywhere else moving
                        ]
                    },
                )
                done.finish("calibrate t_b", {"stuck_cut_skipped": bool(stuck_everywhere)})
            base_ms = done.measurements_of("calibration")["render_times_ms"]
            t_b = reline_threshold(base_ms)
        threshold = {
            "t_b_ms": t_b,
            "delta_ms": 0.0,
            "t_ms": t_b,
            "baseline_render_times": None if t_b is None else int(base_ms.size),
            "stuck_cut_skipped": None
            if t_b is None
            else done.figures("calibrate t_b")["stuck_cut_skipped"],
        }
        if "reline" in config.agents:
            trainer = self._trainer()
            reward = terms.reward(t_b)
            k_reline = jax.random.fold_in(key, AGENTS.index("reline"))
            if done.figures("train reline") is None:
                state, warm = self.phases.run(
                    "RELINE warm-up",
                    lambda report: host_loop.train_dqn(
                        trainer,
                        self.game,
                        pipeline,
                        learn.hparams,
                        k_reline,
                        self.counts["warmup_episodes"] * self.game.max_steps_in_episode,
                        reward,
                        seed=seed,
                        on_progress=report,
                        behaviour=baseline,
                        max_episodes=self.counts["warmup_episodes"],
                        record=(),
                    ),
                )
                warm_ms = warm["episodes"]["telemetry"].frame_time_ms[warm["episodes"]["valid"]]
                reward.threshold_ms = reline_threshold(base_ms, warm_ms)
                # the warm-up stopped mid-episode: RELINE's first episode starts its own Σ r_p
                reward.reset()
                state, stats = self._train("reline", trainer, k_reline, seed, reward, state=state)
                done.save_learner("reline", state)
                done.finish(
                    "train reline",
                    {
                        "t_ms": reward.threshold_ms,
                        "warmup_render_times": int(warm_ms.size),
                        "curve": self._curve(stats),
                    },
                )
            else:
                state = self._saved_learner("reline", trainer, k_reline)
            trained = done.figures("train reline")
            reward.threshold_ms = trained["t_ms"]
            threshold.update(
                delta_ms=trained["t_ms"] - t_b,
                t_ms=trained["t_ms"],
                warmup_render_times=trained["warmup_render_times"],
            )
            self.curves["reline"] = trained["curve"]
            self.learners["reline"] = (trainer, state, reward, k_reline)
        if threshold["t_ms"] is None:
            raise ValueError(
                f"RELINE's campaign on {config.game} calibrates t from rl-baseline: include it in "
                "the agents"
            )
        return threshold

    def evaluate(self, agent, threshold):
        """``eval_episodes`` episodes of ``agent``; its low-FPS points written as bug records at
        once (those a run stopped mid-evaluation wrote are not written again); an evaluation
        finished before a resumed run is read back. A learning agent goes on training on its own
        reward meanwhile (:func:`run_real_game`, point 4)."""
        phase = f"evaluate {agent}"
        if self.done.figures(phase) is not None:
            out = self.done.measurements_of(phase.replace(" ", "-"))
            self.terms.observe(out)
            return out
        seed = eval_seed(self.config, agent, 0)
        episodes, pipeline = self.counts["eval_episodes"], self.terms.pipeline
        if agent in self.learners:
            trainer, state, reward, key = self.learners[agent]
            reward.reset()
            _, stats = self.phases.run(
                f"evaluate {agent} (training on)",
                lambda report: host_loop.train_dqn(
                    trainer,
                    self.game,
                    pipeline,
                    self.learn.hparams,
                    jax.random.fold_in(key, 1),
                    episodes * self.game.max_steps_in_episode,
                    reward,
                    seed=seed,
                    on_progress=report,
                    state=state,
                    max_episodes=episodes,
                    record=self.terms.info_keys,
                ),
            )
            out = stats["episodes"]
        else:
            out = self.phases.run(
                f"evaluate {agent}",
                lambda report: host_loop.play(
                    self.game,
                    pipeline,
                    random_policy(self.game.num_actions),
                    None,
                    episodes,
                    jax.random.fold_in(jax.random.key(seed), 1),
                    seed=seed,
                    info_keys=self.terms.info_keys,
                    on_progress=report,
                ),
            )
        self.terms.observe(out)
        for record in self._point_records(agent, out, threshold["t_ms"], seed):
            if record.detail not in self.done.written:
                self.writer.write(record)
        self.done.save_measurements(phase.replace(" ", "-"), out)
        self.done.finish(phase, {"episodes": int(out["valid"].shape[0])})
        return out

    def _point_records(self, agent, out, threshold_ms, seed):
        """A ``low_fps`` record per low-FPS point of ``out``: its first visit over ``t``."""
        tel, valid = out["telemetry"], out["valid"]
        is_low, visits, confidence = (
            np.asarray(x)
            for x in low_fps_points(
                tel.cell, tel.frame_time_ms, threshold_ms, self.game.num_cells, valid
            )
        )
        slow = valid & (tel.frame_time_ms > threshold_ms)
        for cell in np.flatnonzero(is_low):
            episode, step = (int(i[0]) for i in np.nonzero(slow & (tel.cell == cell)))
            where = {
                name: float(v[0]) for name, v in self.terms.coordinates(np.array([cell])).items()
            }
            yield BugRecord(
                kind="low_fps",
                game=self.config.game,
                bug_id=int(cell),
                step=step,
                episode=int(out["episode"][episode]),
                seed=seed,
                env_index=0,
                actions=tuple(int(a) for a in out["actions"][episode, : step + 1]),
                game_kwargs=self.game_options,
                position=tuple(float(p) for p in tel.position[episode, step]),
                wall_s=round(time.perf_counter() - self.start, 3),
                detail=(
                    f"{agent}: low-FPS point at {self.terms.describe(where)}: "
                    f"{tel.frame_time_ms[episode, step]:.2f} ms > t = {threshold_ms:.2f} ms; over "
                    "t in "
                    f"{confidence[cell]:.0%} of {visits[cell]} visits"
                ),
            )

    def replay_sections(self, out, threshold_ms, out_dir) -> dict:
        """The replay check and the per-section render times (:func:`run_real_game`, point 5)."""
        episode, completed = self.terms.replay_episode(out)
        length = int(out["valid"][episode].sum())
        actions = out["actions"][episode, :length]
        seed, key = int(out["seed"][episode]), self.terms.section_key
        ms, where = [], []
        for _ in range(self.counts["replays"]):
            if self.game.replayable:  # a game that seeds each episode: start the episode's own
                self.game.reset(seed, episode=int(out["episode"][episode]))
            else:
                self.game.reset(seed)
            ms.append([]), where.append([])
            for a in actions:
                _, _, terminated, truncated, info = self.game.step(np.array([a]))
                ms[-1].append(float(info["telemetry"].frame_time_ms[0]))
                where[-1].append(info["telemetry"].cell[0] if key == "cell" else info[key][0])
                if terminated[0] or truncated[0]:
                    break
        steps = min(len(m) for m in ms)  # a deterministic game: every replay runs the whole trace
        ms, where = np.asarray([m[:steps] for m in ms]), np.asarray([w[:steps] for w in where])
        section, starts, label = self.terms.sections(where)
        count = len(starts)
        visited = np.flatnonzero(
            np.all([np.isin(np.arange(count), row) for row in section], axis=0)
        )
        profile = np.array(
            [[ms[r][section[r] == s].mean() for s in visited] for r in range(len(ms))]
        )
        what = (
            "the course completed" if completed else "an episode that did not complete the course"
        )
        plot = section_plot(
            profile,
            starts[visited],
            out_dir / "sections.png",
            threshold_ms=threshold_ms,
            xlabel=label,
            title=f"{self.config.game}: render time per section over {len(ms)} replays of {what}",
        )
        return {
            "episode_steps": length,
            "replayed_steps": int(steps),
            "lap_completed": completed,
            "seed": seed,
            "per_step": replay_reliability(ms),
            "per_section": replay_reliability(profile) if len(visited) >= 3 else None,
            "sections": [
                {
                    "start": float(starts[s]),
                    "median_ms": float(np.median(profile[:, i])),
                    "min_ms": float(profile[:, i].min()),
                    "max_ms": float(profile[:, i].max()),
                }
                for i, s in enumerate(visited)
            ],
            "plot": str(plot),
            "paper": (self.terms.paper or {}).get("replay"),
        }
