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

Exit status:

- 0: the command did what it was asked (``replay``: the bug was reproduced);
- 1: it ran, and its answer is no (``replay``: the bug did not fire again), or jgtest or a game
  failed unexpectedly (a short traceback; ``jgtest --debug ...`` shows the whole one);
- 2: a mistake in what was given (an option, a file, a run directory): one line, ``error: ...``,
  on stderr, and nothing written (:mod:`jgtest.errors`).

Warnings (a skipped damaged record line, a checkpoint step that could not be restored) print as
one line each, ``warning: ...``, on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings

from jgtest.cli import games, park, plan, random_campaign, records, reline, run_all, train, wuji
from jgtest.cli.shared import fail, say_report
from jgtest.errors import UserError

#: Exit status of a user mistake (as argparse gives a bad option).
USAGE_ERROR = 2
#: Frames of an unexpected error's traceback shown without ``--debug`` (the innermost ones).
SHORT_TRACEBACK = 3


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with a bad option reported in one line (``error: PROG: ...``), exit 2."""

    def error(self, message: str):
        self.exit(USAGE_ERROR, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jgtest", description="Automated video-game testing with learning agents, in JAX.")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of any error, user mistakes included")
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


def _inline_cpu_dispatch() -> None:
    """Runs each jitted call on the calling thread (``jax_cpu_enable_async_dispatch=False``) unless
    the user set ``JAX_CPU_ENABLE_ASYNC_DISPATCH``. The command line's loops wait on every call's
    result (the host loop on each step's actions, training on each period's metrics), so
    asynchronous dispatch buys nothing there and costs a hand-off to a worker thread a call:
    ≈ 0.05 ms of the host loop's ≈ 0.2 ms a step at 8 Ms. Pac-Man games on 2 cores
    (``benchmarks/bridge_throughput.py``). Only effective before JAX starts its backend."""
    if "JAX_CPU_ENABLE_ASYNC_DISPATCH" not in os.environ:
        import jax

        jax.config.update("jax_cpu_enable_async_dispatch", False)


def _one_line(message) -> str:
    """A message's text on one line (its line breaks and runs of spaces as single spaces)."""
    return " ".join(str(message).split())


@contextlib.contextmanager
def _one_line_warnings(enabled: bool):
    """Warnings shown as ``warning: MESSAGE``, one line on stderr, while the command runs
    (``warnings.formatwarning``, so a caller recording warnings still gets them)."""
    formatwarning = warnings.formatwarning
    if enabled:
        warnings.formatwarning = lambda message, *_, **__: f"warning: {_one_line(message)}\n"
    try:
        yield
    finally:
        warnings.formatwarning = formatwarning


def check_signals(args) -> None:
    """``jgtest run METHOD --game G`` refused before anything compiles or a game starts when G lacks
    a signal METHOD reads or METHOD has no settings for G (:func:`jgtest.methods.compatibility.check`; ``jgtest
    plan`` refuses a game without a plan vocabulary itself)."""
    if args.command != "run" or getattr(args, "game", None) is None:
        return
    from jgtest.methods import compatibility
    from jgtest.signals import NEEDS

    if args.method in NEEDS:
        try:
            compatibility.check(args.method, args.game, {"telemetry": getattr(args, "telemetry", None)})
        except ValueError as error:  # an unknown game
            raise fail(error) from None


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns its exit status (module docstring)."""
    _single_threaded_eigen()
    _inline_cpu_dispatch()
    args = build_parser().parse_args(argv)
    with _one_line_warnings(not args.debug):
        try:
            check_signals(args)
            code = args.func(args)
            if args.command == "run":  # every campaign ends in its report
                say_report(args.out)
            return code
        except UserError as error:
            if args.debug:
                raise
            print(f"error: {_one_line(error)}", file=sys.stderr)
            return USAGE_ERROR
        except Exception as error:
            if args.debug:
                raise
            traceback.print_exception(error, limit=-SHORT_TRACEBACK, chain=False)
            print("(the innermost frames; jgtest --debug ... shows the whole traceback)", file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
