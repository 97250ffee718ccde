"""RELINE's Table 1 on the real Ms. Pac-Man (ALE through envpool; Tufano et al., 2022, §3).

:func:`run_host_game`: the DQN learns through :mod:`jgtest.host_loop` on
``r_g + 50 · #(gates first entered)`` (§3.1.3), beside rl-baseline and a random agent.

* chosen: the replication package's protocol by default (``evaluation="training"``), because
  it made the published numbers; ``"frozen"`` follows the paper's text (§3.1.4).
* chosen: the package's reward and frames by default (``lib/wrappers.py``: the score's sign;
  the screen resized to 110 × 84, rows 18-102 kept, 4 stacked), Mnih et al.'s 84 × 84 under the
  paper's text.
* chosen: the gates read from RAM (:mod:`envs_bridge.ale`); the package's screen check is
  :class:`envs_bridge.ale_ssim.SsimGates`, to compare.

Both protocols in full: ``docs/methods/reline.md``.
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
from jgtest.records import BugRecord, BugRecordWriter, records_to_resume
from jgtest.rewards import bug_bonus_reward
from jgtest.run_dir import begin_campaign

#: Ms. Pac-Man's options under the paper's text (``evaluation="frozen"``): Gym ``MsPacman-v0``'s
#: sticky actions (without them a frozen model's episodes are one trajectory played again and
#: again).
ALE_OPTIONS = {"sticky_action_prob": 0.25}
#: Ms. Pac-Man's options under the package's protocol: no sticky actions, the intro waited out with
#: 65 no-ops after every reset (``msPacman_RELINE.py`` and ``msPacman_RL-baseline.py``,
#: ``Agent._reset``) and the sign of ALE's score as the game reward (``play_step``: the wrapped
#: environment's reward, clipped by ``lib/wrappers.py``'s ``ClipRewardEnv``; RELINE's +50 a gate
#: on top).
PACKAGE_ALE_OPTIONS = {"intro_steps": 65, "reward": "sign", "frame_size": (110, 84)}
#: Games played at once in evaluation (a model's policy is fixed there).
EVAL_GAMES = 8
#: Mnih et al.'s frames: grayscale 84×84, 4 stacked (RELINE §3.1.2).
PIPELINE = ObservationPipeline(size=(84, 84), num_frames=4)
#: The package's frames (``lib/wrappers.py``, ``ProcessFrame84``): the screen resized to 110 × 84
#: (envpool's area interpolation, as its ``cv2.INTER_AREA``) and rows 18-102 kept, 4 stacked.
PACKAGE_PIPELINE = ObservationPipeline(size=(110, 84), num_frames=4, crop_rows=(18, 102))


def pipeline(config: RelineConfig) -> ObservationPipeline:
    """The frames the agent sees: the package's (:data:`PACKAGE_PIPELINE`) under its protocol,
    Mnih et al.'s (:data:`PIPELINE`) under the paper's text."""
    return PIPELINE if config.evaluation == "frozen" else PACKAGE_PIPELINE


def run_host_game(
    config: RelineConfig, out_dir: str | Path, progress=None, resume: bool = False
) -> dict:
    """Runs RELINE's Table 1 experiment on a bridged game (see :func:`jgtest.methods.reline.run`
    for the files written); bug records are written the moment each bug first shows for a model.

    Under the replication package's protocol (``evaluation="training"``, the default) each model
    learns on one game with a gradient step a step for 2,000 episodes, 1,000 + 1,000
    (:func:`~jgtest.methods.reline.learners.package_train_episodes`), and Table 1 counts its
    last training episodes (:func:`~jgtest.methods.reline.learners.counted_episodes`: the
    package's 1,000, ``--quick`` 30); the random agent plays as many. The game's intro is waited out
    with 65 no-ops after each reset (:data:`PACKAGE_ALE_OPTIONS`) and the game reward is the
    sign of ALE's score. Under the paper's text (``evaluation="frozen"``) each trained model is
    frozen and plays ``eval_episodes`` episodes ε-greedily in :data:`EVAL_GAMES` games at once,
    with sticky actions (:data:`ALE_OPTIONS`).

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
    begin_campaign(
        out_dir,
        {
            "method": "reline",
            **dataclasses.asdict(config),
            "learner": jsonable(dataclasses.asdict(dqn_config)),
        },
        None,
        resume,
    )
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
        farm = (
            {"on_crash": writer.write, "ray_address": config.ray_address} if config.actors else {}
        )
        game_options = {
            **(ALE_OPTIONS if config.evaluation == "frozen" else PACKAGE_ALE_OPTIONS),
            **farm,
        }
        for agent in config.agents:
            found[agent] = []
            for m in range(config.models):
                unit = f"{agent}-{m}"
                if "bugs_found" not in books.get(unit, {}):
                    key = jax.random.fold_in(
                        jax.random.fold_in(jax.random.key(config.seed), AGENTS.index(agent)), m
                    )
                    model_run = _ModelRun(
                        config,
                        agent,
                        m,
                        key,
                        eval_seed(config, agent, m),
                        game_options,
                        phases,
                        _record_writer(config, agent, m, writer, start, written),
                    )
                    policy, policy_params, counted_found = random_policy(5), None, None
                    if agent != "random":
                        with Checkpointer(
                            out_dir / "checkpoints" / unit,
                            config_fingerprint({"reline": config, "model": unit}),
                            loop=False,
                        ) as ckpt:
                            network, policy_params, stats, counted_found = model_run.train(
                                dqn_config, hparams, ckpt, books.get(unit, {}).get("training")
                            )
                        policy = learn.policy(network)
                        books[unit] = {"training": stats}
                        if (
                            counted_found is None
                        ):  # frozen: the trained model is kept before its evaluation
                            write_json_atomically(books_path, books)
                    if (
                        counted_found is None
                    ):  # frozen weights, or the random agent: play the counted episodes
                        out = model_run.evaluate(policy, policy_params, counted)
                        one_model = {
                            "telemetry": jax.tree.map(lambda x: x[None], out["telemetry"]),
                            "valid": out["valid"][None],
                        }
                        counted_found = bugs_found(one_model)[0]
                    books[unit] = {
                        **books.get(unit, {}),
                        "bugs_found": np.asarray(counted_found).tolist(),
                    }
                    write_json_atomically(books_path, books)
                if "training" in books[unit]:
                    curves.setdefault(agent, []).append(books[unit]["training"])
                found[agent].append(np.asarray(books[unit]["bugs_found"]))
    rows = table1(config, {a: np.stack(f) for a, f in found.items()})
    write_json_atomically(out_dir / "table1.json", {"protocol": protocol(config), "table1": rows})
    summary: dict[str, Any] = {
        "method": "reline",
        "game": config.game,
        "models": config.models,
        "eval_episodes": counted,
        "protocol": protocol(config),
        "learner": "DQNConfig",
        "train_steps": dqn_config.total_timesteps,
        "table1": rows,
        "training": curves,
        "phases_s": phases.wall_s,
        "wall_s": round(time.perf_counter() - start, 2),
    }
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
        learned = [
            books[f"{agent}-{m}"]["training"]
            for m in range(config.models)
            if books.get(f"{agent}-{m}", {}).get("training", {}).get("learning_steps")
        ]
        if learned:
            steps_per_episode = sum(t["steps"] for t in learned) / sum(
                t["episodes"] for t in learned
            )
            seconds_per_update = sum(t["learning_s"] for t in learned) / sum(
                t["learning_steps"] for t in learned
            )
            budget[agent] = package_table_cost(agent, steps_per_episode, seconds_per_update)
    return budget


@dataclasses.dataclass(frozen=True)
class _ModelRun:
    """One model's games in :func:`run_host_game`: its agent and index, its key and seed, the
    games' options, the run's phases, and ``on_bug`` writing its bugs' records
    (:func:`_record_writer`)."""

    config: RelineConfig
    agent: str
    model: int
    key: jax.Array
    seed: int
    game_options: dict
    phases: Phases
    on_bug: Callable

    def host_game(self, num_envs: int, seed: int):
        """The model's bridged games (:func:`jgtest.host_loop.host_game`)."""
        return host_loop.host_game(
            self.config.game,
            num_envs=num_envs,
            seed=seed,
            actors=self.config.actors,
            **self.game_options,
        )

    def train(self, dqn_config, hparams, ckpt: Checkpointer, stats=None):
        """Trains the model through the host loop, or restores it from ``ckpt`` when it was trained
        (``stats``: its training figures then): ``(network, params, training figures, counted)``.

        Under the package's protocol (``evaluation="training"``) the model trains for
        :func:`~jgtest.methods.reline.learners.package_train_episodes` episodes and ``counted`` is
        which gates showed in each of the last
        :func:`~jgtest.methods.reline.learners.counted_episodes` (Table 1's episodes; ``on_bug``
        writes each bug's first showing as found); else ``None``.
        """
        config, agent, model, key, seed = self.config, self.agent, self.model, self.key, self.seed
        with self.host_game(dqn_config.num_envs, seed + 50_000) as game:
            spec, spec_params = host_loop.spec_game(game, pipeline(config))
            trainer = dqn.make_agent(dqn_config, (spec, spec_params))
            if ckpt.latest_step() is not None and stats is not None:
                obs = jax.ShapeDtypeStruct(spec.observation_space(spec_params).shape, np.float32)
                return (
                    trainer.network,
                    ckpt.restore(jax.eval_shape(trainer.network.init, key, obs)),
                    stats,
                    None,
                )
            reward = (
                None
                if agent == "rl-baseline"
                else (
                    lambda r, terminated, info: np.asarray(
                        bug_bonus_reward(
                            info["telemetry"].game_reward, info["telemetry"].bugs_fired
                        )
                    )
                )
            )
            learning = config.evaluation == "training"
            episodes = package_train_episodes(config, agent) if learning else None
            state, stats = self.phases.run(
                f"train {agent} {model}",
                lambda report: host_loop.train_dqn(
                    trainer,
                    game,
                    pipeline(config),
                    hparams,
                    key,
                    dqn_config.total_timesteps,
                    reward,
                    seed=seed + 50_000,
                    on_progress=report,
                    max_episodes=episodes,
                    on_bug=self.on_bug if learning else None,
                ),
            )
        returns = stats["episode_return"]
        counted = stats["episode_bugs_found"][-counted_episodes(config) :] if learning else None
        summary = {
            "episodes": int(returns.size),
            "steps": int(state.timesteps),
            "return_last_10_mean": float(returns[-10:].mean()) if returns.size else None,
            "bugs_last_10_mean": float(stats["episode_bugs"][-10:].mean())
            if returns.size
            else None,
            **{k: stats[k] for k in ("learning_s", "learning_steps") if k in stats},
        }
        if learning and returns.size < episodes:
            raise RuntimeError(
                f"{agent} model {model} ended {returns.size} of its {episodes} training episodes "
                "within "
                f"train_steps={dqn_config.total_timesteps}: raise train_steps"
            )
        ckpt.save(1, state.params)
        return trainer.network, state.params, summary, counted

    def evaluate(self, policy, policy_params, num_episodes):
        """Plays ``num_episodes`` episodes of the policy, its bugs reported to ``on_bug`` as they
        first show."""
        with self.host_game(self.config.actors or EVAL_GAMES, self.seed) as game:
            return self.phases.run(
                f"evaluate {self.agent} {self.model}",
                lambda report: host_loop.play(
                    game,
                    pipeline(self.config),
                    policy,
                    policy_params,
                    num_episodes,
                    jax.random.fold_in(self.key, 1),
                    seed=self.seed,
                    on_bug=self.on_bug,
                    on_progress=report,
                ),
            )


def _record_writer(config, agent, model, writer, start, written=frozenset()):
    """``on_bug`` for :func:`jgtest.host_loop.play` and ``train_dqn``: each bug's first showing for
    the model is written as a record at once (unless its record is in ``written``: written before a
    resumed run was stopped)."""

    def on_bug(fields):
        detail = f"{agent} model {model}: gate bug {fields['bug_id']} showed"
        if detail in written:
            return
        writer.write(
            BugRecord(
                kind="low_fps",
                game=config.game,
                bug_id=fields["bug_id"],
                step=fields["step"],
                episode=fields["episode"],
                seed=fields["seed"],
                env_index=fields["env_index"],
                actions=fields["actions"],
                position=fields["position"],
                wall_s=round(time.perf_counter() - start, 3),
                detail=detail,
            )
        )

    return on_bug
