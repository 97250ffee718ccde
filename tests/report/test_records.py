"""Bug records: round trip, durability, validation."""

import json
import warnings

import pytest

from jgtest.report.records import BugRecord, BugRecordWriter, read_bug_records


def _record(**changes):
    base = dict(kind="logical", game="BlockMaze-v0", bug_id=2, step=2, episode=0, seed=0, env_index=3, actions=(1, 1, 2))
    base.update(changes)
    return BugRecord(**base)


def test_round_trip_and_append(tmp_path):
    path = tmp_path / "bugs.jsonl"
    with BugRecordWriter(path) as writer:
        writer.write(_record())
    with BugRecordWriter(path) as writer:
        writer.write(_record(bug_id=3, kind="crash"))
    records = read_bug_records(path)
    assert records == [_record(), _record(bug_id=3, kind="crash")]
    assert json.loads(path.read_text().splitlines()[0])["actions"] == [1, 1, 2]


def test_record_is_on_disk_before_the_writer_closes(tmp_path):
    path = tmp_path / "bugs.jsonl"
    writer = BugRecordWriter(path)
    writer.write(_record())
    assert read_bug_records(path) == [_record()]  # flushed, not buffered
    writer.close()


def test_a_cut_short_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "bugs.jsonl"
    path.write_text(_record().to_json() + "\n" + _record().to_json()[:20])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert read_bug_records(path) == [_record()]
    assert "incomplete last line" in str(caught[0].message)


def test_a_corrupt_middle_line_is_an_error(tmp_path):
    path = tmp_path / "bugs.jsonl"
    path.write_text("garbage\n" + _record().to_json() + "\n")
    with pytest.raises(ValueError, match="bugs.jsonl:1: not a bug record"):
        read_bug_records(path)


def test_bad_records_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        _record(kind="segfault")
    with pytest.raises(ValueError, match="3 actions for step 5"):
        _record(step=5)
