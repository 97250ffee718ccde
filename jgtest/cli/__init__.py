"""The ``jgtest`` command line: one module per method, the options every campaign shares defined once.

    jgtest run random --game BlockMaze-v0 --out runs/demo
    jgtest run wuji --game CombatArena-v0 --compare --seeds 10 --generations 5 --out runs/wuji
    jgtest run inspector --game ParkWorld-v0 --episodes 45 --out runs/inspector
    jgtest replay runs/demo/bugs.jsonl --index 0
    jgtest report runs/demo
    jgtest games
    jgtest train ppo --game CartPoleBugs-v0 --steps 500000 --seeds 8 --out runs/ppo

``jgtest run METHOD --help`` lists that method's options and the shared ones (:mod:`jgtest.cli.shared`).
Building the parser imports no method and no JAX: each command loads what it needs when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys

from jgtest.cli import games, park, plan, random_campaign, records, reline, run_all, train, wuji
from jgtest.cli.shared import say_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jgtest", description="Automated video-game testing with learning agents, in JAX.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a test campaign (method × game; all: a short campaign of each method, the main job)")
    methods = run.add_subparsers(dest="method", required=True, metavar="METHOD",
                                 description="jgtest run METHOD --help lists the method's options")  # fmt: skip
    run_all.add_parser(methods)
    random_campaign.add_parser(methods)
    reline.add_parser(methods)
    wuji.add_parser(methods)
    park.add_parsers(methods)
    records.add_parsers(sub)
    train.add_parser(sub)
    games.add_parser(sub)
    plan.add_parser(sub)
    return parser


def _single_threaded_eigen() -> None:
    """XLA's multi-threaded Eigen pool on CPU can deadlock on vmapped graphs; campaigns and training runs are
    long, so the command line uses a single-threaded pool (a user's own ``XLA_FLAGS`` setting wins). Set when
    the command starts (not at import), and only effective before JAX starts its backend."""
    if "--xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()


def main(argv: list[str] | None = None) -> int:
    _single_threaded_eigen()
    args = build_parser().parse_args(argv)
    code = args.func(args)
    if args.command == "run":  # every campaign ends in its report
        say_report(args.out)
    return code


if __name__ == "__main__":
    sys.exit(main())
