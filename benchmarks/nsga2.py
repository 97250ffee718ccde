"""NSGA-II's sorting cost: jgtest's jitted non-dominated rank + crowding distance next to pymoo's,
same points, same run.

    python benchmarks/nsga2.py --quick --json benchmarks/results/nsga2_quick.json

For each population size N (64 … 16,384) and number of objectives M (2, 3), on
points drawn from a standard normal (the same array for every row):

* ``jgtest``: :func:`jgtest.evo.non_dominated_rank` then
  :func:`jgtest.evo.crowding_distance`, jitted together, timed after a warm-up
  call (compilation excluded), ``block_until_ready``;
* ``pymoo fast_non_dominated_sort``: pymoo's implementation of Deb et al.'s
  fast non-dominated sort (``pymoo.util.nds.fast_non_dominated_sort``, numpy),
  then pymoo's crowding distance on every front (``calc_crowding_distance``);
* ``pymoo NonDominatedSorting``: pymoo 0.6's default sorter (``moocore``'s
  ``pareto_rank``, compiled C), the same crowding distance.

Every row reports the median of its repeats (seconds per call), and the ranks of
both pymoo sorters are checked equal to ours (``ranks_equal``). pymoo minimises,
so it is given the negated objectives. A row whose single call would exceed
``--max-seconds`` (the size before it took more than a tenth of that; the cost
grows as N²) is skipped and marked so.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
).strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

from jgtest.evo.pareto import front_crowding, front_ranks  # noqa: E402

FULL_SIZES = (64, 256, 1024, 4096, 16384)
QUICK_SIZES = (64, 1024, 4096)
OBJECTIVES = (2, 3)


@jax.jit
def jgtest_sort(points):
    ranks = front_ranks(points, True)
    return ranks, front_crowding(points, ranks)


def pymoo_rows(points: np.ndarray):
    """``{name: (call() -> ranks)}`` of the two pymoo sorters, each with crowding per front."""
    from pymoo.operators.survival.rank_and_crowding.metrics import calc_crowding_distance
    from pymoo.util.nds.fast_non_dominated_sort import fast_non_dominated_sort
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    minimised = -points

    def with_crowding(fronts):
        ranks = np.empty(len(points), np.int64)
        for k, front in enumerate(fronts):
            ranks[front] = k
            calc_crowding_distance(minimised[front])
        return ranks

    return {
        "pymoo fast_non_dominated_sort": lambda: with_crowding(fast_non_dominated_sort(minimised)),
        "pymoo NonDominatedSorting": lambda: with_crowding(NonDominatedSorting().do(minimised)),
    }


def time_call(call, repeats: int) -> tuple[float, object]:
    out = call()  # warm-up (compiles jgtest's)
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - begin)
    return float(np.median(times)), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"sizes {QUICK_SIZES} (default {FULL_SIZES})"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--max-seconds", type=float, default=60.0, help="skip a row whose call would take longer"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import pymoo

    rows, slow = [], set()
    print(
        f"{'N':>6} {'M':>2}  {'jgtest s':>10}  {'pymoo fnds s':>12}  {'pymoo default s':>15}  "
        "ranks equal"
    )
    for m in OBJECTIVES:
        slow.clear()
        for n in QUICK_SIZES if args.quick else FULL_SIZES:
            points = np.random.default_rng(n * 10 + m).normal(size=(n, m)).astype(np.float32)
            device_points = jax.device_put(points)
            seconds, (ranks, _) = time_call(
                lambda points=device_points: jax.block_until_ready(jgtest_sort(points)),
                args.repeats,
            )
            ranks = np.asarray(ranks)
            row = {"n": n, "m": m, "jgtest_s": seconds, "fronts": int(ranks.max()) + 1}
            for name, call in pymoo_rows(points).items():
                if name in slow:
                    row[name] = None
                    continue
                t, theirs = time_call(call, 1 if n >= 4096 else args.repeats)
                row[name] = t
                row[f"{name} ranks_equal"] = bool(np.array_equal(theirs, ranks))
                if t > args.max_seconds / 10:
                    slow.add(name)
            row["speedup_vs_fnds"] = (
                None
                if row["pymoo fast_non_dominated_sort"] is None
                else row["pymoo fast_non_dominated_sort"] / seconds
            )
            row["speedup_vs_default"] = (
                None
                if row["pymoo NonDominatedSorting"] is None
                else row["pymoo NonDominatedSorting"] / seconds
            )
            rows.append(row)
            fmt = lambda v: "skipped" if v is None else f"{v:.5f}"
            equal = all(v for k, v in row.items() if k.endswith("ranks_equal"))
            print(
                f"{n:>6} {m:>2}  {seconds:>10.5f}  {fmt(row['pymoo fast_non_dominated_sort']):>12} "
                " "
                f"{fmt(row['pymoo NonDominatedSorting']):>15}  {equal}"
            )
    result = {
        "benchmark": "nsga2",
        "rows": rows,
        "quick": args.quick,
        "repeats": args.repeats,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "device": str(jax.devices()[0]),
        },
        "versions": {"jax": jax.__version__, "pymoo": pymoo.__version__, "numpy": np.__version__},
    }
    write_json(args.json, result)


if __name__ == "__main__":
    main()
