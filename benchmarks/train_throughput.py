"""PPO training throughput: jgtest on device vs Stable-Baselines3 (PyTorch, CPU), same machine, same run.

    pip install -e '.[bench]'        # torch 2.13.0 (CPU) and stable-baselines3
    python benchmarks/train_throughput.py --quick --json benchmarks/results/train_throughput_quick.json

Both train PPO on CartPole (jgtest: ``CartPoleBugs-v0`` with the game reward
only, capped at 500 steps like ``CartPole-v1``; SB3: Gymnasium ``CartPole-v1``)
with the same PPO settings (PureJaxRL's: 4 envs × 128 steps, 4 epochs × 4
minibatches, lr 2.5e-4 annealed, γ 0.99, λ 0.95, clip 0.2, entropy 0.01) and the
same budget per seed. Measured:

* **time to 475**: training seconds until the first evaluation whose mean
  return reaches 475 (jgtest: 1 seed, period by period, compile time excluded
  and reported apart; SB3: its evaluation time excluded);
* **env steps/s including updates**: jgtest with 1 seed and with ``--seeds``
  seeds vmapped (aggregate; the seed axis is sharded over one XLA host device
  per core), SB3 with 1 seed (PyTorch's default threads).

The JSON has ``speedup_vs_sb3`` (vmapped aggregate steps/s over SB3's),
``single_seed_speedup_vs_sb3`` and both times to 475.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

# One XLA host device per core: the vmapped seeds are sharded across cores (XLA's CPU
# backend runs one program mostly on one thread). Must precede jax's import.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + f" --xla_force_host_platform_device_count={os.cpu_count()} --xla_cpu_multi_thread_eigen=false"
).strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.sb3_baseline import MATCHED, sb3_ppo_cartpole  # noqa: E402
from jgtest.agents import ppo  # noqa: E402

TARGET = 475.0


def jgtest_ppo(total_steps: int, num_seeds: int, num_evals: int) -> dict:
    """Trains ``num_seeds`` vmapped seeds period by period; times training after a compile call."""
    config = ppo.PPOConfig(total_timesteps=total_steps, num_evals=num_evals)
    agent = ppo.make_agent(config)
    keys = jax.random.split(jax.random.key(0), num_seeds)
    devices = jax.devices()
    if num_seeds % len(devices) == 0:
        mesh = jax.sharding.Mesh(devices, ("seed",))
        seed_axis = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seed"))
        init = jax.jit(jax.vmap(agent.init), in_shardings=seed_axis, out_shardings=seed_axis)
        period = jax.jit(jax.vmap(agent.period), in_shardings=seed_axis, out_shardings=seed_axis)
        keys = jax.device_put(keys, seed_axis)
    else:
        init, period = jax.jit(jax.vmap(agent.init)), jax.jit(jax.vmap(agent.period))
    t0 = time.perf_counter()
    state = jax.block_until_ready(init(keys))
    compiled = period.lower(state).compile()
    compile_s = time.perf_counter() - t0
    wall, reached, curve = 0.0, None, []
    for _ in range(num_evals):
        t = time.perf_counter()
        state, metrics = compiled(state)
        returns = np.asarray(jax.device_get(metrics["eval_return_mean"]))
        wall += time.perf_counter() - t
        steps = int(np.asarray(metrics["env_steps"])[0])
        curve.append((steps, float(returns.mean())))
        if reached is None and returns.mean() >= TARGET:
            reached = (wall, steps)
    env_steps = config.env_steps * num_seeds
    return {
        "num_seeds": num_seeds,
        "env_steps_per_seed": config.env_steps,
        "env_steps": env_steps,
        "wall_s": wall,
        "compile_s": compile_s,
        "steps_per_s": env_steps / wall,
        "time_to_target_s": None if reached is None else reached[0],
        "steps_to_target": None if reached is None else reached[1],
        "final_eval_return_mean": curve[-1][1],
        "final_eval_return_per_seed": returns.tolist(),
        "eval_curve": curve,
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs for the many-seed and SB3 rows")
    parser.add_argument("--seeds", type=int, default=64, help="seeds vmapped in the many-seed row (default 64)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    budget = 500_000
    many_budget = 100_000 if args.quick else budget
    sb3_budget = 100_000 if args.quick else budget

    single = jgtest_ppo(budget, 1, num_evals=20)
    many = jgtest_ppo(many_budget, args.seeds, num_evals=4)
    sb3 = sb3_ppo_cartpole(sb3_budget, seed=0, hyperparams=MATCHED, eval_every=25_000)

    rows = [
        ("jgtest PPO, 1 seed", single),
        (f"jgtest PPO, {args.seeds} seeds vmapped", many),
        ("SB3 PPO (PyTorch CPU), 1 seed", sb3),
    ]
    print(f"{'run':34s} {'env steps':>12s} {'wall s':>8s} {'steps/s':>12s} {'time to 475 s':>14s} {'final return':>13s}")
    for name, r in rows:
        ttt = "-" if r["time_to_target_s"] is None else f"{r['time_to_target_s']:.1f}"
        final = r.get("final_eval_return_mean", r.get("final_eval_return"))
        print(f"{name:34s} {r['env_steps']:>12,d} {r['wall_s']:>8.1f} {r['steps_per_s']:>12,.0f} {ttt:>14s} {final:>13.1f}")
    result = {
        "benchmark": "train_throughput",
        "quick": args.quick,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "devices": [str(d) for d in jax.devices()],
        "jax_version": jax.__version__,
        "jgtest_single_seed": single,
        "jgtest_many_seeds": many,
        "sb3": sb3,
        "speedup_vs_sb3": many["steps_per_s"] / sb3["steps_per_s"],
        "single_seed_speedup_vs_sb3": single["steps_per_s"] / sb3["steps_per_s"],
        "jgtest_time_to_475_s": single["time_to_target_s"],
        "sb3_time_to_475_s": sb3["time_to_target_s"],
    }
    print(
        f"\n{args.seeds} vmapped seeds: {result['speedup_vs_sb3']:.0f}x SB3's steps/s; "
        f"1 seed: {result['single_seed_speedup_vs_sb3']:.1f}x"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
