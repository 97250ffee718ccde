"""PPO training throughput: jgtest on device vs Stable-Baselines3 (PyTorch, CPU), same machine, same
run.

    pip install -e '.[bench]' # torch 2.13.0 (CPU) and stable-baselines3 python
    benchmarks/train_throughput.py --quick --json benchmarks/results/train_throughput_quick.json

Both train PPO on CartPole (jgtest: ``CartPoleBugs-v0`` with the game reward
only, capped at 500 steps like ``CartPole-v1``; SB3: Gymnasium ``CartPole-v1``)
with the same PPO settings (PureJaxRL's: 4 envs × 128 steps, 4 epochs × 4
minibatches, lr 2.5e-4 annealed, γ 0.99, λ 0.95, clip 0.2, entropy 0.01). Budgets
per seed: 500k steps (jgtest 1 seed, and every row without ``--quick``); with
``--quick``, 200k for the vmapped rows (8 periods, for the interleaving) and 100k
for SB3. Measured:

* **time to 475**: training seconds until the first evaluation whose mean
  return reaches 475 (jgtest: 1 seed, period by period, compile time excluded
  and reported apart; SB3: its evaluation time excluded);
* **env steps/s including updates**: jgtest with 1 seed and with ``--seeds``
  seeds vmapped (aggregate; the seed axis is sharded over one XLA host device
  per core), SB3 with 1 seed (PyTorch's default threads). jgtest's time
  includes its greedy evaluation after every period (it runs inside the
  jitted period); SB3's excludes its evaluations;
* **coverage cost**: the vmapped run twice, counting each training episode's
  distinct cells (``track_coverage``, the default) and not, their periods
  interleaved so that drift of the machine hits both alike.

The JSON has ``speedup_vs_sb3`` (vmapped aggregate steps/s, coverage on, over
SB3's), ``coverage_on_over_off``, ``single_seed_speedup_vs_sb3`` and both
times to 475.
"""

from __future__ import annotations

import argparse
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

from _common import write_json  # noqa: E402

from benchmarks.sb3_baseline import MATCHED, sb3_ppo_cartpole  # noqa: E402
from jgtest.agents import ppo  # noqa: E402

TARGET = 475.0


def _compiled(config: ppo.PPOConfig, num_seeds: int):
    """``(state, compiled period, seconds)``: ``num_seeds`` vmapped seeds initialised and
    ``period`` compiled (seed axis sharded over the host devices when it divides)."""
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
    return state, compiled, time.perf_counter() - t0


def jgtest_ppo(configs: dict[str, ppo.PPOConfig], num_seeds: int) -> dict[str, dict]:
    """Trains each config's ``num_seeds`` vmapped seeds period by period, the configs'
    periods interleaved (order alternating each round) so that machine drift hits
    all of them alike; times training after a compile call."""
    runs = {
        name: dict(zip(("state", "period", "compile_s"), _compiled(c, num_seeds)))
        for name, c in configs.items()
    }
    for run in runs.values():
        run.update(wall=0.0, reached=None, curve=[])
    num_evals = {c.num_evals for c in configs.values()}.pop()
    names = list(runs)
    for i in range(num_evals):
        for name in names if i % 2 == 0 else names[::-1]:
            run = runs[name]
            t = time.perf_counter()
            run["state"], metrics = run["period"](run["state"])
            returns = np.asarray(jax.device_get(metrics["eval_return_mean"]))
            run["wall"] += time.perf_counter() - t
            steps = int(np.asarray(metrics["env_steps"])[0])
            run["curve"].append((steps, float(returns.mean())))
            run["returns"] = returns
            if run["reached"] is None and returns.mean() >= TARGET:
                run["reached"] = (run["wall"], steps)
    results = {}
    for name, run in runs.items():
        config, reached = configs[name], run["reached"]
        env_steps = config.env_steps * num_seeds
        results[name] = {
            "num_seeds": num_seeds,
            "track_coverage": config.track_coverage,
            "env_steps_per_seed": config.env_steps,
            "env_steps": env_steps,
            "wall_s": run["wall"],
            "compile_s": run["compile_s"],
            "steps_per_s": env_steps / run["wall"],
            "time_to_target_s": None if reached is None else reached[0],
            "steps_to_target": None if reached is None else reached[1],
            "final_eval_return_mean": run["curve"][-1][1],
            "final_eval_return_per_seed": run["returns"].tolist(),
            "eval_curve": run["curve"],
        }
    return results


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="shorter runs for the many-seed and SB3 rows"
    )
    parser.add_argument(
        "--seeds", type=int, default=64, help="seeds vmapped in the many-seed row (default 64)"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    budget = 500_000
    many_budget = 200_000 if args.quick else budget
    sb3_budget = 100_000 if args.quick else budget

    single = jgtest_ppo({"on": ppo.PPOConfig(total_timesteps=budget, num_evals=20)}, 1)["on"]
    many = jgtest_ppo(
        {
            cov: ppo.PPOConfig(total_timesteps=many_budget, num_evals=8, track_coverage=cov == "on")
            for cov in ("on", "off")
        },
        args.seeds,
    )
    sb3 = sb3_ppo_cartpole(sb3_budget, seed=0, hyperparams=MATCHED, eval_every=25_000)

    rows = [
        ("jgtest PPO, 1 seed", single),
        (f"jgtest PPO, {args.seeds} seeds, coverage on", many["on"]),
        (f"jgtest PPO, {args.seeds} seeds, coverage off", many["off"]),
        ("SB3 PPO (PyTorch CPU), 1 seed", sb3),
    ]
    print(
        f"{'run':38s} {'env steps':>12s} {'wall s':>8s} {'steps/s':>12s} {'× SB3':>7s} "
        f"{'time to 475 s':>14s} {'final return':>13s}"
    )
    for name, r in rows:
        ttt = "-" if r["time_to_target_s"] is None else f"{r['time_to_target_s']:.1f}"
        final = r.get("final_eval_return_mean", r.get("final_eval_return"))
        ratio = r["steps_per_s"] / sb3["steps_per_s"]
        print(
            f"{name:38s} {r['env_steps']:>12,d} {r['wall_s']:>8.1f} {r['steps_per_s']:>12,.0f} "
            f"{ratio:>7.1f} {ttt:>14s} {final:>13.1f}"
        )
    result = {
        "benchmark": "train_throughput",
        "quick": args.quick,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "devices": [str(d) for d in jax.devices()],
        "jax_version": jax.__version__,
        "jgtest_single_seed": single,
        "jgtest_many_seeds": many["on"],
        "jgtest_many_seeds_coverage_off": many["off"],
        "sb3": sb3,
        "coverage_on_over_off": many["on"]["steps_per_s"] / many["off"]["steps_per_s"],
        "speedup_vs_sb3": many["on"]["steps_per_s"] / sb3["steps_per_s"],
        "single_seed_speedup_vs_sb3": single["steps_per_s"] / sb3["steps_per_s"],
        "jgtest_time_to_475_s": single["time_to_target_s"],
        "sb3_time_to_475_s": sb3["time_to_target_s"],
    }
    print(
        f"\n{args.seeds} vmapped seeds: {result['speedup_vs_sb3']:.0f}x SB3's steps/s; "
        f"1 seed: {result['single_seed_speedup_vs_sb3']:.1f}x; "
        f"coverage on/off: {result['coverage_on_over_off']:.3f}"
    )
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
