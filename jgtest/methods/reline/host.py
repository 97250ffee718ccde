"""RELINE on the real Ms. Pac-Man (ALE through envpool; Tufano et al., 2022, §3).

The experiment of :mod:`jgtest.methods.reline` on a bridged game: the same
DQN (Lapan's settings, :func:`jgtest.agents.dqn.lapan_config`) learning
through the host loop (:mod:`jgtest.host_loop`) with the same jitted
``act``/``learn``, RELINE's reward ``r_g + 50 · #(gates first entered)``
(:func:`jgtest.rewards.bug_bonus_reward`) against rl-baseline (``r_g``, +1 a
dot) and a random agent, then Table 1 (episodes of ``eval_episodes`` with at
least n of the 4 gate bugs) next to the paper's MsPacman row.

Two protocols (:class:`~jgtest.methods.reline.config.RelineConfig`'s ``evaluation``):

**The replication package's** (``evaluation="training"``, the default), which made the
published numbers (``rlgameauthors/rlgameauthors``, ``MsPacman/msPacman_RELINE.py`` and
``msPacman_RL-baseline.py``): ``MsPacmanNoFrameskip-v4``, so no sticky actions (the
bridge's default), through its ``lib/wrappers.py``, which is not in the repository: we take
it to be the book it follows (Lapan, 2018, ch. 6: frame skip 4 with max-pooling, 84×84
grayscale, 4 frames, no reward clipping), as envpool's ``MsPacman-v5`` gives them; the
package's DQN settings on one game, one gradient step a
step (:data:`~jgtest.methods.reline.learners.PACKAGE_ALE_HYPERPARAMS`: ε to 0.01 over 150k
steps); RELINE trains 1,000 episodes and rl-baseline 2,000, and Table 1 counts the last
1,000 training episodes of each model (line 349: ``lines[-1000:]`` of the bug log) — the
model learns while it is counted. The random agent plays as many episodes. ``--quick``
keeps every setting and counts 30 episodes (RELINE trains 30, rl-baseline 60): a run of
minutes that shows the protocol, not the result (ε is still ≈ 0.8–0.9 there).
As there, the game's intro is waited out with 65 no-ops after each reset (``Agent._reset``;
:data:`PACKAGE_ALE_OPTIONS`: Ms. Pac-Man first moves on step 66 whatever is pressed,
``tests/bridges/test_ale.py``): the host loop plays them, keeps them in the episode's trace
so that records replay, and does not count them as the agent's (no transitions, no return,
no step of ε's schedule; one difference: the package's ``_reset`` keeps the reset frame as the
state its first transition starts from, where ours starts from the frames after the intro).
The game reward is ALE's score, as the package's (10 a dot, 50 an energizer, more for ghosts
and fruit; unclipped, as we take its wrappers to be), on which RELINE's +50 a
gate is worth five dots; the paper's text says +1 a dot (§3.1.2), on which +50 is worth fifty
(``evaluation="frozen"`` keeps that). Where we depart from it: the package detects the gates by
comparing 15×30 screen crops at the tunnel mouths with screenshots (SSIM > 0.9,
``check_bug1``–``check_bug4``); here the RAM position does (:mod:`envs_bridge.ale`), and
:class:`envs_bridge.ale_ssim.SsimGates` is the package's check, to compare with.

**The paper's text** (``evaluation="frozen"``): the trained model is frozen and plays
1,000 episodes (§3.1.4), ε-greedily (Lapan's final ε = 0.02), in :data:`EVAL_GAMES` games at once. Its
settings are our earlier ones, chosen for speed where the text is silent: Lapan's DQN, ε over
100k steps, :data:`~jgtest.methods.reline.learners.TRAIN_GAMES` games a learner step with one
gradient step per :data:`~jgtest.methods.reline.learners.TRAIN_INTERVAL` environment steps
(Mnih et al.'s, 2015, update frequency), the target synced every 1,000 environment steps,
:data:`~jgtest.methods.reline.learners.ALE_STEPS` steps a model (the paper's "1,000 episodes"
at ≈ 700 steps each; ``--quick``: fewer, with Mnih et al.'s 2013 network,
:data:`~jgtest.methods.reline.learners.NIPS_CNN`), and Gym ``MsPacman-v0``'s sticky actions
(:data:`ALE_OPTIONS`): without them a frozen model's 1,000 episodes are one trajectory played
1,000 times (ε = 0.02 seldom turns it), and Table 1 counts whether that path crosses a gate
(our first runs without them: 49, 157 and 668 episodes of 1,000 with a gate, all or nothing by
model). A sticky game replays a bug record's trace exactly only as the first episode of a game
seeded as the record's.

Network and cost: the paper's DQN is Mnih et al.'s on 4 stacked 84×84 frames (§3.1.2),
:data:`jgtest.nets.heads.NATURE_CNN`, here computed as patches × kernel (``conv_impl="im2col"``,
the same convolutions, faster on CPU). ``benchmarks/reline_mspacman_budget.py`` states what
the full table costs: FLOPs per update, updates per model and the time per 10k updates here.
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
from jgtest.files import jsonable, write_json_atomically
from jgtest.methods.reline.analysis import bugs_found, table1
from jgtest.methods.reline.config import AGENTS, RelineConfig, eval_seed, protocol
from jgtest.methods.reline.learners import (
    PACKAGE_TRAIN_EPISODES,
    counted_episodes,
    learner,
    package_table_cost,
    package_train_episodes,
    random_policy,
)
from jgtest.methods.reline.phases import Phases
from jgtest.report.records import BugRecord, BugRecordWriter, records_to_resume
from jgtest.rewards import bug_bonus_reward
from jgtest.run_dir import begin_campaign

#: Ms. Pac-Man's options under the paper's text (``evaluation="frozen"``): Gym ``MsPacman-v0``'s sticky actions (module docstring).
ALE_OPTIONS = {"sticky_action_prob": 0.25}
#: Ms. Pac-Man's options under the package's protocol: no sticky actions, the intro waited out with
#: 65 no-ops after every reset (``msPacman_RELINE.py`` and ``msPacman_RL-baseline.py``, ``Agent._reset``)
#: and ALE's score as the game reward (``play_step``: the environment's reward, RELINE's +50 a gate on top).
PACKAGE_ALE_OPTIONS = {"intro_steps": 65, "reward": "score"}
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
    counted = counted_episodes(config)
    with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
        farm = {"on_crash": writer.write, "ray_address": config.ray_address} if config.actors else {}
        game_options = {**(ALE_OPTIONS if config.evaluation == "frozen" else PACKAGE_ALE_OPTIONS), **farm}
        for agent in config.agents:
            found[agent] = []
            for m in range(config.models):
                unit = f"{agent}-{m}"
                if "bugs_found" not in books.get(unit, {}):
                    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), AGENTS.index(agent)), m)
                    seed = eval_seed(config, agent, m)
                    on_bug = _record_writer(config, agent, m, writer, start, written)
                    policy, policy_params, counted_found = random_policy(5), None, None
                    if agent != "random":
                        with Checkpointer(out_dir / "checkpoints" / unit, config_fingerprint({"reline": config, "model": unit}), loop=False) as ckpt:
                            network, policy_params, stats, counted_found = _train(
                                config, agent, m, dqn_config, hparams, key, seed, phases, game_options, ckpt,
                                books.get(unit, {}).get("training"), on_bug,
                            )  # fmt: skip
                        policy = learn.policy(network)
                        books[unit] = {"training": stats}
                        if counted_found is None:  # frozen: the trained model is kept before its evaluation
                            write_json_atomically(books_path, books)
                    if counted_found is None:  # frozen weights, or the random agent: play the counted episodes
                        out = _evaluate(config, agent, m, policy, policy_params, key, seed, phases, on_bug, game_options, counted)
                        one_model = {"telemetry": jax.tree.map(lambda x: x[None], out["telemetry"]), "valid": out["valid"][None]}
                        counted_found = bugs_found(one_model)[0]
                    books[unit] = {**books.get(unit, {}), "bugs_found": np.asarray(counted_found).tolist()}
                    write_json_atomically(books_path, books)
                if "training" in books[unit]:
                    curves.setdefault(agent, []).append(books[unit]["training"])
                found[agent].append(np.asarray(books[unit]["bugs_found"]))
    rows = table1(config, {a: np.stack(f) for a, f in found.items()})
    write_json_atomically(out_dir / "table1.json", {"protocol": protocol(config), "table1": rows})
    summary: dict[str, Any] = {
        "method": "reline", "game": config.game, "models": config.models, "eval_episodes": counted, "protocol": protocol(config),
        "learner": "DQNConfig", "train_steps": dqn_config.total_timesteps, "table1": rows,
        "training": curves, "phases_s": phases.wall_s, "wall_s": round(time.perf_counter() - start, 2),
    }  # fmt: skip
    if config.evaluation == "training":
        summary["full_table_budget"] = full_table_budget(config, books)
    write_json_atomically(out_dir / "summary.json", summary)
    return summary


def full_table_budget(config: RelineConfig, books: dict) -> dict:
    """What the package's full table would cost at this run's own speed: for each learning agent,
    its learned models' steps an episode and seconds a step once they learned (act, step, one
    gradient step: ``train_dqn``'s ``learning_s`` over ``learning_steps``), through
    :func:`~jgtest.methods.reline.learners.package_table_cost`. The episodes of a short run are an
    exploring agent's (shorter than a trained one's): ``benchmarks/reline_mspacman_budget.py``
    states the table at both lengths."""
    budget = {}
    for agent in PACKAGE_TRAIN_EPISODES:
        learned = [books[f"{agent}-{m}"]["training"] for m in range(config.models)
                   if books.get(f"{agent}-{m}", {}).get("training", {}).get("learning_steps")]  # fmt: skip
        if learned:
            steps_per_episode = sum(t["steps"] for t in learned) / sum(t["episodes"] for t in learned)
            seconds_per_update = sum(t["learning_s"] for t in learned) / sum(t["learning_steps"] for t in learned)
            budget[agent] = package_table_cost(agent, steps_per_episode, seconds_per_update)
    return budget


def _train(config, agent, model, dqn_config, hparams, key, seed, phases, game_options, ckpt: Checkpointer, stats=None, on_bug=None):
    """Trains one model through the host loop, or restores it from ``ckpt`` when it was trained
    (``stats``: its training figures then): ``(network, params, training figures, counted)``.

    Under the package's protocol (``evaluation="training"``) the model trains for
    :func:`~jgtest.methods.reline.learners.package_train_episodes` episodes and ``counted`` is
    which gates showed in each of the last :func:`~jgtest.methods.reline.learners.counted_episodes`
    (Table 1's episodes; ``on_bug`` writes each bug's first showing as found); else ``None``.
    """
    with host_loop.host_game(config.game, num_envs=dqn_config.num_envs, seed=seed + 50_000, actors=config.actors, **game_options) as game:
        spec, spec_params = host_loop.spec_game(game, PIPELINE)
        trainer = dqn.make_agent(dqn_config, (spec, spec_params))
        if ckpt.latest_step() is not None and stats is not None:
            obs = jax.ShapeDtypeStruct(spec.observation_space(spec_params).shape, np.float32)
            return trainer.network, ckpt.restore(jax.eval_shape(trainer.network.init, key, obs)), stats, None
        reward = None if agent == "rl-baseline" else (
            lambda r, terminated, info: np.asarray(bug_bonus_reward(info["telemetry"].game_reward, info["telemetry"].bugs_fired)))
        learning = config.evaluation == "training"
        episodes = package_train_episodes(config, agent) if learning else None
        state, stats = phases.run(f"train {agent} {model}", lambda report: host_loop.train_dqn(
            trainer, game, PIPELINE, hparams, key, dqn_config.total_timesteps, reward, seed=seed + 50_000, on_progress=report,
            max_episodes=episodes, on_bug=on_bug if learning else None))  # fmt: skip
    returns = stats["episode_return"]
    counted = stats["episode_bugs_found"][-counted_episodes(config):] if learning else None
    summary = {"episodes": int(returns.size), "steps": int(state.timesteps),
               "return_last_10_mean": float(returns[-10:].mean()) if returns.size else None,
               "bugs_last_10_mean": float(stats["episode_bugs"][-10:].mean()) if returns.size else None,
               **{k: stats[k] for k in ("learning_s", "learning_steps") if k in stats}}  # fmt: skip
    if learning and returns.size < episodes:
        raise RuntimeError(f"{agent} model {model} ended {returns.size} of its {episodes} training episodes within "
                           f"train_steps={dqn_config.total_timesteps}: raise train_steps")  # fmt: skip
    ckpt.save(1, state.params)
    return trainer.network, state.params, summary, counted


def _record_writer(config, agent, model, writer, start, written=frozenset()):
    """``on_bug`` for :func:`jgtest.host_loop.play` and ``train_dqn``: each bug's first showing for the
    model is written as a record at once (unless its record is in ``written``: written before a
    resumed run was stopped)."""

    def on_bug(fields):
        detail = f"{agent} model {model}: gate bug {fields['bug_id']} showed"
        if detail in written:
            return
        writer.write(BugRecord(
            kind="low_fps", game=config.game, bug_id=fields["bug_id"], step=fields["step"], episode=fields["episode"],
            seed=fields["seed"], env_index=fields["env_index"], actions=fields["actions"], position=fields["position"],
            wall_s=round(time.perf_counter() - start, 3), detail=detail,
        ))  # fmt: skip

    return on_bug


def _evaluate(config, agent, model, policy, policy_params, key, seed, phases, on_bug, game_options, num_episodes):
    """Plays ``num_episodes`` episodes of the policy, its bugs reported to ``on_bug`` as they first show."""
    num_envs = config.actors or EVAL_GAMES
    with host_loop.host_game(config.game, num_envs=num_envs, seed=seed, actors=config.actors, **game_options) as game:
        return phases.run(f"evaluate {agent} {model}", lambda report: host_loop.play(
            game, PIPELINE, policy, policy_params, num_episodes, jax.random.fold_in(key, 1), seed=seed,
            on_bug=on_bug, on_progress=report))  # fmt: skip
