"""NSHArena-v0's probe table and the reach classes it gives (:mod:`jgtest.methods.wuji.probes`).

    python benchmarks/nsh_probes.py --json benchmarks/results/nsh_probes.json

The scripted probes (random, the fighter, the fighter that retreats to a ledge to heal, each fighter
also with 30% random actions) play ``FULL_BUDGET_STEPS`` env steps on 1,000 games, run seed 0; plain
A2C (the ``drl`` strategy, the authors' A2C) plays the same budget as a Wuji run on seeds 0–2. Per
probe: the env step at which each bug was first found; then each bug's reach class (``start``:
random finds it; ``path``: another probe does; ``off``: none), beside the game's
``REACH_CLASSES``. ``--quick``: a hundredth of the budget, one A2C seed.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
).strip()

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import parse_args, write_json  # noqa: E402

import jgtest  # noqa: E402
from jgtest.envs.nsh_arena import FULL_BUDGET_STEPS, REACH_CLASSES  # noqa: E402
from jgtest.methods import wuji  # noqa: E402
from jgtest.methods.wuji import probes  # noqa: E402
from jgtest.methods.wuji.device import run_on_device  # noqa: E402


def a2c_probe(budget: int, seed: int) -> list[int]:
    """Each bug's first env step in a ``drl`` run of ``budget`` steps (-1: never)."""
    config = wuji.WujiConfig(
        game="NSHArena-v0", strategy="drl", generations=None, budget_steps=budget, seed=seed
    )
    with tempfile.TemporaryDirectory() as out:
        summary = run_on_device(config, out)
    return [-1 if s is None else s for s in summary["first_found_step"]]


def main(argv=None) -> dict:
    args = parse_args(__doc__, argv)
    budget = FULL_BUDGET_STEPS // 100 if args.quick else FULL_BUDGET_STEPS
    a2c_seeds = (0,) if args.quick else (0, 1, 2)
    env, params = jgtest.make("NSHArena-v0")
    scripted = {
        "random": probes.random_policy,
        "fighter": probes.make_fighter(env),
        "fighter30": probes.make_fighter(env, 0.3),
        "retreating_fighter": probes.make_retreating_fighter(env),
        "retreating_fighter30": probes.make_retreating_fighter(env, 0.3),
    }
    table, wall = {}, {}
    for name, policy in scripted.items():
        start = time.perf_counter()
        table[name] = probes.probe_run(env, params, policy, budget)
        wall[name] = round(time.perf_counter() - start, 1)
        print(f"{name:20s} found {sum(s >= 0 for s in table[name]['first_found']):2d} bugs")
    for seed in a2c_seeds:
        start = time.perf_counter()
        table[f"a2c_seed{seed}"] = {"first_found": a2c_probe(budget, seed)}
        wall[f"a2c_seed{seed}"] = round(time.perf_counter() - start, 1)
        found = sum(s >= 0 for s in table[f"a2c_seed{seed}"]["first_found"])
        print(f"a2c seed {seed:<11d} found {found:2d} bugs")
    found = {name: [s >= 0 for s in row["first_found"]] for name, row in table.items()}
    derived = probes.reach_classes(found)
    print("derived reach classes:", derived)
    print("the game's REACH_CLASSES agree:", derived == REACH_CLASSES)
    result = {
        "benchmark": "nsh_probes",
        "command": "python benchmarks/nsh_probes.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "budget_steps": budget,
        "scripted_probes": {"games": 1000, "run_seed": 0},
        "a2c_probe": {"strategy": "drl", "preset": "authors", "seeds": list(a2c_seeds)},
        "probes": table,
        "derived_reach_classes": list(derived),
        "game_reach_classes": list(REACH_CLASSES),
        "wall_s": wall,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
