"""RELINE's CartPole Table 1 end to end, under both protocols, with the wall time of each phase.

Trains 10 RELINE and 10 rl-baseline CEM models (vmapped, 3,200 episodes of up
to 1,000 steps each, the paper's budget) and evaluates them and 10 random
runs on 1,000 episodes each (3 × 10 × 1,000 episodes), as in RELINE §3.1.4;
prints the phases' wall times and Table 1 next to the paper's, and writes
both as JSON. Target: a table in under 5 minutes on 2 CPU cores (the paper
trained for hours).

It runs the table twice, same seeds: under the replication package's protocol
(``table1``: CEM elites at the 70th percentile of returns, the models learning
through their 1,000 evaluation episodes; :class:`jgtest.methods.reline.RelineConfig`'s
defaults) and under the paper's text (``paper_text``: the best 11 of 16 episodes,
frozen models), the protocol our earlier figures followed.

Usage::

    python benchmarks/reline_table1.py [--quick] [--json PATH]

``--quick``: 3 models per agent and 200 evaluation episodes each.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import jax

from jgtest.methods import reline


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="3 models per agent, 200 evaluation episodes"
    )
    parser.add_argument(
        "--json", default="benchmarks/results/reline_table1.json", help="where to write the results"
    )
    args = parser.parse_args(argv)
    models, episodes = (3, 200) if args.quick else (10, 1000)
    runs = {}
    for name, protocol in (
        ("package", {}),
        ("paper_text", {"elites": "rank", "evaluation": "frozen"}),
    ):
        config = reline.RelineConfig(
            game="CartPoleBugs-v0", models=models, eval_episodes=episodes, **protocol
        )
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            summary = reline.run(
                config,
                out,
                progress=lambda phase, done, total, name=name, start=start: print(
                    f"{time.perf_counter() - start:7.1f} s  {name}: {phase} {done}/{total}",
                    file=sys.stderr,
                    flush=True,
                ),
            )
        runs[name] = {
            "protocol": summary["protocol"],
            "wall_s": round(time.perf_counter() - start, 1),
            "phases_s": summary["phases_s"],
            "table1": summary["table1"],
        }
    for name, run in runs.items():
        print(
            f"\nRELINE Table 1 on CartPoleBugs-v0, {name} protocol {run['protocol']}: {models} "
            f"models per agent, {episodes:,} episodes each"
        )
        print(f"{'phase':<32}{'wall s':>10}")
        for phase, seconds in run["phases_s"].items():
            print(f"{phase:<32}{seconds:>10.1f}")
        print(
            f"{'total (incl. compile)':<32}{run['wall_s']:>10.1f}   "
            f"target < 300 s: {'met' if run['wall_s'] < 300 else 'NOT met'}\n"
        )
        print(f"{'agent':<13}{'n':>3}{'mean':>9}{'median':>9}{'sd':>8}   paper mean / median / sd")
        for agent, rows in run["table1"].items():
            for n, row in rows.items():
                paper = row["paper"]
                print(
                    f"{agent:<13}{n:>3}{row['mean']:>9.1f}{row['median']:>9.1f}{row['sd']:>8.1f}   "
                    f"{paper['mean']} / {paper['median']} / {paper['sd']}"
                )
    package = runs["package"]
    result = {
        "benchmark": "reline_table1",
        "command": "python benchmarks/reline_table1.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "models": models,
        "eval_episodes": episodes,
        "seed": 0,
        "protocol": package["protocol"],
        "wall_s": package["wall_s"],
        "target_s": 300,
        "phases_s": package["phases_s"],
        "table1": package["table1"],
        "paper_text": runs["paper_text"],
        "machine": {
            "platform": platform.platform(),
            "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()],
        },
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
