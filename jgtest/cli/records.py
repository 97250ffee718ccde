"""``jgtest replay``, ``shrink``, ``verify`` and ``report``: a recorded bug played again, its trace
shrunk to a minimal reproducer, stored bugs checked against the game as it is now, and a run
directory's HTML report.
"""

from __future__ import annotations

from jgtest.cli.shared import add_junit_option, say_report
from jgtest.errors import BadFile, BadInput


def add_parsers(sub) -> None:
    report = sub.add_parser(
        "report", help="write the run directory's self-contained HTML report (DIR/report.html)"
    )
    report.add_argument("run_dir", help="a run directory (jgtest run --out)")
    report.set_defaults(func=report_command)
    rep = sub.add_parser(
        "replay", help="replay a recorded bug trace and check that the bug fires again"
    )
    rep.add_argument("records", help="a bugs.jsonl file")
    rep.add_argument(
        "--index", type=int, default=0, help="which record (0-based; negative counts from the end)"
    )
    rep.add_argument(
        "--min",
        action="store_true",
        help="replay the record's shrunk trace (trace_min, from jgtest shrink)",
    )
    rep.add_argument(
        "--show",
        action="store_true",
        help="print the trace, a line a step: the action, the position, where the bug fires",
    )
    rep.set_defaults(func=replay_command)
    shrink = sub.add_parser(
        "shrink",
        help=(
            "shrink recorded bug traces to minimal reproducers (delta debugging, replay as the "
            "oracle)"
        ),
    )
    shrink.add_argument(
        "records", help="a bugs.jsonl file, or a run directory (every bugs.jsonl in it)"
    )
    shrink.add_argument(
        "--index",
        type=int,
        default=None,
        help="only this record of a bugs.jsonl (0-based; negative counts from the end)",
    )
    shrink.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds per record on a bridged game (default 60)",
    )
    shrink.set_defaults(func=shrink_command)
    verify = sub.add_parser(
        "verify",
        help=(
            "replay stored bugs against the game as configured now: fixed, still present or changed"
        ),
    )
    verify.add_argument(
        "records",
        help="a bugs.jsonl, a run directory (every bugs.jsonl in it), or a plan run's report.json",
    )
    verify.add_argument(
        "--game-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the changed game's option (JSON value), repeatable",
    )
    add_junit_option(verify, "a test case per stored bug, failing unless fixed")
    verify.set_defaults(func=verify_command)


def report_command(args) -> int:
    say_report(args.run_dir)
    return 0


def replay_command(args) -> int:
    from jgtest.records import read_bug_records
    from jgtest.report.replay import replay
    from jgtest.report.shrink import minimal

    records = read_bug_records(args.records)
    if not records:
        raise BadFile(f"{args.records} holds no bug records")
    if not -len(records) <= args.index < len(records):
        raise BadInput(
            f"--index {args.index} is out of range; {args.records} holds {len(records)} "
            f"records (0..{len(records) - 1})"
        )
    record = records[args.index]
    if args.min:
        if record.trace_min is None:
            raise BadInput(
                f"record {args.index} of {args.records} has no shrunk trace: run jgtest "
                f"shrink {args.records} first"
            )
        record = minimal(record)
    if record.kind == "texture":  # found by an object test (PPGTA, Inspector)
        from jgtest.methods.park.inspector import replay_record

        reproduced = replay_record(record)
        verdict = "reproduced" if reproduced else "NOT reproduced"
        print(
            f"{verdict}: {record.game} object {record.bug_id}, the test of episode "
            f"{record.episode} of slot "
            f"{record.env_index}, seed {record.seed}, after {len(record.actions)} actions "
            f"({record.detail})"
        )
        return 0 if reproduced else 1
    result = replay(record)
    if args.show:
        from jgtest.report.replay import trace_lines

        print("\n".join(trace_lines(result)))
    print(result.describe())
    return 0 if result.reproduced else 1


def shrink_command(args) -> int:
    """Shrinks the records, writes them back with ``trace_min``, and prints each one's lengths."""
    from pathlib import Path

    from jgtest.report.shrink import shrink_file, shrink_run

    if Path(args.records).is_dir():
        if args.index is not None:
            raise BadInput("--index picks a record of one bugs.jsonl, not of a run directory")
        done = shrink_run(args.records, time_limit_s=args.time_limit)
    else:
        done = shrink_file(args.records, args.index, time_limit_s=args.time_limit)
    print_shrunk(done)
    return 0


def print_shrunk(done) -> None:
    """One line per shrunk record: where, the bug, its trace's length before and after, the replay
    command."""
    for item in done:
        r, (before, after) = item.record, item.lengths
        print(
            f"{item.path}:{item.line}: {r.game} bug {r.bug_id} ({r.kind}): {before} actions "
            f"-> {after}; jgtest replay {item.path} --index {item.index} --min"
        )
    if not done:
        print("no records to shrink")


def verify_command(args) -> int:
    """Replays every stored bug against the game now and prints a table; exit 0 when every one is
    fixed (or there is none), 1 when some are still present or changed."""
    from pathlib import Path

    from jgtest.cli.shared import parse_key_values
    from jgtest.plans.verify import verify_plan_report
    from jgtest.records import located_records, read_bug_records
    from jgtest.report.junit import verify_junit
    from jgtest.report.verify import verify_records

    game_args = parse_key_values(args.game_arg)
    path = Path(args.records)
    if path.is_dir():
        if not any(path.rglob("bugs.jsonl")):
            raise BadFile(f"{args.records}: no bugs.jsonl in it (not a run directory?)")
        located = located_records(path)
    elif _is_plan_report(path):
        located = None
    else:
        located = [(r, path, i) for i, r in enumerate(read_bug_records(path))]
    verdicts = (
        verify_plan_report(path, game_args)
        if located is None
        else verify_records(located, game_args)
    )
    if not verdicts:  # a campaign that found nothing: nothing can have come back
        print(
            f"{args.records}: "
            f"{'no bug records' if located is not None else 'every plan run passed'}; "
            "nothing to verify"
        )
    else:
        show_verdicts(verdicts)
    if args.junit:  # written either way: a CI server never reads an earlier run's file
        verify_junit(verdicts, args.junit)
        print(f"wrote {args.junit}")
    return 0 if all(v.status == "fixed" for v in verdicts) else 1


def _is_plan_report(path) -> bool:
    """Whether ``path`` is a plan run's ``report.json`` (a JSON object with its ``plans``)."""
    import json

    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        return "plans" in json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, TypeError):
        return False


def show_verdicts(verdicts) -> None:
    """The verdicts' table, and a line counting each status."""
    from collections import Counter

    from rich.table import Table

    from jgtest.report.console import show
    from jgtest.report.verify import STATUSES

    table = Table(title="stored bugs against the game now")
    for column in ("where", "status", "what", "replay"):
        table.add_column(column)
    for v in verdicts:
        table.add_row(v.where, v.shown_status, v.describe(), v.command)
    show(table)
    counts = Counter(v.status for v in verdicts)
    print(", ".join(f"{counts[s]} {s}" for s in STATUSES))
