"""Env steps/s of every game under jit(vmap) + lax.scan, against Gymnasium's CartPole-v1
stepped in a Python loop (the way the papers worked), on the same machine in the same run.

    python benchmarks/env_throughput.py --quick --json results/env_throughput.json

The batch is sharded over all local devices (``jax.sharding``; on CPU, one
host device per core) whenever it divides evenly. Each measurement runs a random policy for ``steps`` steps per environment inside
one ``lax.scan`` (auto-reset included) after a warm-up call that compiles, and
reports ``batch * steps / seconds``. The JSON holds every row and
``speedup_vs_gymnasium``: ``CartPoleBugs-v0`` at the largest batch over the
Gymnasium loop.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

# One XLA host device per core, so the env batch is split across cores (XLA's CPU
# backend runs one small-kernel program mostly on one thread). Must precede jax's import.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + f" --xla_force_host_platform_device_count={os.cpu_count()} --xla_cpu_multi_thread_eigen=false"
).strip()

import jax
import jax.numpy as jnp
import numpy as np

import jgtest

FULL_BATCHES = (1, 4, 16, 64, 256, 1024, 4096)
QUICK_BATCHES = (1, 64, 4096)


def jax_steps_per_second(name: str, batch: int, steps: int, repeats: int) -> float:
    """Best-of-``repeats`` steps/s of ``batch`` copies of ``name`` for ``steps`` scanned steps."""
    env, params = jgtest.make(name)

    def run(keys):
        def one(k):
            k_reset, k_run = jax.random.split(k)
            obs, state = env.reset(k_reset, params)

            def body(carry, k_t):
                state, checksum = carry
                k_act, k_step = jax.random.split(k_t)
                action = env.action_space(params).sample(k_act)
                _, state, reward, _, _, _ = env.step(k_step, state, action, params)
                return (state, checksum + reward), None

            (state, checksum), _ = jax.lax.scan(body, (state, jnp.float32(0)), jax.random.split(k_run, steps))
            return checksum

        return jax.vmap(one)(keys)

    devices = jax.devices()
    n_shards = len(devices) if batch % len(devices) == 0 else 1
    sharding = jax.sharding.NamedSharding(jax.sharding.Mesh(devices[:n_shards], ("env",)), jax.sharding.PartitionSpec("env"))
    keys = [jax.device_put(jax.random.split(jax.random.key(r), batch), sharding) for r in range(repeats + 1)]
    run = jax.jit(run)
    run(keys[0]).block_until_ready()  # compile
    best = float("inf")
    for r in range(repeats):
        start = time.perf_counter()
        run(keys[r + 1]).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return batch * steps / best


def gymnasium_steps_per_second(total_steps: int, repeats: int) -> float:
    """Best-of-``repeats`` steps/s of Gymnasium CartPole-v1 in a Python loop, random actions."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.action_space.seed(0)
    best = float("inf")
    for r in range(repeats):
        env.reset(seed=r)
        start = time.perf_counter()
        for _ in range(total_steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        best = min(best, time.perf_counter() - start)
    return total_steps / best


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer batch sizes and steps")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--games", nargs="*", default=None, help="games to measure (default: all registered)")
    args = parser.parse_args(argv)
    batches = QUICK_BATCHES if args.quick else FULL_BATCHES
    steps = 200 if args.quick else 500
    repeats = 2 if args.quick else 3
    games = args.games or list(jgtest.registered_games())

    gym_sps = gymnasium_steps_per_second(20_000 if args.quick else 100_000, repeats)
    rows = [{"game": "Gymnasium CartPole-v1 (Python loop)", "batch": 1, "steps_per_s": gym_sps, "speedup_vs_gymnasium": 1.0}]
    print(f"{'game':38s} {'batch':>6s} {'steps/s':>14s} {'× gymnasium':>12s}")
    print(f"{rows[0]['game']:38s} {1:>6d} {gym_sps:>14,.0f} {1.0:>12.1f}")
    for name in games:
        for batch in batches:
            sps = jax_steps_per_second(name, batch, steps, repeats)
            rows.append({"game": name, "batch": batch, "steps_per_s": sps, "speedup_vs_gymnasium": sps / gym_sps})
            print(f"{name:38s} {batch:>6d} {sps:>14,.0f} {sps / gym_sps:>12.1f}", flush=True)

    cartpole = [r for r in rows if r["game"] == "CartPoleBugs-v0" and r["batch"] == max(batches)]
    result = {
        "benchmark": "env_throughput",
        "quick": args.quick,
        "devices": [str(d) for d in jax.devices()],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "jax_version": jax.__version__,
        "steps_per_measurement": steps,
        "rows": rows,
        "gymnasium_steps_per_s": gym_sps,
        "speedup_vs_gymnasium": cartpole[0]["speedup_vs_gymnasium"] if cartpole else None,
    }
    if result["speedup_vs_gymnasium"] is not None:
        print(f"\nCartPoleBugs-v0 at batch {max(batches)}: {result['speedup_vs_gymnasium']:.0f}× Gymnasium's Python loop")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
