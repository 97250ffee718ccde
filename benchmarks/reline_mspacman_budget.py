"""What RELINE's full Ms. Pac-Man Table 1 costs under the replication package's protocol, measured
here.

    python benchmarks/reline_mspacman_budget.py --json
    benchmarks/results/reline_mspacman_budget.json

The package's protocol (:mod:`jgtest.methods.reline.host`): one game, one gradient step a
step of the Nature CNN on 32 transitions of 4 stacked 84×84 frames; RELINE trains 1,000
episodes a model and rl-baseline 2,000, 10 models each. This script states, for that table:

* **FLOPs per update**: XLA's own count (``cost_analysis()["flops"]``) of the jitted learner
  step the host loop runs (replay insert, sampling, the loss's forward and backward passes,
  Adam, the target sync), beside a count by hand of the network's multiply-adds
  (:func:`nature_cnn_flops`): forward on the batch, the target network's forward on the next
  observations, the backward pass at twice the forward's cost.
* **Updates per model**: ``episodes × agent steps an episode − 10,000`` (learning starts
  after 10,000 steps; :func:`jgtest.methods.reline.learners.package_table_cost`), at the
  episode length our trained agents reached (:data:`LEARNED_EPISODE_STEPS`) and at the random
  agent's, measured here (the game's intro, 65 no-ops an episode, is not the agent's).
* **Time per 10k updates**, measured: the real training loop (:func:`jgtest.host_loop.train_dqn`
  on the real game, act → step → learn) for ``--updates`` updates after a short warm-up,
  on this machine; from it, hours per model and for the whole table.

``--quick`` measures 1,000 updates (the figure is then scaled to 10k). On a machine with a
GPU, run it there too: the same per-model figure is what decides where the table runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

# as the command line runs
if "--xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    ).strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

#: The agent's steps an episode of a trained Ms. Pac-Man agent: ≈ 700 in our earlier runs
#: (:mod:`jgtest.methods.reline.host`), the game's 65-step intro included, which the package's
#: agents do not play.
LEARNED_EPISODE_STEPS = 635
SEED = 0


def nature_cnn_flops(frames=(84, 84, 4), actions: int = 5) -> int:
    """FLOPs (2 per multiply-add) of one forward pass of Mnih et al.'s (2015) network on one
    observation."""
    h, w, c = frames
    flops = 0
    for filters, kernel, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
        h, w = (h - kernel) // stride + 1, (w - kernel) // stride + 1
        flops += 2 * h * w * filters * kernel * kernel * c
        c = filters
    flops += 2 * h * w * c * 512 + 2 * 512 * actions
    return flops


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="measure 1,000 updates")
    parser.add_argument(
        "--updates",
        type=int,
        default=None,
        help="updates to time (default 10,000; 1,000 with --quick)",
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    updates = args.updates or (1_000 if args.quick else 10_000)
    if "JAX_CPU_ENABLE_ASYNC_DISPATCH" not in os.environ:
        jax.config.update("jax_cpu_enable_async_dispatch", False)  # as the command line runs

    from jgtest import host_loop
    from jgtest.agents import dqn
    from jgtest.methods import reline
    from jgtest.methods.reline.host import PACKAGE_ALE_OPTIONS, PACKAGE_PIPELINE
    from jgtest.methods.reline.learners import (
        PACKAGE_TRAIN_EPISODES,
        TABLE_MODELS,
        package_table_cost,
        random_policy,
    )

    begin = time.perf_counter()
    config = reline.RelineConfig(game="ale:MsPacman")
    learn = reline.learner(config)
    warmup = 1_000
    timed_config = dataclasses.replace(learn.config, learning_starts=warmup)

    # FLOPs of one learner step, as XLA counts them.
    with host_loop.host_game(config.game, num_envs=1, seed=SEED, **PACKAGE_ALE_OPTIONS) as game:
        spec = host_loop.spec_game(game, PACKAGE_PIPELINE)
        agent = dqn.make_agent(timed_config, spec)
        state = jax.jit(agent.init_learner)(
            jax.random.key(SEED), np.zeros((1, 84, 84, 4), np.uint8), learn.hparams
        )
        items = {
            "obs": np.zeros((1, 84, 84, 4), np.uint8),
            "action": np.zeros(1, np.int32),
            "reward": np.zeros(1, np.float32),
            "terminated": np.zeros(1, bool),
            "next_obs": np.zeros((1, 84, 84, 4), np.uint8),
        }
        update = jax.jit(
            lambda s, i, k: agent.update(
                s.replace(timesteps=s.timesteps + warmup), i, k, learn.hparams
            )
        )
        cost = update.lower(state, items, jax.random.key(1)).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        xla_flops = float(cost.get("flops", float("nan")))
        act = jax.jit(lambda p, o, k: agent.act(p, o, k, learn.hparams, state.timesteps).action)
        act_cost = (
            act.lower(state.params, items["obs"], jax.random.key(2)).compile().cost_analysis()
        )
        act_cost = act_cost[0] if isinstance(act_cost, list) else act_cost
        act_flops = float(act_cost.get("flops", float("nan")))
    forward = nature_cnn_flops()
    by_hand = 32 * forward * (1 + 1 + 2)  # online forward, target forward, backward ≈ 2 forwards
    print(
        f"FLOPs per update: XLA {xla_flops / 1e9:.2f} G; by hand {by_hand / 1e9:.2f} G "
        f"(forward {forward / 1e6:.1f} M an observation); acting {act_flops / 1e6:.1f} M a step"
    )

    # The random agent's episode length, measured.
    with host_loop.host_game(config.game, num_envs=8, seed=SEED, **PACKAGE_ALE_OPTIONS) as game:
        out = host_loop.play(
            game, PACKAGE_PIPELINE, random_policy(5), None, 16, jax.random.key(SEED), seed=SEED
        )
    # the agent's steps
    random_steps = float(out["valid"].sum(axis=1).mean()) - PACKAGE_ALE_OPTIONS["intro_steps"]
    print(f"random agent: {random_steps:.0f} steps an episode after the intro (16 episodes)")

    # Time per update: the real training loop, timed by train_dqn itself from step `warmup` on
    # (learning_s).
    with host_loop.host_game(config.game, num_envs=1, seed=SEED, **PACKAGE_ALE_OPTIONS) as game:
        agent = dqn.make_agent(timed_config, host_loop.spec_game(game, PACKAGE_PIPELINE))
        _, stats = host_loop.train_dqn(
            agent,
            game,
            PACKAGE_PIPELINE,
            learn.hparams,
            jax.random.key(SEED),
            warmup + updates,
            seed=SEED,
        )
    timed_updates = stats["learning_steps"]
    per_10k = stats["learning_s"] / timed_updates * 10_000
    print(f"time per 10k updates (act, step, learn): {per_10k:.0f} s ({timed_updates:,} timed)")

    def table(steps_per_episode: float) -> dict:
        costs = {
            agent: package_table_cost(agent, steps_per_episode, per_10k / 10_000)
            for agent in PACKAGE_TRAIN_EPISODES
        }
        updates = sum(c["updates_per_model"] for c in costs.values())
        return {
            "steps_per_episode": steps_per_episode,
            "per_agent": costs,
            "updates_table": TABLE_MODELS * updates,
            "hours_table": sum(c["hours_10_models"] for c in costs.values()),
            "flops_table": TABLE_MODELS * updates * xla_flops,
        }

    budgets = {
        "learned_episodes": table(LEARNED_EPISODE_STEPS),
        "random_length_episodes": table(random_steps),
    }
    for name, b in budgets.items():
        print(
            f"{name} ({b['steps_per_episode']:.0f} steps an episode): updates a model "
            + ", ".join(
                f"{a} {c['updates_per_model'] / 1e6:.2f}M ({c['hours_per_model']:.1f} h)"
                for a, c in b["per_agent"].items()
            )
            + f"; the table {b['updates_table'] / 1e6:.1f}M updates, "
            f"{b['hours_table']:.0f} h here, {b['flops_table'] / 1e15:.1f} PFLOP"
        )
    result = {
        "benchmark": "reline_mspacman_budget",
        "command": "python benchmarks/reline_mspacman_budget.py"
        + (" --quick" if args.quick else ""),
        "seed": SEED,
        "protocol": reline.config.protocol(config),
        "game_options": PACKAGE_ALE_OPTIONS,
        "table_models": TABLE_MODELS,
        "train_episodes": PACKAGE_TRAIN_EPISODES,
        "flops_per_update_xla": xla_flops,
        "flops_per_update_by_hand": by_hand,
        "flops_forward_one_observation": forward,
        "flops_per_act_xla": act_flops,
        "random_steps_per_episode": random_steps,
        "timed_updates": timed_updates,
        "seconds_per_10k_updates": per_10k,
        "budgets": budgets,
        "gpu": None,
        "gpu_note": "no GPU was lent to this run; run the script on one for its per-model figure",
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "devices": [str(d) for d in jax.devices()],
            "jax_version": jax.__version__,
        },
        "wall_s": time.perf_counter() - begin,
    }
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
