"""``jgtest run all``: the main job (:mod:`jgtest.main_job`), a short campaign of each method."""

from __future__ import annotations

from jgtest.cli.shared import common_options, run_dir


def add_parser(methods) -> None:
    parser = methods.add_parser(
        "all",
        parents=[common_options()],
        help="a short campaign of each method, ending in one report (the main job)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from jgtest import main_job
    from jgtest.run_dir import lock_run_dir

    # its campaigns' folders are checked one by one
    out = lock_run_dir(args.out) if args.resume else run_dir(args)
    return main_job.run(out, args.seed, args.quiet, resume=args.resume)
