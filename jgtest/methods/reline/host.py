"""RELINE on the real Ms. Pac-Man (ALE through envpool; Tufano et al., 2022, §3).

The experiment of :mod:`jgtest.methods.reline` on a bridged game: the same
DQN (Lapan's settings, :func:`jgtest.agents.dqn.lapan_config`) learning
through the host loop (:mod:`jgtest.host_loop`) with the same jitted
``act``/``learn``, RELINE's reward ``r_g + 50 · #(gates first entered)``
(:func:`jgtest.rewards.bug_bonus_reward`) against rl-baseline (``r_g``, +1 a
dot) and a random agent, then Table 1 (episodes of ``eval_episodes`` with at
least n of the 4 gate bugs) next to the paper's MsPacman row.

Network and budget: the paper's DQN is Mnih et al.'s on 4 stacked 84×84
frames (§3.1.2), :data:`jgtest.nets.heads.NATURE_CNN`, here computed as
patches × kernel (``conv_impl="im2col"``, the same convolutions, faster on
CPU). It trained "1,000 episodes" per model (§3.1.4), ≈ 700k steps at the
≈ 700 steps a learning agent's episode lasts (:data:`~jgtest.methods.reline.learners.ALE_STEPS`).

Where we depart from the paper, for speed: its DQN "starts updating at each
step" (§3.1.2, one game); ours steps :data:`~jgtest.methods.reline.learners.TRAIN_GAMES` games at once and
takes one gradient step (batch 32) per 4 environment steps, Mnih et al.'s
(2015) update frequency (4 games a learner step also cut the host loop's
per-step dispatches 4×); the target network still syncs every
1,000 environment steps, Lapan's period in steps (250 gradient steps here,
1,000 in Lapan's). The paper's 84×84 frames and network come from the works
it cites for its DQN (Mnih et al., 2013 and 2015; §3.1.2 says 4 stacked
screenshots). Measured on 2 CPU cores through
:func:`jgtest.host_loop.train_dqn`: ≈ 14 ms an environment step with the
Nature CNN, ≈ 9.4 ms with :data:`~jgtest.methods.reline.learners.NIPS_CNN`; one model at the paper's budget
is therefore ≈ 2.7 hours there, ten models per agent a GPU's job.
``--quick`` is the budget a 2-core CPU runs in ≈ 25 min of training per
learning agent (46 min with another agent training beside it) plus ≈ 5 min
of evaluation: :data:`~jgtest.methods.reline.learners.ALE_STEPS`' second value, Mnih et al.'s (2013) smaller network
(:data:`~jgtest.methods.reline.learners.NIPS_CNN`), one model per agent (unless ``--models`` says otherwise),
1,000 evaluation episodes as the paper. Evaluation plays the trained model
ε-greedily (Lapan's final ε = 0.02), as on device, in :data:`EVAL_GAMES`
games at once.

The game is stochastic as the paper's: Gym's ``MsPacman-v0`` (§3.1) repeated
the agent's previous action with probability 0.25 (:data:`ALE_OPTIONS`). The
bridge's default, a deterministic ALE, would make a trained model's 1,000
evaluation episodes one trajectory played 1,000 times (ε = 0.02 seldom turns
it), so Table 1 would count whether that one path crosses a gate: our first
``--quick`` runs without it gave 49 (RELINE), 157 (its second seed) and 668
(rl-baseline) episodes of 1,000 with a gate, all or nothing by model; with it,
82, 100 and 29 for random (the paper's random: 24). The price: ALE draws the
repeats from its game's generator, seeded once, so a bug record's action trace
replays exactly only as the first episode of a game seeded as the record's (the
deterministic default replays any).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jgtest import host_loop
from jgtest.agents import dqn
from jgtest.checkpoint import Checkpointer, config_fingerprint
from jgtest.envs.wrappers import ObservationPipeline
from jgtest.methods.reline.analysis import bugs_found, table1
from jgtest.methods.reline.config import AGENTS, RelineConfig, eval_seed, protocol
from jgtest.methods.reline.learners import learner, random_policy
from jgtest.methods.reline.phases import Phases
from jgtest.report.records import BugRecord, BugRecordWriter, jsonable, records_to_resume
from jgtest.rewards import bug_bonus_reward
from jgtest.run_dir import begin_campaign

#: Ms. Pac-Man's options for RELINE: Gym ``MsPacman-v0``'s sticky actions (module docstring).
ALE_OPTIONS = {"sticky_action_prob": 0.25}
#: Games played at once in evaluation (a model's policy is fixed there).
EVAL_GAMES = 8
#: Mnih et al.'s frames: grayscale 84×84, 4 stacked (RELINE §3.1.2).
PIPELINE = ObservationPipeline(size=(84, 84), num_frames=4)


def run(config: RelineConfig, out_dir: str | Path, progress=None, resume: bool = False) -> dict:
    """Runs RELINE's Table 1 experiment on a bridged game (see :func:`jgtest.methods.reline.run`
    for the files written); bug records are written the moment each bug first shows for a model.

    Each model's trained parameters are saved with orbax as its training ends
    (``checkpoints/AGENT-MODEL``), and its training figures and bugs found as its evaluation ends
    (``models.json``); ``resume`` skips what is done: a model evaluated is not played again, a
    model trained is evaluated from its checkpoint, and no record is written twice. (The replay
    buffer is not kept: a model stopped mid-training trains again from its start.)
    """
    out_dir, start = Path(out_dir), time.perf_counter()
    phases = Phases(progress)
    learn = learner(config)
    dqn_config, hparams = learn.config, learn.hparams
    begin_campaign(out_dir, {"method": "reline", **dataclasses.asdict(config), "learner": jsonable(dataclasses.asdict(dqn_config))}, None, resume)
    books_path = out_dir / "models.json"
    if not resume:
        shutil.rmtree(out_dir / "checkpoints", ignore_errors=True)
        books_path.unlink(missing_ok=True)
    books = json.loads(books_path.read_text()) if books_path.exists() else {}
    written = {r.detail for r in records_to_resume(out_dir, resume)}
    found: dict[str, list[np.ndarray]] = {}
    curves: dict[str, list[dict]] = {}
    with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
        farm = {"on_crash": writer.write, "ray_address": config.ray_address} if config.actors else {}
        game_options = {**ALE_OPTIONS, **farm}
        for agent in config.agents:
            found[agent] = []
            for m in range(config.models):
                unit = f"{agent}-{m}"
                if "bugs_found" not in books.get(unit, {}):
                    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), AGENTS.index(agent)), m)
                    seed = eval_seed(config, agent, m)
                    policy, policy_params = random_policy(5), None
                    if agent != "random":
                        with Checkpointer(out_dir / "checkpoints" / unit, config_fingerprint({"reline": config, "model": unit})) as ckpt:
                            network, policy_params, stats = _train(config, agent, m, dqn_config, hparams, key, seed, phases, game_options, ckpt,
                                                                   books.get(unit, {}).get("training"))  # fmt: skip
                        policy = learn.policy(network)
                        books[unit] = {"training": stats}
                        books_path.write_text(json.dumps(jsonable(books), indent=2))
                    out = _evaluate(config, agent, m, policy, policy_params, key, seed, phases, writer, start, game_options, written)
                    one_model = {"telemetry": jax.tree.map(lambda x: x[None], out["telemetry"]), "valid": out["valid"][None]}
                    books[unit] = {**books.get(unit, {}), "bugs_found": bugs_found(one_model)[0].tolist()}
                    books_path.write_text(json.dumps(jsonable(books), indent=2))
                if "training" in books[unit]:
                    curves.setdefault(agent, []).append(books[unit]["training"])
                found[agent].append(np.asarray(books[unit]["bugs_found"]))
    rows = table1(config, {a: np.stack(f) for a, f in found.items()})
    (out_dir / "table1.json").write_text(json.dumps(jsonable({"protocol": protocol(config), "table1": rows}), indent=2))
    summary: dict[str, Any] = {
        "method": "reline", "game": config.game, "models": config.models, "eval_episodes": config.eval_episodes, "protocol": protocol(config),
        "learner": "DQNConfig", "train_steps": dqn_config.total_timesteps, "table1": rows,
        "training": curves, "phases_s": phases.wall_s, "wall_s": round(time.perf_counter() - start, 2),
    }  # fmt: skip
    (out_dir / "summary.json").write_text(json.dumps(jsonable(summary), indent=2))
    return summary


def _train(config, agent, model, dqn_config, hparams, key, seed, phases, game_options, ckpt: Checkpointer, stats=None):
    """Trains one model through the host loop, or restores it from ``ckpt`` when it was trained
    (``stats``: its training figures then): ``(network, params, training figures)``."""
    with host_loop.host_game(config.game, num_envs=dqn_config.num_envs, seed=seed + 50_000, actors=config.actors, **game_options) as game:
        spec, spec_params = host_loop.spec_game(game, PIPELINE)
        trainer = dqn.make_agent(dqn_config, (spec, spec_params))
        if ckpt.latest_step() is not None and stats is not None:
            obs = jax.ShapeDtypeStruct(spec.observation_space(spec_params).shape, np.float32)
            return trainer.network, ckpt.restore(jax.eval_shape(trainer.network.init, key, obs)), stats
        reward = None if agent == "rl-baseline" else (
            lambda r, terminated, info: np.asarray(bug_bonus_reward(info["telemetry"].game_reward, info["telemetry"].bugs_fired)))
        state, stats = phases.run(f"train {agent} {model}", lambda report: host_loop.train_dqn(
            trainer, game, PIPELINE, hparams, key, dqn_config.total_timesteps, reward, seed=seed + 50_000, on_progress=report))  # fmt: skip
    episodes = stats["episode_return"]
    summary = {"episodes": int(episodes.size), "return_last_10_mean": float(episodes[-10:].mean()) if episodes.size else None,
               "bugs_last_10_mean": float(stats["episode_bugs"][-10:].mean()) if episodes.size else None}  # fmt: skip
    ckpt.save(1, state.params)
    return trainer.network, state.params, summary


def _evaluate(config, agent, model, policy, policy_params, key, seed, phases, writer, start, game_options, written=frozenset()):
    """Plays ``eval_episodes`` episodes; each bug's first showing is written as a record at once
    (unless its record is in ``written``: written before a resumed run was stopped)."""
    num_envs = config.actors or EVAL_GAMES

    def on_bug(fields):
        detail = f"{agent} model {model}: gate bug {fields['bug_id']} showed"
        if detail in written:
            return
        writer.write(BugRecord(
            kind="low_fps", game=config.game, bug_id=fields["bug_id"], step=fields["step"], episode=fields["episode"],
            seed=fields["seed"], env_index=fields["env_index"], actions=fields["actions"], position=fields["position"],
            wall_s=round(time.perf_counter() - start, 3), detail=detail,
        ))  # fmt: skip

    with host_loop.host_game(config.game, num_envs=num_envs, seed=seed, actors=config.actors, **game_options) as game:
        return phases.run(f"evaluate {agent} {model}", lambda report: host_loop.play(
            game, PIPELINE, policy, policy_params, config.eval_episodes, jax.random.fold_in(key, 1), seed=seed,
            on_bug=on_bug, on_progress=report))  # fmt: skip
