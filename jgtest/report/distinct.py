"""Records grouped into distinct bugs: one bug found many times is one bug to file.

A campaign writes a record each time its oracles first see a bug (per run, per seed, per agent), so
the same bug can have many records. :func:`distinct_bugs` groups them:

* on a game whose bugs are injected and numbered (the twins, ``telemetry.bugs_fired``), by the
  bug's id: the id names the bug;
* on a bridged or adapted game (``vizdoom:``, ``gym:``, ``gymnax:``, ``craftax:``, …), where an id
  names an oracle (a crash, stuck, an assertion) that can fire in many places, by the record's
  kind, its oracle (the id) and its place: the position rounded to :data:`PLACE` units (a low-FPS
  point's id is its cell already).

Each group keeps its records in the order found; its representative is the one with the shortest
reproducer (``trace_min`` when shrunk, else the trace), the one a report shows and a CI failure
cites.
"""

from __future__ import annotations

import dataclasses

from jgtest.report.records import BugRecord

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
    """What makes a record's bug this bug (module docstring)."""
    from jgtest.host_loop import is_host_game

    bridged = is_host_game(record.game) or ":" in record.game  # bridged, or adapted (gymnax:, craftax:)
    if not bridged or record.kind == "low_fps":
        return (record.game, record.kind, record.bug_id)
    place = tuple(round(p / PLACE) for p in record.position)
    return (record.game, record.kind, record.bug_id, place)


def distinct_bugs(records: list[BugRecord]) -> list[DistinctBug]:
    """The distinct bugs among ``records``, in the order each was first found."""
    groups: dict[tuple, list[BugRecord]] = {}
    for record in records:
        groups.setdefault(bug_key(record), []).append(record)
    return [DistinctBug(key, tuple(group)) for key, group in groups.items()]
