"""The ``jgtest`` command line: one module per method, the options campaigns share defined once.

    jgtest run random --game BlockMaze-v0 --out runs/demo
    jgtest replay runs/demo/bugs.jsonl --index 0
    jgtest report runs/demo

``jgtest run METHOD --help`` lists a method's options. Exit status (``docs/fixing-bugs.md``): 0
done; 1 the answer is no (a bug not reproduced, bugs with ``--fail-on-bugs``, a failed plan) or an
unexpected fault; 2 a user's mistake, one ``error: ...`` line (:mod:`jgtest.errors`); 3 a bridged
game failed unrecorded; 130 or 143 stopped by a signal at a checkpoint (:mod:`jgtest.interrupts`).

* chosen: building the parser imports no method and no JAX, because ``--help`` must print at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import traceback
import warnings

from jgtest.cli import games, park, plan, random_campaign, records, reline, run_all, train, wuji
from jgtest.cli.shared import fail, say_report
from jgtest.errors import UserError

#: Exit status of a user mistake (as argparse gives a bad option).
USAGE_ERROR = 2
#: A campaign's bugs with ``--fail-on-bugs``; a bridged game's fault.
BUGS_FOUND, GAME_FAULT = 1, 3
#: Frames of an unexpected error's traceback shown without ``--debug`` (the innermost ones).
SHORT_TRACEBACK = 3


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with a bad option reported in one line (``error: PROG: ...``), exit 2."""

    def error(self, message: str):
        self.exit(USAGE_ERROR, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="jgtest", description="Automated video-game testing with learning agents, in JAX."
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the full traceback of any error, user mistakes included",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help=(
            "run a test campaign (method × game; all: a short campaign of each method, the main "
            "job)"
        ),
    )
    methods = run.add_subparsers(
        dest="method",
        required=True,
        metavar="METHOD",
        description="jgtest run METHOD --help lists the method's options",
    )
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


#: Commands that load no JAX (``jgtest games`` reads its catalogue), left without it.
WITHOUT_JAX = frozenset({"games"})


def _single_threaded_eigen() -> None:
    """XLA's multi-threaded Eigen pool on CPU can deadlock on vmapped graphs; campaigns and training
    runs are long, so the command line uses a single-threaded pool (a user's own ``XLA_FLAGS``
    setting wins). Set when the command starts (not at import), and only effective before JAX starts
    its backend."""
    if "--xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
        ).strip()


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
    """A message's text on one line (its line breaks and runs of spaces as single spaces), its
    control characters escaped (:func:`jgtest.report.console.printable`)."""
    from jgtest.report.console import printable

    return printable(" ".join(str(message).split()))


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
    a signal METHOD reads or METHOD has no settings for G
    (:func:`jgtest.methods.compatibility.check`; ``jgtest plan`` refuses a game without a plan
    vocabulary itself)."""
    if args.command != "run" or getattr(args, "game", None) is None:
        return
    from jgtest.methods import compatibility
    from jgtest.signals import NEEDS

    if args.method in NEEDS:
        try:
            compatibility.check(
                args.method, args.game, {"telemetry": getattr(args, "telemetry", None)}
            )
        except ValueError as error:  # an unknown game
            raise fail(error) from None


def finish_campaign(args) -> int:
    """What every ``jgtest run`` does after its campaign: shrink its records (``--shrink``, before
    the report, which shows the shrunk traces), write its JUnit file (``--junit``) and its report;
    the number of distinct bugs it found (:mod:`jgtest.report.distinct`)."""
    from jgtest.records import located_records
    from jgtest.report.distinct import distinct_bugs
    from jgtest.report.junit import campaign_junit

    if args.shrink:
        from jgtest.cli.records import print_shrunk
        from jgtest.report.shrink import shrink_run

        print_shrunk(shrink_run(args.out))
    if args.junit:
        name = f"jgtest run {args.method}" + (
            f" --game {args.game}" if getattr(args, "game", None) else ""
        )
        campaign_junit(args.out, args.junit, name, oracle_kinds(args))
        print(f"wrote {args.junit}")
    say_report(args.out)
    return len(distinct_bugs([r for r, _, _ in located_records(args.out)]))


def oracle_kinds(args) -> tuple[str, ...]:
    """The oracles a campaign's game has (its bug kinds, in order): a twin's from the game, a
    bridged game's from the run's summaries; none known otherwise (the JUnit file then lists the
    kinds found)."""
    import json
    from pathlib import Path

    import jgtest

    game = getattr(args, "game", None)
    if game in jgtest.registered_games():
        return tuple(jgtest.make(game)[0].bug_kinds)
    kinds = [
        k
        for path in sorted(Path(args.out).rglob("summary.json"))
        for k in json.loads(path.read_text()).get("bug_kinds", [])
    ]
    return tuple(dict.fromkeys(kinds))


def _is_game_fault(error: BaseException) -> bool:
    """Whether ``error`` is a bridged game's fault (a crash, a hang, a bad frame) that a campaign
    did not turn into a bug record: exit status 3."""
    if not type(error).__module__.startswith("envs_bridge"):
        return False
    from jgtest.host_loop import GameFault

    return isinstance(error, GameFault)


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns its exit status (module docstring)."""
    from jgtest.interrupts import Interrupted, stop_at_checkpoints
    from jgtest.run_dir import unlock_all

    _single_threaded_eigen()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)  # --help and usage errors exit here, before JAX loads
    if args.command not in WITHOUT_JAX:
        _inline_cpu_dispatch()
    with _one_line_warnings(not args.debug), stop_at_checkpoints():
        try:
            check_signals(args)
            check_outputs(args)
            code = args.func(args)
            if args.command == "run":
                found = finish_campaign(args)
                return BUGS_FOUND if args.fail_on_bugs and found else code
            return code
        except KeyboardInterrupt as stop:  # jgtest.interrupts: a signal, at a checkpoint or at once
            if args.debug:
                raise
            stop = stop if isinstance(stop, Interrupted) else Interrupted(signal.SIGINT)
            print(interrupted_line(stop, args, argv), file=sys.stderr)
            return stop.exit_status
        except UserError as error:
            if args.debug:
                raise
            print(f"error: {_one_line(error)}", file=sys.stderr)
            return USAGE_ERROR
        except Exception as error:
            if args.debug:
                raise
            if _is_game_fault(error):
                print(f"error: the game failed: {_one_line(error)}", file=sys.stderr)
                return GAME_FAULT
            traceback.print_exception(error, limit=-SHORT_TRACEBACK, chain=False)
            print(
                "(the innermost frames; jgtest --debug ... shows the whole traceback)",
                file=sys.stderr,
            )
            return 1
        finally:
            unlock_all()


def check_outputs(args) -> None:
    """A command's output files refused before any work (:func:`jgtest.run_dir.check_output_path`):
    ``--junit`` must not be a directory, one of the run directory's own files, or unwritable."""
    from jgtest.run_dir import check_output_path

    if getattr(args, "junit", None) is None:
        return
    runs = {"run": "out", "verify": "records", "plan": "out"}
    run_dir = getattr(args, runs.get(args.command, ""), None)
    inputs = ()
    if run_dir is not None and args.command == "verify" and not os.path.isdir(run_dir):
        # a bugs.jsonl or a plan report, and its folder
        inputs, run_dir = (
            (run_dir,),
            os.path.dirname(run_dir) or ".",
        )
    check_output_path(args.junit, "--junit", (run_dir,) if run_dir else (), inputs)


def _resumes(args) -> bool:
    """Whether a stopped ``jgtest run`` continues with ``--resume``: every campaign but Wuji's on a
    bridged game and the object-testing exploration of a real level (their games' state is in the
    games' processes)."""
    from jgtest.cli.park import is_level
    from jgtest.methods.compatibility import HOST_RANDOM_PREFIXES

    game = str(getattr(args, "game", None) or "")
    # park.run's route to a level campaign
    levels = is_level(game) or (args.method == "inspector" and game.startswith("gym:"))
    return not (
        (args.method == "wuji" and game.startswith(HOST_RANDOM_PREFIXES))
        or (args.method in ("random", "inspector") and levels)
    )


def interrupted_line(stop, args, argv: list[str]) -> str:
    """The one line a stopped command prints: where it stopped and, for a campaign, how to
    continue."""
    import shlex
    from pathlib import Path

    where = "interrupted" + ("" if stop.step is None else f" at step {stop.step}")
    if args.command == "train":
        return (
            f"{where}; continue with: {shlex.join(['jgtest', *argv])} (it resumes from the "
            f"checkpoints in {args.out})"
        )
    if args.command != "run":
        return where
    # a comparison's runs keep theirs below --out
    if args.method != "all" and not any(Path(args.out).rglob("config.json")):
        return (
            f"{where}, before the campaign began; start it again: {shlex.join(['jgtest', *argv])}"
        )
    if not _resumes(args):
        return (
            f"{where}; the bugs found so far are in {args.out} (a {args.method} campaign on "
            f"{args.game} cannot resume: run it again with --overwrite)"
        )
    again = [a for a in argv if a not in ("--overwrite", "--resume")]
    return f"{where}; continue with: {shlex.join(['jgtest', *again, '--resume'])}"


if __name__ == "__main__":
    sys.exit(main())
