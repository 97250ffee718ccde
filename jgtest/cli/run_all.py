"""``jgtest run all``: the main job (:mod:`jgtest.main_job`), a short campaign of each method."""

from __future__ import annotations

from pathlib import Path

from jgtest.cli.shared import common_options, run_dir


def add_parser(methods) -> None:
    parser = methods.add_parser("all", parents=[common_options()], help="a short campaign of each method, ending in one report (the main job)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from jgtest import main_job

    out = Path(args.out) if args.resume else run_dir(args)
    out.mkdir(parents=True, exist_ok=True)
    return main_job.run(out, args.seed, args.quiet, resume=args.resume)
