"""``jgtest replay`` and ``jgtest report``: a recorded bug played again, and a run directory's HTML report."""

from __future__ import annotations

from jgtest.cli.shared import say_report
from jgtest.errors import BadFile, BadInput


def add_parsers(sub) -> None:
    report = sub.add_parser("report", help="write the run directory's self-contained HTML report (DIR/report.html)")
    report.add_argument("run_dir", help="a run directory (jgtest run --out)")
    report.set_defaults(func=report_command)
    rep = sub.add_parser("replay", help="replay a recorded bug trace and check that the bug fires again")
    rep.add_argument("records", help="a bugs.jsonl file")
    rep.add_argument("--index", type=int, default=0, help="which record (0-based; negative counts from the end)")
    rep.set_defaults(func=replay_command)


def report_command(args) -> int:
    say_report(args.run_dir)
    return 0


def replay_command(args) -> int:
    from jgtest.report.records import read_bug_records
    from jgtest.report.replay import replay

    records = read_bug_records(args.records)
    if not records:
        raise BadFile(f"{args.records} holds no bug records")
    if not -len(records) <= args.index < len(records):
        raise BadInput(f"--index {args.index} is out of range; {args.records} holds {len(records)} records (0..{len(records) - 1})")
    record = records[args.index]
    if record.kind == "texture":  # found by an object test (PPGTA, Inspector)
        from jgtest.methods.park.inspector import replay_record

        reproduced = replay_record(record)
        verdict = "reproduced" if reproduced else "NOT reproduced"
        print(f"{verdict}: {record.game} object {record.bug_id}, the test of episode {record.episode} of slot "
              f"{record.env_index}, seed {record.seed}, after {len(record.actions)} actions ({record.detail})")  # fmt: skip
        return 0 if reproduced else 1
    result = replay(record)
    print(result.describe())
    return 0 if result.reproduced else 1
