"""Bug records: round trip, durability, validation, a log that survives torn and damaged lines."""

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jgtest.envs.base import BUG_KINDS
from jgtest.errors import BadInput
from jgtest.records import BugRecord, BugRecordWriter, parse_bug_record, read_bug_records

#: Hypothesis: a fixed, derandomized budget, so the default test run stays fast and repeatable.
PROPERTY = settings(max_examples=150, deadline=None, database=None, derandomize=True)


def _record(**changes):
    base = dict(
        kind="logical",
        game="BlockMaze-v0",
        bug_id=2,
        step=2,
        episode=0,
        seed=0,
        env_index=3,
        actions=(1, 1, 2),
    )
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
    with pytest.warns(
        UserWarning,
        match="bugs.jsonl:2: skipping a line that is not a bug record \\(a torn last line\\)",
    ):
        assert read_bug_records(path) == [_record()]


def test_the_writer_cuts_a_torn_last_line_before_appending(tmp_path):
    """A kill mid-write leaves a line without its newline; appending after it would glue the next
    record onto the fragment and lose both. The writer truncates it, naming its byte offset."""
    path = tmp_path / "bugs.jsonl"
    whole = _record().to_json() + "\n"
    path.write_text(whole + _record(bug_id=5).to_json()[:25])
    with pytest.warns(UserWarning, match=f"truncating a torn last line at byte {len(whole)}"):
        writer = BugRecordWriter(path)
    with writer:
        writer.write(_record(bug_id=6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every line whole: nothing skipped
        assert read_bug_records(path) == [_record(), _record(bug_id=6)]


def test_corrupt_middle_lines_are_skipped_and_named_the_others_stay_usable(tmp_path):
    path = tmp_path / "bugs.jsonl"
    path.write_bytes(
        b"garbage\n"
        + _record().to_json().encode()
        + b'\n"caf\xe9"\n[1, 2]\n'
        + _record(bug_id=4).to_json().encode()
        + b"\n"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert read_bug_records(path) == [_record(), _record(bug_id=4)]
    messages = [str(w.message) for w in caught]
    assert [m.split(": skipping")[0].rsplit(":", 1)[1] for m in messages] == ["1", "3", "4"]
    assert (
        "not JSON" in messages[0]
        and "not UTF-8" in messages[1]
        and "a bug record is a JSON object, got list" in messages[2]
    )


def test_bad_records_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        _record(kind="segfault")
    with pytest.raises(ValueError, match="3 actions for step 5"):
        _record(step=5)


def test_records_of_the_wrong_types_are_refused():
    as_json = json.loads(_record().to_json())
    for field, value, message in (
        ("seed", 2**32, "seed must be in \\[0, 2\\*\\*32\\)"),
        ("step", "2", "step must be an integer"),
        ("episode", True, "episode must be an integer"),
        ("actions", "abc", "actions must be a list"),
        ("position", [float("nan")], "position must be finite"),
        ("game", 3, "game must be a string"),
    ):
        with pytest.raises(BadInput, match=message):
            BugRecord.from_dict({**as_json, field: value})
    with pytest.raises(BadInput, match="unknown field\\(s\\) colour"):
        BugRecord.from_dict({**as_json, "colour": 1})
    with pytest.raises(BadInput, match="lacks field\\(s\\) actions"):
        BugRecord.from_dict({k: v for k, v in as_json.items() if k != "actions"})


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@PROPERTY
@given(st.one_of(st.binary(max_size=200), _json.map(json.dumps)))
def test_any_line_is_a_record_or_a_bad_input(line):
    try:
        parse_bug_record(line)
    except BadInput:
        pass


@st.composite
def _records(draw):
    step = draw(st.integers(0, 40))
    finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
    return BugRecord(
        kind=draw(st.sampled_from(BUG_KINDS)),
        game=draw(st.text(max_size=20)),
        bug_id=draw(st.integers(-1, 2**31)),
        step=step,
        episode=draw(st.integers(0, 2**40)),
        seed=draw(st.integers(0, 2**32 - 1)),
        env_index=draw(st.integers(0, 2**20)),
        actions=tuple(
            draw(st.lists(st.integers(-(2**40), 2**40), min_size=step + 1, max_size=step + 1))
        ),
        game_kwargs=draw(
            st.dictionaries(
                st.text(max_size=8), st.integers() | finite | st.text(max_size=8), max_size=3
            )
        ),
        position=tuple(draw(st.lists(finite, max_size=3))),
        wall_s=draw(finite),
        detail=draw(st.text(max_size=30)),
    )


@PROPERTY
@given(st.lists(_records(), min_size=1, max_size=4), st.data())
def test_valid_records_round_trip_through_a_log_even_with_damage_between_them(
    tmp_path_factory, records, data
):
    path = tmp_path_factory.mktemp("log") / "bugs.jsonl"
    with BugRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    lines = path.read_bytes().splitlines(keepends=True)
    damaged = data.draw(
        st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b and b.strip())
    )
    at = data.draw(st.integers(0, len(lines)))
    path.write_bytes(b"".join(lines[:at]) + damaged + b"\n" + b"".join(lines[at:]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert read_bug_records(path) == records
