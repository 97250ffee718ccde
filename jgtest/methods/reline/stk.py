"""RELINE on the real SuperTuxKart (pystk2 through the host loop; Tufano et al., 2022, §4).

The kart experiment of :mod:`jgtest.methods.reline.device` (on the twin)
on the real game, one race in this process (:mod:`envs_bridge.supertuxkart`,
real render times measured around the four frames of a step):

1. **rl-baseline** learns on the game reward ``r_g`` (§4.1.1, the bridge's):
   the DQN of :func:`jgtest.methods.reline.learners.bridged_dqn` (Lapan's settings,
   the Nature CNN) on 4 stacked grayscale frames at the game's render size,
   96 × 128 (:data:`PIPELINE`; the paper fed 4 × 200 × 150, §4.1.1).
2. **Calibration** (§4.1.3): the trained rl-baseline plays
   ``threshold_episodes`` episodes, each cut where the kart got stuck
   (footnote 2, :func:`jgtest.oracles.kart_stuck.until_stuck`), and
   ``t_b = mean + 5 sd`` of their render times (all their steps if the kart
   was stuck from the first, ``stuck_cut_skipped``: an under-trained
   rl-baseline of a quick run). RELINE's training then starts
   with ``warmup_episodes`` episodes in which rl-baseline picks the actions
   while RELINE's network learns (the whole training procedure runs, so the
   machine's load is training's): ``δ = max(Q1ᵗʳ − Q1, Q3ᵗʳ − Q3)`` and
   ``t = t_b + δ`` (:func:`jgtest.oracles.reline_threshold`). The paper does
   not say which ``t`` the warm-up's rewards use; ``t`` is not known yet, so
   they use ``t_b``.
3. **RELINE** learns on ``r_g + r_p`` and the finish bonus against ``t``
   (§4.1.2, :class:`KartRelineReward`), continuing from its warm-up up to
   the same budget of steps as rl-baseline (the warm-up counts: the paper's
   100 warm-up episodes are the first of its 2,300).
4. **Evaluation**: each agent plays ``eval_episodes`` episodes (the paper:
   1,000). The learning agents go on training on their own rewards meanwhile
   (ε-greedy at Lapan's final ε), as the paper's "we train both agents for
   additional 1,000 episodes and collect the frame render times": the render
   times are taken under the training load ``δ`` allows for (the twin
   simulates that load, :mod:`jgtest.methods.reline`); the random agent does
   not learn. Low-FPS points are the
   coverage cells whose render time exceeded ``t`` in more than half their
   visits, with their confidence (§4.1.3, :func:`jgtest.methods.low_fps_analysis`).
   Each agent's points are written as ``low_fps`` bug records when its
   evaluation ends (a point needs all its visits): the trace of the point's
   first visit over ``t``; the race is deterministic, so a restart with the
   same seed and actions drives there again.
5. **Replay check by section** (§4.1.3, Fig. 3): an rl-baseline evaluation
   episode that completed the lap (else its longest) is replayed ``replays``
   times. Reported: the pairwise Spearman correlations of the per-step render
   times across replays (the paper's check: ρ min 0.77, median 0.91 over 300),
   and the lap split into :data:`SECTIONS` sections of ``path_done``: each
   replay's mean render time per section, the correlation of those section
   profiles from lap to lap, and each section's median (``sections.png``).

Budget: the paper trained each agent 2,300 episodes (§4.1.3), ≈ 375k steps at
the ≈ 163 steps a lap of the trained twin takes (:data:`~jgtest.methods.reline.learners.STK_STEPS`);
one gradient step of this network costs ≈ 0.1 s on 2 CPU cores, so a model at
that budget is ≈ 10 hours there (the paper: 3 hours for rl-baseline, 30 for
RELINE, on a GPU). ``--quick`` trains 1,500 steps a model and caps the episode
counts at :data:`QUICK_EPISODES`: a campaign of minutes that runs every phase,
not a reproduction.

The cells are the bridge's: 200 buckets of ``path_done`` along the lap × 24 of
``centering`` over ``±1.5 θ``; a point's coordinates are its cell's centre.

Resume (:class:`_Progress`): each phase's result is saved as the phase ends —
a learner's whole DQN state with orbax (``checkpoints/AGENT``: networks, Adam,
replay buffer, counters, key; the evaluation trains on from it), the
measurements later phases read as ``measurements/NAME.npz`` (the calibration's
render times, each evaluation's episodes) and the phase's figures in
``progress.json`` — and ``resume=True`` skips every phase done. A phase a kill
cut short is run again from its start; its records already written stay, and
one with the same detail is not written twice. Render times are measured, not
computed, so a resumed run is a continuation, not a bit-for-bit copy of an
uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jgtest import host_loop
from jgtest.agents import dqn
from jgtest.analysis import replay_reliability
from jgtest.checkpoint import Checkpointer, config_fingerprint
from jgtest.envs.wrappers import ObservationPipeline
from jgtest.methods.reline.analysis import low_fps_analysis, write_low_fps
from jgtest.methods.reline.config import AGENTS, PAPER_KART, RelineConfig, eval_seed, protocol
from jgtest.methods.reline.learners import learner, random_policy
from jgtest.methods.reline.phases import Phases
from jgtest.oracles import low_fps_points, reline_threshold
from jgtest.oracles.kart_stuck import until_stuck
from jgtest.report.plots import section_plot
from jgtest.report.records import BugRecord, BugRecordWriter, jsonable, records_to_resume, write_json_atomically
from jgtest.rewards import kart_finish_bonus, kart_performance_reward, kart_progress_reward
from jgtest.run_dir import begin_campaign
from jgtest.types import Telemetry

#: 4 stacked grayscale frames at the bridge's render size (height, width).
PIPELINE = ObservationPipeline(size=(96, 128), num_frames=4)
#: Sections of the lap in the replay check.
SECTIONS = 20
#: ``--quick``'s caps on the episode counts (the paper's: 300, 100, 1,000 and 300).
QUICK_EPISODES = {"threshold_episodes": 10, "warmup_episodes": 4, "eval_episodes": 6, "replays": 6}
#: What the evaluation keeps of the game's info.
INFO_KEYS = ("delta_path_done", "path_done")


class KartRelineReward:
    """RELINE's kart reward over a host game's steps (§4.1.2), as ``RelineReward(env, "kart")`` on device.

    ``r = r_g + r_p + 10 · Σ r_p`` on the step that completes the lap, with
    ``r_g`` = :func:`jgtest.rewards.kart_progress_reward` and ``r_p`` =
    :func:`jgtest.rewards.kart_performance_reward` (10 when the step's render
    time exceeds ``threshold_ms`` within ``θ`` of the centre line). The running
    ``Σ r_p`` restarts on each game's autoreset step, whose reward is 0 (it is
    not learned from). ``threshold_ms`` may be changed between steps (the
    warm-up uses ``t_b``). Call signature: :func:`jgtest.host_loop.train_dqn`'s ``reward``.
    """

    def __init__(self, num_envs: int, threshold_ms: float, theta: float, progress_cap: float):
        self.threshold_ms, self.theta, self.progress_cap = float(threshold_ms), float(theta), float(progress_cap)
        self.performance_return = np.zeros(num_envs, np.float32)

    def reset(self) -> None:
        """Starts every game's ``Σ r_p`` afresh (a new phase resets the race without an autoreset step)."""
        self.performance_return[:] = 0.0

    def __call__(self, game_reward, terminated, info) -> np.ndarray:
        centering, fresh = info["centering"], info["autoreset"]
        r_g = kart_progress_reward(centering, info["delta_path_done"], self.theta, self.progress_cap)
        r_p = np.asarray(kart_performance_reward(centering, info["telemetry"].frame_time_ms, self.threshold_ms, self.theta))
        self.performance_return = np.where(fresh, 0.0, self.performance_return + r_p).astype(np.float32)
        reward = np.asarray(r_g) + r_p + np.asarray(kart_finish_bonus(self.performance_return, terminated))
        return np.where(fresh, 0.0, reward).astype(np.float32)


def settings(config: RelineConfig) -> dict[str, int]:
    """The episode counts of the run: ``config``'s, capped by :data:`QUICK_EPISODES` under ``quick``."""
    counts = {name: getattr(config, name) for name in QUICK_EPISODES}
    return {k: min(v, QUICK_EPISODES[k]) for k, v in counts.items()} if config.quick else counts


def cell_centres(game, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(path_done, centering)`` at the centre of each of the bridge's cells."""
    n_path, n_cent = game.map_shape
    rows, cols = np.divmod(np.asarray(cells), n_cent)
    span = game.centering_span
    return (rows + 0.5) * game.track_length / n_path, -span + (cols + 0.5) * 2 * span / n_cent


def run(config: RelineConfig, out_dir: str | Path, progress=None, resume: bool = False) -> dict:
    """Runs the campaign (module docstring), writing in ``out_dir``: ``config.json``,
    ``bugs.jsonl`` (low-FPS points, as each agent's evaluation ends), ``low_fps.json``, the
    plots (``render_times.png``, ``low_fps_points.png``, ``sections.png``), ``summary.json``,
    and what ``resume`` continues from (``progress.json``, ``checkpoints/``, ``measurements/``)."""
    out_dir, start = Path(out_dir), time.perf_counter()
    phases = Phases(progress)
    learn = learner(config)
    counts = settings(config)
    begin_campaign(out_dir, {"method": "reline", **dataclasses.asdict(config), "episodes": counts,
                             "learner": jsonable(dataclasses.asdict(learn.config))}, None, resume)  # fmt: skip
    key = jax.random.key(config.seed)
    train_seed = config.seed * 100_000 + 50_000
    summary: dict[str, Any] = {"method": "reline", "game": config.game, "episodes": counts, "train_steps": learn.config.total_timesteps,
                               "protocol": protocol(config)}  # fmt: skip
    done = _Progress(out_dir, config, resume)
    with host_loop.host_game(config.game, seed=train_seed, **dict(config.game_kwargs)) as game, \
            BugRecordWriter(out_dir / "bugs.jsonl") as writer:  # fmt: skip
        campaign = _Campaign(config, learn, game, phases, writer, start, counts, done)
        threshold = campaign.train(key, train_seed)
        outs = {agent: campaign.evaluate(agent, threshold) for agent in config.agents}
        if not hasattr(game, "track_length"):  # every phase was done before: load the race for its length
            game.reset(train_seed)
        analysis = phases.run("low-FPS analysis", lambda _: low_fps_analysis(
            game.num_cells, lambda cells: cell_centres(game, cells), threshold["t_ms"], outs))  # fmt: skip
        replay = None
        if "rl-baseline" in outs:
            replay = done.figures("replay check") or done.finish("replay check", phases.run(
                "replay check", lambda _: campaign.replay_sections(outs["rl-baseline"], threshold["t_ms"], out_dir)))  # fmt: skip
        low_fps = write_low_fps(
            config, analysis, threshold["t_ms"], out_dir, road_half_width=game.road_half_width,
            path_length=game.track_length, replay_reliability=replay,
        )  # fmt: skip
    summary.update(
        threshold=threshold, training=campaign.curves,
        low_fps={a: {"count": r["count"], "visits_per_1000_episodes": r["visits_per_1000_episodes"],
                     "confidence_median": r["confidence"]["median"]} for a, r in low_fps["per_agent"].items()},
        medians_ms=low_fps["medians_ms"], replay_reliability=replay, phases_s=phases.wall_s, resumed_phases=done.resumed,
        wall_s=round(time.perf_counter() - start, 2), paper=PAPER_KART,
    )  # fmt: skip
    (out_dir / "summary.json").write_text(json.dumps(jsonable(summary), indent=2))
    return summary


class _Progress:
    """The phases a run has finished, and their results, for ``resume`` (module docstring).

    ``figures(phase)`` is a finished phase's JSON figures (``None`` when it is
    not finished, or the run does not resume); ``finish(phase, figures)``
    records them, after the phase's learner and measurements are saved
    (``save_learner``, ``save_measurements``), so a phase is finished only
    when all it left is on disk. Without ``resume`` a run starts afresh:
    what an earlier run left is removed.
    """

    def __init__(self, out_dir: Path, config: RelineConfig, resume: bool):
        self.path, self.checkpoints, self.measurements = out_dir / "progress.json", out_dir / "checkpoints", out_dir / "measurements"
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
        shutil.rmtree(self.checkpoints / agent, ignore_errors=True)  # a phase run again replaces what a kill left
        with Checkpointer(self.checkpoints / agent, self.fingerprint) as ckpt:
            ckpt.save(1, state)

    def learner(self, agent: str, state_like):
        with Checkpointer(self.checkpoints / agent, self.fingerprint) as ckpt:
            return ckpt.restore(state_like)

    def save_measurements(self, name: str, arrays: dict) -> None:
        """``arrays`` (host arrays, a :class:`Telemetry` under ``"telemetry"``) as ``measurements/NAME.npz``."""
        flat = {k: v for k, v in arrays.items() if k != "telemetry"}
        if "telemetry" in arrays:
            flat.update({f"telemetry/{f.name}": getattr(arrays["telemetry"], f.name) for f in dataclasses.fields(Telemetry)})
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
    """The phases of :func:`run` over one open race; ``done`` (a :class:`_Progress`) skips those finished."""

    def __init__(self, config, learn, game, phases, writer, start, counts, done):
        self.config, self.learn, self.game, self.phases = config, learn, game, phases
        self.writer, self.start, self.counts, self.done = writer, start, counts, done
        self.curves: dict[str, dict] = {}
        #: Per learning agent, what its evaluation trains on: ``(trainer, DQNState, reward or None, key)``.
        self.learners: dict[str, tuple] = {}

    def _trainer(self):
        return dqn.make_agent(self.learn.config, host_loop.spec_game(self.game, PIPELINE))

    def _train(self, agent, trainer, key, seed, state=None, **options):
        """``train_dqn`` up to the budget (counting the steps ``state`` has taken: RELINE's warm-up)."""
        hparams, steps = self.learn.hparams, self.learn.config.total_timesteps - (0 if state is None else int(state.timesteps))
        return self.phases.run(f"train {agent}", lambda report: host_loop.train_dqn(
            trainer, self.game, PIPELINE, hparams, key, max(steps, 0), seed=seed, on_progress=report, state=state, **options))  # fmt: skip

    def _saved_learner(self, agent, trainer, key):
        """``agent``'s DQN state as its training phase saved it."""
        spec, spec_params = host_loop.spec_game(self.game, PIPELINE)
        space = spec.observation_space(spec_params)
        obs = jax.ShapeDtypeStruct((self.game.num_envs, *space.shape), space.dtype)
        return self.done.learner(agent, jax.eval_shape(trainer.init_learner, key, obs, self.learn.hparams))

    @staticmethod
    def _curve(stats):
        returns = stats["episode_return"]
        return {"episodes": int(returns.size), "return_last_10_mean": float(returns[-10:].mean()) if returns.size else None}

    def train(self, key, seed) -> dict:
        """rl-baseline, the calibration and RELINE (kept in :attr:`learners`): the threshold dict."""
        config, learn, done = self.config, self.learn, self.done
        t_b = None
        if "rl-baseline" in config.agents:
            trainer = self._trainer()
            k_base = jax.random.fold_in(key, AGENTS.index("rl-baseline"))
            if done.figures("train rl-baseline") is None:
                state, stats = self._train("rl-baseline", trainer, k_base, seed)
                done.save_learner("rl-baseline", state)
                done.finish("train rl-baseline", self._curve(stats))
            else:
                state = self._saved_learner("rl-baseline", trainer, k_base)
            self.curves["rl-baseline"] = done.figures("train rl-baseline")
            self.learners["rl-baseline"] = (trainer, state, None, k_base)
            baseline = (learn.policy(trainer.network), state.params)
            if done.figures("calibrate t_b") is None:
                base = self.phases.run("calibrate t_b", lambda report: host_loop.play(
                    self.game, PIPELINE, *baseline, self.counts["threshold_episodes"], jax.random.fold_in(key, 500),
                    seed=eval_seed(config, "rl-baseline", 0) + 500, info_keys=INFO_KEYS, on_progress=report))  # fmt: skip
                driving = until_stuck(base["delta_path_done"], base["valid"])
                stuck_everywhere = driving.sum() < 2  # an under-trained kart that never drives: keep every step
                done.save_measurements("calibration", {"render_times_ms": base["telemetry"].frame_time_ms[base["valid"] if stuck_everywhere else driving]})
                done.finish("calibrate t_b", {"stuck_cut_skipped": bool(stuck_everywhere)})
            base_ms = done.measurements_of("calibration")["render_times_ms"]
            t_b = reline_threshold(base_ms)
        threshold = {"t_b_ms": t_b, "delta_ms": 0.0, "t_ms": t_b, "baseline_render_times": None if t_b is None else int(base_ms.size),
                     "stuck_cut_skipped": None if t_b is None else done.figures("calibrate t_b")["stuck_cut_skipped"]}  # fmt: skip
        if "reline" in config.agents:
            trainer = self._trainer()
            reward = KartRelineReward(1, t_b, config.theta, config.progress_cap)
            k_reline = jax.random.fold_in(key, AGENTS.index("reline"))
            if done.figures("train reline") is None:
                state, warm = self.phases.run("RELINE warm-up", lambda report: host_loop.train_dqn(
                    trainer, self.game, PIPELINE, learn.hparams, k_reline, self.counts["warmup_episodes"] * self.game.max_steps_in_episode,
                    reward, seed=seed, on_progress=report,
                    behaviour=baseline, max_episodes=self.counts["warmup_episodes"], record=()))  # fmt: skip
                warm_ms = warm["episodes"]["telemetry"].frame_time_ms[warm["episodes"]["valid"]]
                reward.threshold_ms = reline_threshold(base_ms, warm_ms)
                reward.reset()  # the warm-up stopped mid-race: RELINE's first episode starts its own Σ r_p
                state, stats = self._train("reline", trainer, k_reline, seed, reward=reward, state=state)
                done.save_learner("reline", state)
                done.finish("train reline", {"t_ms": reward.threshold_ms, "warmup_render_times": int(warm_ms.size), "curve": self._curve(stats)})
            else:
                state = self._saved_learner("reline", trainer, k_reline)
            trained = done.figures("train reline")
            reward.threshold_ms = trained["t_ms"]
            threshold.update(delta_ms=trained["t_ms"] - t_b, t_ms=trained["t_ms"], warmup_render_times=trained["warmup_render_times"])
            self.curves["reline"] = trained["curve"]
            self.learners["reline"] = (trainer, state, reward, k_reline)
        if threshold["t_ms"] is None:
            raise ValueError("the SuperTuxKart campaign calibrates t from rl-baseline: include it in the agents")
        return threshold

    def evaluate(self, agent, threshold):
        """``eval_episodes`` episodes of ``agent``; its low-FPS points written as bug records at once
        (those a run stopped mid-evaluation wrote are not written again); an evaluation finished
        before a resumed run is read back.

        A learning agent goes on training while it is evaluated, on its own
        reward, as the paper's "we train both agents for additional 1,000
        episodes and collect the frame render times" (§4.1.3): the render times
        are taken under the training load ``δ`` was calibrated for. The random
        agent does not learn, as the paper's.
        """
        phase = f"evaluate {agent}"
        if self.done.figures(phase) is not None:
            return self.done.measurements_of(phase.replace(" ", "-"))
        seed = eval_seed(self.config, agent, 0)
        episodes = self.counts["eval_episodes"]
        if agent in self.learners:
            trainer, state, reward, key = self.learners[agent]
            if reward is not None:
                reward.reset()
            _, stats = self.phases.run(f"evaluate {agent} (training on)", lambda report: host_loop.train_dqn(
                trainer, self.game, PIPELINE, self.learn.hparams, jax.random.fold_in(key, 1), episodes * self.game.max_steps_in_episode,
                reward, seed=seed, on_progress=report, state=state, max_episodes=episodes, record=INFO_KEYS))  # fmt: skip
            out = stats["episodes"]
        else:
            out = self.phases.run(f"evaluate {agent}", lambda report: host_loop.play(
                self.game, PIPELINE, random_policy(self.game.num_actions), None, episodes,
                jax.random.fold_in(jax.random.key(seed), 1), seed=seed, info_keys=INFO_KEYS, on_progress=report))  # fmt: skip
        for record in self._point_records(agent, out, threshold["t_ms"], seed):
            if record.detail not in self.done.written:
                self.writer.write(record)
        self.done.save_measurements(phase.replace(" ", "-"), out)
        self.done.finish(phase, {"episodes": int(out["valid"].shape[0])})
        return out

    def _point_records(self, agent, out, threshold_ms, seed):
        """A ``low_fps`` record per low-FPS point of ``out``: its first visit over ``t``."""
        tel, valid = out["telemetry"], out["valid"]
        is_low, visits, confidence = (np.asarray(x) for x in low_fps_points(tel.cell, tel.frame_time_ms, threshold_ms, self.game.num_cells, valid))
        slow = valid & (tel.frame_time_ms > threshold_ms)
        for cell in np.flatnonzero(is_low):
            episode, step = (int(i[0]) for i in np.nonzero(slow & (tel.cell == cell)))
            path_done, centering = cell_centres(self.game, np.array([cell]))
            yield BugRecord(
                kind="low_fps", game=self.config.game, bug_id=int(cell), step=step, episode=episode, seed=seed, env_index=0,
                actions=tuple(int(a) for a in out["actions"][episode, : step + 1]), game_kwargs=dict(self.config.game_kwargs),
                position=tuple(float(p) for p in tel.position[episode, step]), wall_s=round(time.perf_counter() - self.start, 3),
                detail=(f"{agent}: low-FPS point at path_done {path_done[0]:.0f} m, centering {centering[0]:+.1f}: "
                        f"{tel.frame_time_ms[episode, step]:.2f} ms > t = {threshold_ms:.2f} ms; over t in "
                        f"{confidence[cell]:.0%} of {visits[cell]} visits"),
            )  # fmt: skip

    def replay_sections(self, out, threshold_ms, out_dir) -> dict:
        """The replay check and the per-section render times (module docstring, point 5)."""
        lengths = out["valid"].sum(axis=1)
        laps = np.flatnonzero(lengths < self.game.max_steps_in_episode)  # ended before the cap: the lap is done
        episode = int(laps[0]) if laps.size else int(np.argmax(lengths))
        actions = out["actions"][episode, : lengths[episode]]
        seed = int(out["seed"][episode])
        ms, path = [], []
        for _ in range(self.counts["replays"]):
            self.game.reset(seed)
            ms.append([]), path.append([])
            for a in actions:
                _, _, terminated, truncated, info = self.game.step(np.array([a]))
                ms[-1].append(float(info["telemetry"].frame_time_ms[0])), path[-1].append(float(info["path_done"][0]))
                if terminated[0] or truncated[0]:
                    break
        steps = min(len(m) for m in ms)  # the race is deterministic: every replay runs the whole trace
        ms, path = np.asarray([m[:steps] for m in ms]), np.asarray([p[:steps] for p in path])
        edges = np.linspace(0.0, self.game.track_length, SECTIONS + 1)
        section = np.clip(np.searchsorted(edges, np.mod(path, self.game.track_length), side="right") - 1, 0, SECTIONS - 1)
        visited = np.flatnonzero(np.all([np.isin(np.arange(SECTIONS), row) for row in section], axis=0))
        profile = np.array([[ms[r][section[r] == s].mean() for s in visited] for r in range(len(ms))])
        plot = section_plot(profile, edges[visited], out_dir / "sections.png", threshold_ms=threshold_ms,
                            title=f"{self.config.game}: render time per section over {len(ms)} replays of "
                                  + ("a lap" if laps.size else "an episode that did not finish the lap"))  # fmt: skip
        return {
            "episode_steps": int(lengths[episode]), "replayed_steps": int(steps), "lap_completed": bool(laps.size), "seed": seed,
            "per_step": replay_reliability(ms),
            "per_section": replay_reliability(profile) if len(visited) >= 3 else None,
            "sections": [{"start_m": float(edges[s]), "end_m": float(edges[s + 1]), "median_ms": float(np.median(profile[:, i])),
                          "min_ms": float(profile[:, i].min()), "max_ms": float(profile[:, i].max())} for i, s in enumerate(visited)],
            "plot": str(plot), "paper": PAPER_KART["replay"],
        }  # fmt: skip
