"""Records grouped into distinct bugs (:func:`distinct_bugs`): one bug found many times, by several
runs, seeds or agents, is one bug to file.

chosen: a bridged game's bug is its kind, oracle and place rounded to :data:`PLACE` units, because
there an id names an oracle that fires in many places.
chosen: a group's representative is its shortest reproducer, because the report shows it and CI
cites it.
"""

from __future__ import annotations

import dataclasses
import json

from jgtest.records import BugRecord

#: The place of a bridged game's bug: its position rounded to this many of the game's units.
PLACE = 32.0


@dataclasses.dataclass(frozen=True)
class DistinctBug:
    """One bug and every record of it."""

    key: tuple
    records: tuple[BugRecord, ...]

    @property
    def representative(self) -> BugRecord:
        """The record with the shortest reproducer (the first such, in the order found)."""
        return min(self.records, key=lambda r: len(r.trace_min or r.actions))

    @property
    def kind(self) -> str:
        return self.records[0].kind


def bug_key(record: BugRecord) -> tuple:
    """What makes a record's bug this bug: on a game whose bugs are injected and numbered (the
    twins, ``telemetry.bugs_fired``), the game, kind, id and the game's options (``game_kwargs``:
    where its bugs are placed, so that Wuji's runs, which re-draw the bugs from their seeds, keep
    the bugs of each placement apart); on a bridged or adapted game
    (``vizdoom:``, ``gym:``, ``gymnax:``, ``craftax:``, …), where an id names an oracle (a crash,
    stuck, an assertion), also its position rounded to :data:`PLACE` units (a low-FPS point's id is
    its cell already)."""
    from jgtest.host_loop import is_host_game

    bridged = (
        is_host_game(record.game) or ":" in record.game
    )  # bridged, or adapted (gymnax:, craftax:)
    if not bridged:
        placed = json.dumps(record.game_kwargs, sort_keys=True, default=str)
        return (record.game, record.kind, record.bug_id, placed)
    if record.kind == "low_fps":
        return (record.game, record.kind, record.bug_id)
    place = tuple(round(p / PLACE) for p in record.position)
    return (record.game, record.kind, record.bug_id, place)


def distinct_bugs(records: list[BugRecord]) -> list[DistinctBug]:
    """The distinct bugs among ``records``, in the order each was first found, each keeping its
    records in the order found."""
    groups: dict[tuple, list[BugRecord]] = {}
    for record in records:
        groups.setdefault(bug_key(record), []).append(record)
    return [DistinctBug(key, tuple(group)) for key, group in groups.items()]
