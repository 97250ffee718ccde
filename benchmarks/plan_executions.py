"""Plan executions per second: plans × seeds vmapped in one jitted call, next to one execution per
call, same run.

    python benchmarks/plan_executions.py --quick --json
    benchmarks/results/plan_executions_quick.json

An execution is one plan's episode on ``Dungeon-v0`` (random levels, so every seed plays its own
level) by the plan agent with the scripted navigator (:func:`jgtest.plans.agent.run_plans`,
``max_steps`` 200): the example plans of ``examples/plans/dungeon`` repeated to P plans, under
S seeds. Timed after a warm-up (compilation reported apart), median of the repeats:

* ``vmapped``: P × S executions in one jitted call (the library's way), the seeds split over the
  cores;
* ``one per call``: the same runner jitted for one plan and one seed, called in a Python loop
  over a sample of the executions (the baseline).

The issue's target: 1,000 executions in one jitted call.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

# One XLA host device per core: the plans' seeds are split over them (jgtest.plans.agent.run_plans).
# Must precede jax's import.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + f" --xla_force_host_platform_device_count={os.cpu_count()} --xla_cpu_multi_thread_eigen=false"
).strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import parse_args, write_json  # noqa: E402

import jgtest  # noqa: E402
from jgtest.plans import dungeon as game  # noqa: E402
from jgtest.plans.agent import RunSettings, make_runner, run_plans  # noqa: E402
from jgtest.plans.compiled import stack_plans  # noqa: E402
from jgtest.plans.model import load_plan  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "plans" / "dungeon"
FULL = {"sizes": ((10, 10), (10, 100), (20, 200)), "repeats": 3, "baseline_calls": 50}
QUICK = {"sizes": ((10, 10), (10, 100)), "repeats": 2, "baseline_calls": 20}


def _median_s(fn, repeats: int) -> tuple[float, float]:
    """``(first call's seconds: compile + run, median of the later calls)``."""
    begin = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - begin
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - begin)
    return first, float(np.median(times))


def main(argv=None) -> dict:
    args = parse_args(__doc__, argv)
    settings = QUICK if args.quick else FULL
    env, params = jgtest.make("Dungeon-v0", variant="random_layout")
    examples = [load_plan(p) for p in sorted(EXAMPLES.glob("*.json"))]
    rows = []
    for plans, seeds in settings["sizes"]:
        compiled = stack_plans([examples[i % len(examples)] for i in range(plans)], env)
        keys = jax.vmap(jax.random.key)(np.arange(seeds))
        first, median = _median_s(
            lambda c=compiled, k=keys: run_plans(env, game, params, c, k)[0].outcome,
            settings["repeats"],
        )
        passed = float(
            (np.asarray(run_plans(env, game, params, compiled, keys)[0].outcome) == 1).mean()
        )
        rows.append(
            {
                "plans": plans,
                "seeds": seeds,
                "executions": plans * seeds,
                "compile_and_run_s": round(first, 2),
                "run_s": round(median, 4),
                "executions_per_s": round(plans * seeds / median, 1),
                "passed_share": round(passed, 3),
            }
        )
        print(
            f"  {plans} plans x {seeds} seeds: {rows[-1]['executions_per_s']:,.0f} executions/s "
            f"({median:.3f} s a call)",
            flush=True,
        )
    one = jax.jit(make_runner(env, game, RunSettings()))
    single = jax.tree.map(lambda x: x[0], stack_plans(examples[:1], env))
    calls = settings["baseline_calls"]
    jax.block_until_ready(one(params, single, jax.random.key(0))[0].outcome)
    begin = time.perf_counter()
    for s in range(calls):
        jax.block_until_ready(one(params, single, jax.random.key(s))[0].outcome)
    baseline = calls / (time.perf_counter() - begin)
    print(
        f"\n{'plans':>5s} {'seeds':>6s} {'executions':>10s} {'compile+run s':>13s} {'run s':>8s} "
        f"{'executions/s':>13s} {'× one per call':>15s} {'passed':>7s}"
    )
    for row in rows:
        print(
            f"{row['plans']:>5d} {row['seeds']:>6d} {row['executions']:>10,d} "
            f"{row['compile_and_run_s']:>13.2f} {row['run_s']:>8.3f} "
            f"{row['executions_per_s']:>13,.0f} {row['executions_per_s'] / baseline:>15.1f} "
            f"{row['passed_share']:>7.1%}"
        )
    print(f"{'one per call (python loop)':>36s} {'':>13s} {'':>8s} {baseline:>13,.0f}")
    result = {
        "benchmark": "plan_executions",
        "command": "python benchmarks/plan_executions.py"
        + (" --quick" if args.quick else "")
        + (f" --json {args.json}" if args.json else ""),
        "quick": args.quick,
        "devices": [str(d) for d in jax.devices()],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "rows": rows,
        "one_per_call_executions_per_s": round(baseline, 1),
    }
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
