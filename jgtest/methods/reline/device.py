"""RELINE on the on-device games (CartPoleBugs-v0, PacMaze-v0, KartTrack-v0): N models per learning
agent trained vmapped and evaluated, or run through the episodes the tables count
(:mod:`~jgtest.methods.reline.learning_run`), then Table 1 or the kart's low-FPS analysis."""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jgtest.agents import dqn
from jgtest.analysis import replay_reliability
from jgtest.checkpoint import Checkpointer, config_fingerprint, strongly_typed
from jgtest.envs.registration import make
from jgtest.files import jsonable, write_json_atomically
from jgtest.methods.reline import analysis
from jgtest.methods.reline.config import (
    AGENTS,
    PAPER_KART,
    RelineConfig,
    eval_seed,
    game_options,
    protocol,
)
from jgtest.methods.reline.learners import Learner, learner, random_policy
from jgtest.methods.reline.learning_run import learn_and_count
from jgtest.methods.reline.phases import Phases
from jgtest.oracles import reline_threshold
from jgtest.oracles.kart_stuck import until_stuck
from jgtest.records import BugRecordWriter, records_to_resume
from jgtest.rewards import RelineReward
from jgtest.rollout import play_episodes, replay_trace
from jgtest.run_dir import begin_campaign
from jgtest.types import PhaseProgress

#: The per-step values a learning run keeps of its counted episodes, per game: the kart's low-FPS
#: analysis reads their cells and frame times
#: (:func:`jgtest.methods.reline.analysis.low_fps_analysis`).
KEPT_STEPS = {
    "KartTrack-v0": lambda info: {
        "cell": info["telemetry"].cell,
        "frame_time_ms": info["telemetry"].frame_time_ms,
    }
}


def train_models(
    learn: Learner,
    env,
    params,
    agent: str,
    keys,
    on_period=None,
    checkpoints: Checkpointer | None = None,
):
    """Trains ``len(keys)`` models vmapped; ``agent`` picks the reward (RELINE's or the game's).

    Returns ``(trainer, stacked training state, per-period metrics)``; ``on_period(i, n)``
    is called after each of the ``num_evals`` periods (one device call each).
    With ``checkpoints``, the models' training state and the metrics so far are
    saved after every period and training continues from the last checkpoint
    there: every period is the same pure function of the state, so a resumed
    training ends where an uninterrupted one ends.
    """
    trainer = learn.module.make_agent(learn.config, (training_game(learn, env, agent), params))
    init = jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))
    period = jax.jit(jax.vmap(trainer.period, in_axes=(0, None)))
    state = strongly_typed(
        init(keys, learn.hparams)
    )  # typed as a restored state: a resumed run reuses the compiled period
    periods = learn.config.num_evals
    shapes = jax.eval_shape(period, state, learn.hparams)[1]
    history = {k: np.zeros((periods, *v.shape), v.dtype) for k, v in shapes.items()}
    done = 0
    if checkpoints is not None and checkpoints.latest_step() is not None:  # the newest intact step
        done, (state, history) = checkpoints.restore_latest((state, history))
        history = jax.tree.map(np.asarray, history)
    for i in range(done, periods):
        state, metrics = period(state, learn.hparams)
        for k, v in jax.device_get(metrics).items():
            history[k][i] = v
        if checkpoints is not None:
            checkpoints.save(i + 1, (state, history))
        if on_period is not None:
            on_period(i + 1, periods)
    return trainer, state, {k: np.swapaxes(v, 0, 1) for k, v in history.items()}


def training_game(learn: Learner, env, agent: str):
    """The game ``agent`` learns on, as it sees it: RELINE's reward
    (:class:`jgtest.rewards.RelineReward`) for ``reline``, the game's own for rl-baseline, under the
    learner's observation wrappers."""
    game = (
        RelineReward(env, "kart" if learn.config.game == "KartTrack-v0" else "bugs")
        if agent == "reline"
        else env
    )
    return learn.wrap(game)


def evaluate_learning(
    learn: Learner, env, params, agent: str, trainer, state, seeds, num_episodes: int
):
    """The package's evaluation of a CEM model: it keeps learning through its ``num_episodes``.

    RELINE's replication package (``rlgameauthors/rlgameauthors``,
    ``CartPole/CartPole_RELINE_1k_episodes.py`` lines 121–140) plays the evaluation episodes with
    the training loop still running: every batch of ``episodes_per_iter`` (16) episodes is followed
    by the CEM update on its elites (RELINE's +50 per bug still paid), and Table 1 counts the bugs
    of the first 1,000. As there, Adam starts afresh (``CartPole_RELINE_1k_episodes.py`` line 121: a
    new ``optim.Adam(lr=0.01)`` after loading the model; the repository holds no such script for
    rl-baseline, which is evaluated the same way here): zero moments, so its first updates move
    every weight by about the learning rate, where the trained model's moments would damp them. Here
    each batch is played with the campaign's keys, batch ``i`` in slots ``16 i … 16 i + 15`` of run
    ``seed`` (:func:`jgtest.rollout.play_episodes`), so each episode's trace replays like a frozen
    evaluation's, and the model's update between batches is the trainer's own. Vmapped over the
    models (``state``, ``seeds`` stacked).

    Returns:
      As :func:`evaluate_models`: ``[N, E, T]`` arrays on the host.
    """
    n = learn.config.episodes_per_iter
    iterations = -(-num_episodes // n)
    max_steps = int(np.asarray(params.max_steps_in_episode))
    game, policy = training_game(learn, env, agent), learn.policy(trainer.network)

    def one_model(state, seed):
        state = state.replace(
            opt_state=optax.adam(learn.hparams.learning_rate).init(state.params)
        )  # the package's fresh Adam

        def batch(state, i):
            out = play_episodes(
                game,
                params,
                policy,
                state.params,
                seed,
                n,
                max_steps,
                first_slot=i * n,
                with_transitions=True,
            )
            valid = out["valid"].astype(jnp.float32)
            episodes = learn.module.Episodes(
                out.pop("obs"), out["actions"], valid, (out.pop("rewards") * valid).sum(axis=1)
            )
            state, _ = trainer.update(state, episodes, state.key, learn.hparams)
            return state, out

        _, outs = jax.lax.scan(batch, state, jnp.arange(iterations))
        return jax.tree.map(lambda x: x.reshape(iterations * n, *x.shape[2:])[:num_episodes], outs)

    return jax.device_get(jax.jit(jax.vmap(one_model))(state, jnp.asarray(seeds, jnp.int32)))


def evaluate_models(env, params, policy, policy_params, seeds, num_episodes: int, info_keys=()):
    """:func:`jgtest.rollout.play_episodes` for each model (vmapped): ``[N, E, T]`` arrays on the
    host."""
    max_steps = int(np.asarray(params.max_steps_in_episode))
    play = lambda pp, seed: play_episodes(
        env, params, policy, pp, seed, num_episodes, max_steps, info_keys
    )
    return jax.device_get(jax.jit(jax.vmap(play))(policy_params, jnp.asarray(seeds, jnp.int32)))


def run_on_device(
    config: RelineConfig,
    out_dir: str | Path,
    progress: PhaseProgress | None = None,
    resume: bool = False,
) -> dict:
    """:func:`jgtest.methods.reline.run` on an on-device game (its docstring: the files written,
    ``resume``).

    Each learning agent's models are checkpointed after every training period
    (``checkpoints/train-AGENT``, :func:`train_models`, or ``checkpoints/learn-AGENT``,
    :func:`jgtest.methods.reline.learning_run.learn_and_count`); ``resume`` continues them
    from there and plays the rest again (the calibration and evaluations are pure functions
    of the trained models and the seeds), writing no record twice, so a resumed run ends
    where an uninterrupted one ends.
    """
    out_dir = Path(out_dir)
    start = time.perf_counter()
    env, params = make(config.game, **game_options(config))
    learn = learner(config)
    phases = Phases(progress)
    begin_campaign(
        out_dir,
        {
            "method": "reline",
            **dataclasses.asdict(config),
            "learner": jsonable(dataclasses.asdict(learn.config)),
        },
        None,
        resume,
    )
    models = np.arange(config.models)
    keys = {
        a: jax.random.split(jax.random.fold_in(jax.random.key(config.seed), i), config.models)
        for i, a in enumerate(AGENTS)
    }
    summary: dict[str, Any] = {
        "method": "reline",
        "game": config.game,
        "models": config.models,
        "protocol": protocol(config),
        "eval_episodes": config.eval_episodes,
        "learner": type(learn.config).__name__,
    }
    trained, learners, curves, outs = {}, {}, {}, {}

    def agent_checkpoints(phase: str, agent: str) -> Checkpointer:
        """``agent``'s models' checkpoints of ``phase`` (``checkpoints/PHASE-AGENT``)."""
        return Checkpointer(
            out_dir / "checkpoints" / f"{phase}-{agent}",
            config_fingerprint({"reline": config, "agent": agent}),
        )

    def train(agent, train_params):
        def go(report):
            with agent_checkpoints("train", agent) as checkpoints:
                return train_models(
                    learn, env, train_params, agent, keys[agent], report, checkpoints
                )

        trainer, state, history = phases.run(f"train {agent}", go, learn.config.num_evals)
        trained[agent] = (learn.policy(trainer.network), state.params)
        learners[agent] = (trainer, state)
        curves[agent] = {
            k: np.asarray(v).mean(axis=0).tolist()
            for k, v in history.items()
            if k.endswith("_mean")
        }

    def evaluate(agent, eval_params, writer, options):
        policy, pp = trained.get(agent) or (
            random_policy(env.num_actions),
            jnp.zeros(config.models),
        )
        eval_env = env if agent == "random" else learn.wrap(env)
        if config.evaluation == "training" and agent in learners:
            outs[agent] = phases.run(
                f"evaluate {agent} (learning)",
                lambda _: evaluate_learning(
                    learn,
                    env,
                    eval_params,
                    agent,
                    *learners[agent],
                    seeds(agent),
                    config.eval_episodes,
                ),
            )
        else:
            outs[agent] = phases.run(
                f"evaluate {agent}",
                lambda _: evaluate_models(
                    eval_env, eval_params, policy, pp, seeds(agent), config.eval_episodes
                ),
            )
        for record in analysis.first_records(config, env, outs[agent], agent, options, start):
            if record.detail not in written:  # written before a resumed run was stopped
                writer.write(record)

    def learn_counting(agent, run_params, writer, options):
        """``agent``'s models learn through the episodes the tables count
        (:func:`learn_and_count`)."""
        game = training_game(learn, env, agent)
        trainer = learn.module.make_agent(learn.config, (game, run_params))

        def go(report):
            with agent_checkpoints("learn", agent) as checkpoints:
                return learn_and_count(
                    trainer,
                    game,
                    run_params,
                    learn.hparams,
                    keys[agent],
                    seeds(agent),
                    config.eval_episodes,
                    int(np.asarray(params.max_steps_in_episode)),
                    env.num_bugs,
                    report,
                    checkpoints,
                    keep=KEPT_STEPS.get(config.game),
                    params_at_end=config.game
                    == "KartTrack-v0",  # the kart's calibration plays the final rl-baseline
                )

        run = phases.run(
            f"learn {agent}, counting its last {config.eval_episodes} episodes",
            go,
            learn.config.num_evals,
        )
        found[agent] = run["counted"]
        if run["params"] is not None:
            trained[agent] = (learn.policy(trainer.network), run["params"])
        outs[agent] = {"telemetry": SimpleNamespace(**run["kept"]), "valid": run["valid"]}
        curves[agent] = {"train_return_mean": run["train_return_mean"].tolist()}
        summary.setdefault("learning_runs", {})[agent] = {
            "episodes": run["episodes"].tolist(),
            "steps": run["steps"].tolist(),
        }
        for record in analysis.caught_records(
            config, env, run_params, run["catch"], agent, options, start
        ):
            if record.detail not in written:
                writer.write(record)

    def learn_agent(agent, run_params, writer, options):
        """Trains ``agent``, or under the package's protocol runs it through its counted
        episodes."""
        if counts_training:
            learn_counting(agent, run_params, writer, options)
        else:
            train(agent, run_params)

    seeds = lambda agent: [eval_seed(config, agent, m) for m in models]
    counts_training = config.evaluation == "training" and learn.module is dqn
    found: dict[str, np.ndarray] = {}
    if not resume:
        shutil.rmtree(out_dir / "checkpoints", ignore_errors=True)
    written = {r.detail for r in records_to_resume(out_dir, resume)}
    with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
        if config.game != "KartTrack-v0":
            options = game_options(config)
            for agent in config.agents:
                if agent != "random":
                    learn_agent(agent, params, writer, options)
                if agent not in found:
                    evaluate(agent, params, writer, options)
                    found[agent] = analysis.bugs_found(outs[agent])
            rows = analysis.table1(config, found)
            write_json_atomically(
                out_dir / "table1.json", {"protocol": protocol(config), "table1": rows}
            )
            summary["table1"] = rows
        else:
            summary.update(
                _kart(
                    config,
                    env,
                    params,
                    learn,
                    phases,
                    learn_agent,
                    evaluate,
                    trained,
                    outs,
                    writer,
                    out_dir,
                )
            )
    summary.update(
        training_curves=curves, phases_s=phases.wall_s, wall_s=round(time.perf_counter() - start, 2)
    )
    write_json_atomically(out_dir / "summary.json", summary)
    return summary


def _kart(
    config, env, params, learn, phases, learn_agent, evaluate, trained, outs, writer, out_dir
) -> dict:
    """The kart's part of :func:`run`: calibration, RELINE against ``t``, low-FPS analysis, plots.

    Under the package's protocol the learning agents' low-FPS points come from the last
    ``eval_episodes`` episodes of their runs (:func:`learn_counting`), played under the training
    load as the package's are; the calibration plays the final rl-baseline (the package hard-codes
    ``t_b`` from its best rl-baseline's 300 episodes,
    ``SuperTuxKart/code/agents/SuperTuxKart_RELINE.py``), and the replay check replays one of those
    calibration episodes."""
    loaded = params.replace(
        load_scale=config.train_load_scale, load_offset_ms=config.train_load_offset_ms
    )
    load = {"load_scale": config.train_load_scale, "load_offset_ms": config.train_load_offset_ms}
    result: dict[str, Any] = {}
    threshold = float(params.threshold_ms)
    base = None
    if "rl-baseline" in config.agents:
        # it learns before t is calibrated: its bug records are judged at the game's default
        # threshold
        learn_agent(
            "rl-baseline",
            loaded,
            writer,
            game_options(config, threshold_ms=float(params.threshold_ms), **load),
        )
        policy, pp = trained["rl-baseline"]
        seeds = lambda offset: [
            eval_seed(config, "rl-baseline", m) + offset for m in range(config.models)
        ]
        per_model = lambda n: -(-n // config.models)  # at least n episodes in all

        def calibrate(_):
            base = evaluate_models(
                learn.wrap(env),
                params,
                policy,
                pp,
                seeds(500),
                per_model(config.threshold_episodes),
                ("delta_path_done",),
            )
            warm = evaluate_models(
                learn.wrap(env), loaded, policy, pp, seeds(700), per_model(config.warmup_episodes)
            )
            base_ms = base["telemetry"].frame_time_ms[
                until_stuck(base["delta_path_done"], base["valid"])
            ]
            warm_ms = warm["telemetry"].frame_time_ms[warm["valid"]]
            return base, base_ms, warm_ms

        base, base_ms, warm_ms = phases.run("calibrate threshold", calibrate)
        t_b = reline_threshold(base_ms)
        threshold = reline_threshold(base_ms, warm_ms)
        result["threshold"] = {
            "t_b_ms": t_b,
            "delta_ms": threshold - t_b,
            "t_ms": threshold,
            "baseline_render_times": int(base_ms.size),
            "warmup_render_times": int(warm_ms.size),
            "paper": PAPER_KART,
        }
    in_force = loaded.replace(threshold_ms=threshold)
    options = game_options(config, threshold_ms=threshold, **load)
    if "reline" in config.agents:
        learn_agent("reline", in_force, writer, options)
    for agent in config.agents:
        if agent not in outs:  # learned through its counted episodes, or to be evaluated now
            evaluate(agent, in_force, writer, options)
    low_fps_points = phases.run(
        "low-FPS analysis",
        lambda _: analysis.low_fps_analysis(
            env.num_cells,
            lambda cells: analysis.cell_centres(env, params, cells),
            threshold,
            outs,
            lambda path_done, centering: analysis.heavy_spots_found(params, path_done, centering),
        ),
    )
    if "rl-baseline" in outs:
        played = (
            outs["rl-baseline"] if "actions" in outs["rl-baseline"] else base
        )  # a learning run keeps no actions
        result["replay_reliability"] = phases.run(
            "replay check", lambda _: _replay_check(config, env, in_force, played)
        )
    heavy_spots = [
        {
            "index": k,
            "path_done": float(p[0]),
            "centering": float(p[1]),
            "on_racing_line": bool(abs(p[1]) <= float(params.half_width)),
        }
        for k, p in enumerate(np.asarray(params.heavy_pos))
    ]
    low_fps = analysis.write_low_fps(
        config,
        low_fps_points,
        threshold,
        out_dir,
        analysis.track_points_plot(
            config.theta, float(params.half_width), float(params.track.length)
        ),
        heavy_spots=heavy_spots,
        replay_reliability=result.get("replay_reliability"),
    )
    result["low_fps"] = {
        a: {
            "count": r["count"],
            "spots_found": r["spots_found"],
            "visits_per_1000_episodes": r["visits_per_1000_episodes"],
            "slow_steps_share": r["slow_steps_share"],
        }
        for a, r in low_fps["per_agent"].items()
    }
    return result


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
    return {
        **replay_reliability(np.asarray(telemetry.frame_time_ms)),
        "episode_steps": int(lengths[episode]),
        "lap_completed": bool(laps.size),
    }
