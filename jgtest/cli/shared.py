"""What every ``jgtest run METHOD`` shares: its options, ``KEY=VALUE`` parsing, the run directory
and the closing report. Imports nothing heavy, so that ``--help`` prints at once.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from jgtest.errors import BadInput, UserError
from jgtest.seeds import check_seed


def common_options() -> argparse.ArgumentParser:
    """The options of every ``jgtest run`` method: ``--out``, ``--seed``, ``--resume``,
    ``--overwrite``, ``--quiet``, ``--shrink``, ``--junit``, ``--fail-on-bugs``."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("shared options")
    group.add_argument(
        "--out",
        required=True,
        type=out_path,
        help="run directory for bugs.jsonl, summary.json, config.json",
    )
    group.add_argument(
        "--seed", type=seed_number, default=0, help="campaign seed, 0 <= SEED < 2**32 (default 0)"
    )
    group.add_argument(
        "--resume",
        action="store_true",
        help="continue a killed campaign in --out from its checkpoints",
    )
    group.add_argument(
        "--overwrite", action="store_true", help="replace a campaign already in --out"
    )
    group.add_argument("--quiet", action="store_true", help="no progress bar")
    group.add_argument(
        "--shrink",
        action="store_true",
        help=(
            "shrink each bug record's trace to a minimal reproducer after the campaign (jgtest "
            "shrink)"
        ),
    )
    group.add_argument(
        "--junit",
        type=out_path,
        default=None,
        metavar="PATH",
        help=(
            "write JUnit XML for a CI server: a failing test case per distinct bug with its "
            "replay command, a passing one per oracle that found nothing"
        ),
    )
    group.add_argument(
        "--fail-on-bugs",
        action="store_true",
        help="exit with status 1 when the campaign found a bug (default: 0 either way)",
    )
    return parser


def add_junit_option(parser, cases: str) -> None:
    """``--junit PATH`` of ``jgtest plan`` and ``jgtest verify``: where to write JUnit XML,
    ``cases`` saying what its test cases and failures are."""
    parser.add_argument("--junit", default=None, metavar="PATH", help=f"write JUnit XML: {cases}")


def add_tensorboard_option(parser, curves: str) -> None:
    """``--tensorboard DIR``, opt-in: the ``curves`` also as TensorBoard event files in ``DIR``
    (:class:`jgtest.report.tensorboard.CurveWriter`)."""
    parser.add_argument(
        "--tensorboard",
        default=None,
        metavar="DIR",
        help=f"also write {curves} as TensorBoard event files into DIR (the tensorboard extra)",
    )


def game_options(default_game: str) -> argparse.ArgumentParser:
    """The shared game options of a ``jgtest run`` method: ``--game`` (``default_game`` by default)
    and ``--game-arg``."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("game options")
    group.add_argument(
        "--game",
        default=default_game,
        help=f"registered game id (see `jgtest games`; default {default_game})",
    )
    group.add_argument(
        "--game-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="game option (JSON value), repeatable",
    )
    group.add_argument(
        "--telemetry",
        default=None,
        metavar="MODULE:FUNCTION",
        help=(
            "gym:ENV_ID games: a function (obs, info, env) -> telemetry fields (position, cell, "
            "frame_time_ms, ...)"
        ),
    )
    return parser


def method_parser(methods, name: str, default_game: str, help_text: str):
    """The parser of ``jgtest run NAME``, a subparser of ``methods`` with :func:`game_options`
    (``default_game`` by default) and :func:`common_options`."""
    return methods.add_parser(
        name, parents=[game_options(default_game), common_options()], help=help_text
    )


def game_kwargs(args) -> dict:
    """``--game-arg`` pairs, with ``--telemetry`` as the ``telemetry`` option of a ``gym:`` game.

    Raises:
      BadInput: a bad pair, or ``--telemetry`` for a game that is not ``gym:``.
    """
    kwargs = parse_key_values(args.game_arg)
    if getattr(args, "telemetry", None) is not None:
        if not args.game.startswith("gym:"):
            raise BadInput(
                f"--telemetry maps a Gymnasium game's observations to telemetry; {args.game} "
                "reports its own (use gym:ENV_ID)"
            )
        kwargs["telemetry"] = args.telemetry
    return kwargs


def seed_number(text: str) -> int:
    """``--seed``: an integer with 0 <= seed < 2**32 (:mod:`jgtest.seeds`), the seeds that name
    distinct campaigns."""
    try:
        return check_seed(positive_int(text, minimum=0))
    except BadInput as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive_int(text: str, minimum: int = 1) -> int:
    """An integer option of at least ``minimum`` (1 unless said), or argparse's one-line error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
    return value


def positive_float(text: str) -> float:
    """A finite number above zero (a budget in seconds, a rate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a finite number above 0")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number of at least zero (a rate, a loss weight)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a finite number of at least 0")
    return value


def out_path(text: str) -> str:
    """``--out``: a path whose name is valid UTF-8 (a run's files, report and commands name it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{text.encode('utf-8', 'surrogateescape')!r} holds a byte that is not UTF-8; "
            "choose a UTF-8 name"
        ) from None
    return text


def parse_key_values(pairs: list[str], flag: str = "--game-arg") -> dict:
    """``KEY=VALUE`` pairs as options; a value is JSON where it parses (lists become tuples, so
    configs holding them stay hashable, static under jit), else a string. JSON's ``NaN`` and
    ``Infinity`` parse as floats; whether an option takes one is the game's to say
    (:func:`jgtest.envs.registration.make` refuses non-finite numbers).

    Raises:
      BadInput: a pair without ``=``, an empty key, or a key given twice.
    """
    from jgtest.envs.registration import hashable

    kwargs = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{flag} expects KEY=VALUE, got {pair!r}")
        if key in kwargs:
            raise BadInput(f"{flag} {key} is given twice")
        try:
            kwargs[key] = hashable(json.loads(value))
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def fail(error: Exception) -> UserError:
    """A refused input as a :class:`jgtest.errors.UserError` (``raise fail(error) from None``),
    which :func:`jgtest.cli.main` prints in one line and exits 2 on."""
    return error if isinstance(error, UserError) else BadInput(str(error))


def run_dir(args) -> Path:
    """``--out`` prepared (:func:`jgtest.run_dir.prepare_run_dir`), or a one-line error."""
    from jgtest.run_dir import prepare_run_dir

    return prepare_run_dir(args.out, args.overwrite, args.resume)


def say_report(run_dir: str | Path) -> None:
    """Writes the run directory's ``report.html`` and prints where it is."""
    from jgtest.report.html import write_report

    print(f"report: {write_report(run_dir).resolve()}")
