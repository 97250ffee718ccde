"""Bug records and their JSON-lines file, written the moment a bug is found.

Each line of ``bugs.jsonl`` is one :class:`BugRecord`. The writer flushes and
``fsync``s every record, so a campaign killed at any point keeps every record
written before the kill; the reader skips a final line cut short by a kill.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from jgtest.envs.base import BUG_KINDS


@dataclasses.dataclass(frozen=True)
class BugRecord:
    """One bug found by a campaign, with what it takes to reproduce it.

    Attributes:
      kind: oracle kind, one of ``BUG_KINDS``.
      game: registered game id.
      bug_id: index of the injected bug in ``telemetry.bugs_fired`` (-1 for
        bugs found by an oracle alone).
      step: step within the episode at which it fired (0-based: the index of
        the last action of ``actions``).
      episode: episode index of that environment slot.
      seed: campaign seed.
      env_index: parallel environment slot.
      actions: the episode's actions from reset up to and including ``step``.
      game_kwargs: options passed to ``jgtest.make`` for the game.
      position: telemetry position when it fired.
      wall_s: seconds since the campaign started.
      detail: free text from the oracle.
    """

    kind: str
    game: str
    bug_id: int
    step: int
    episode: int
    seed: int
    env_index: int
    actions: tuple[int, ...]
    game_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    position: tuple[float, ...] = ()
    wall_s: float = 0.0
    detail: str = ""

    def __post_init__(self):
        if self.kind not in BUG_KINDS:
            raise ValueError(f"bug record kind must be one of {BUG_KINDS}, got {self.kind!r}")
        if len(self.actions) != self.step + 1:
            raise ValueError(f"bug record has {len(self.actions)} actions for step {self.step}; expected step + 1")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BugRecord:
        data = dict(data)
        data["actions"] = tuple(data["actions"])
        data["position"] = tuple(data.get("position", ()))
        return cls(**data)


class BugRecordWriter:
    """Appends records to a JSON-lines file, durably, one at a time.

    Example:
      >>> import tempfile, pathlib
      >>> from jgtest.report.records import BugRecord, BugRecordWriter, read_bug_records
      >>> run_dir = pathlib.Path(tempfile.mkdtemp())
      >>> record = BugRecord(kind="stuck", game="BlockMaze-v0", bug_id=3, step=2, episode=0, seed=0, env_index=0, actions=(0, 1, 1))
      >>> with BugRecordWriter(run_dir / "bugs.jsonl") as writer:
      ...     writer.write(record)
      >>> read_bug_records(run_dir / "bugs.jsonl") == [record]
      True
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, record: BugRecord) -> None:
        self._file.write(record.to_json() + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> BugRecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_bug_records(path: str | os.PathLike) -> list[BugRecord]:
    """Reads a ``bugs.jsonl``; a cut-short final line (a kill mid-write) is skipped with a warning.

    Raises:
      FileNotFoundError: no such file.
      ValueError: a line other than the last is not a valid record.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(BugRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError, KeyError) as error:
            if number == len(lines):
                warnings.warn(f"{path}: skipping an incomplete last line ({error})", stacklevel=2)
                continue
            raise ValueError(f"{path}:{number}: not a bug record ({error})") from error
    return records


def records_to_resume(out_dir: str | os.PathLike, resume: bool) -> list[BugRecord]:
    """The records a stopped campaign in ``out_dir`` wrote (its ``bugs.jsonl``), for a resumed run to
    keep and not write again; none when the run does not resume or wrote nothing."""
    path = Path(out_dir) / "bugs.jsonl"
    return read_bug_records(path) if resume and path.exists() else []


def write_json_atomically(path: str | os.PathLike, data) -> None:
    """Writes ``data`` (:func:`jsonable`) as JSON to ``path`` through a temporary file and a rename:
    a kill leaves the old file or the new one, never half of one (a resumable run's progress)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(jsonable(data), indent=2))
    os.replace(tmp, path)


def jsonable(value):
    """Numpy scalars and arrays to plain JSON values, recursively."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    return value
