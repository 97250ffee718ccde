"""Bug records and their JSON-lines file, written the moment a bug is found.

Each line of ``bugs.jsonl`` is one :class:`BugRecord`, and the file is the source of truth of
what a campaign found:

- the writer flushes and ``fsync``s every record, so a campaign killed at any point keeps every
  record written before the kill;
- a kill mid-write leaves a torn last line (no newline). The writer, opening the file to append
  (a resumed campaign), first truncates it away with a warning naming its byte offset, so the next
  record starts on a line of its own and the torn bug, not yet in any checkpoint, is found and
  written again;
- every reader (:func:`read_bug_records`: ``replay``, ``report``, a resumed campaign) skips a line
  that is not a valid record with a warning naming its line number, and keeps the others usable.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import shlex
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from jgtest.envs.base import BUG_KINDS
from jgtest.errors import BadFile, BadInput
from jgtest.files import read_bytes, write_failure
from jgtest.seeds import check_seed


@dataclasses.dataclass(frozen=True)
class BugRecord:
    """One bug found by a campaign, with what it takes to reproduce it.

    Attributes:
      kind: oracle kind, one of ``BUG_KINDS``.
      game: registered game id.
      bug_id: index of the injected bug in ``telemetry.bugs_fired`` (-1 for
        bugs found by an oracle alone; a bridged game's ``low_fps`` record: RELINE's point, its
        cell).
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
      env_step: the campaign's clock in game steps when it fired: every game step the run had
        played by then, this one included (``None`` where a method keeps no such clock).
      trace_min: the shrunk reproducer (:mod:`jgtest.report.shrink`): actions from the same start
        after which the same bug fires at the last; ``None`` until shrunk. Its length against
        ``len(actions)`` is how much shrinking saved.
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
    env_step: int | None = None
    trace_min: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.kind not in BUG_KINDS:
            raise BadInput(f"bug record kind must be one of {BUG_KINDS}, got {self.kind!r}")
        for name in ("game", "detail"):
            if not isinstance(getattr(self, name), str):
                raise BadInput(f"bug record {name} must be a string, got {getattr(self, name)!r}")
        for name, low in (("bug_id", -1), ("step", 0), ("episode", 0), ("env_index", 0)):
            value = getattr(self, name)
            if not _is_int(value) or value < low:
                raise BadInput(
                    f"bug record {name} must be an integer of at least {low}, got {value!r}"
                )
        check_seed(self.seed, "bug record seed")
        if not all(_is_int(a) for a in self.actions):
            raise BadInput("bug record actions must be integers")
        if len(self.actions) != self.step + 1:
            raise BadInput(
                f"bug record has {len(self.actions)} actions for step {self.step}; expected step + "
                "1"
            )
        if not all(_is_number(p) and math.isfinite(p) for p in self.position):
            raise BadInput(f"bug record position must be finite numbers, got {self.position!r}")
        if not _is_number(self.wall_s) or not math.isfinite(self.wall_s):
            raise BadInput(f"bug record wall_s must be a finite number, got {self.wall_s!r}")
        if not isinstance(self.game_kwargs, dict):
            raise BadInput(f"bug record game_kwargs must be an object, got {self.game_kwargs!r}")
        if self.trace_min is not None and not (
            self.trace_min and all(_is_int(a) for a in self.trace_min)
        ):
            raise BadInput(
                "bug record trace_min must be a non-empty list of integers or null, got "
                f"{self.trace_min!r}"
            )
        if self.env_step is not None and (not _is_int(self.env_step) or self.env_step < 1):
            raise BadInput(
                f"bug record env_step must be a positive integer or null, got {self.env_step!r}"
            )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_dict(cls, data: Any) -> BugRecord:
        """A record from its JSON object (:meth:`to_json`).

        Raises:
          BadInput: ``data`` is not an object, lacks a field or has an unknown one, or a field's
            value is of the wrong type or out of range (the message names it).
        """
        if not isinstance(data, dict):
            raise BadInput(f"a bug record is a JSON object, got {type(data).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if unknown := sorted(set(data) - set(fields)):
            raise BadInput(f"bug record has unknown field(s) {', '.join(map(str, unknown))}")
        required = [
            n
            for n, f in fields.items()
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        if missing := [n for n in required if n not in data]:
            raise BadInput(f"bug record lacks field(s) {', '.join(missing)}")
        data = dict(data)
        for name in ("actions", "position"):
            if not isinstance(data.get(name, []), list):
                raise BadInput(f"bug record {name} must be a list, got {data[name]!r}")
        if not isinstance(data.get("trace_min") or [], list):
            raise BadInput(
                f"bug record trace_min must be a list or null, got {data['trace_min']!r}"
            )
        data["actions"] = tuple(data["actions"])
        if data.get("trace_min") is not None:
            data["trace_min"] = tuple(data["trace_min"])
        data["position"] = tuple(data.get("position", ()))
        return cls(**data)


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


class BugRecordWriter:
    """Appends records to a JSON-lines file, durably, one at a time.

    Example:
      >>> import tempfile, pathlib
      >>> from jgtest.records import BugRecord, BugRecordWriter, read_bug_records
      >>> run_dir = pathlib.Path(tempfile.mkdtemp())
      >>> record = BugRecord(kind="logical", game="BlockMaze-v0", bug_id=3, step=2, episode=0,
      ...                    seed=0, env_index=0, actions=(0, 1, 1))
      >>> with BugRecordWriter(run_dir / "bugs.jsonl") as writer:
      ...     writer.write(record)
      >>> read_bug_records(run_dir / "bugs.jsonl") == [record]
      True
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        truncate_torn_line(self.path)
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, record: BugRecord) -> None:
        """Appends ``record``; it is on disk when this returns.

        Raises:
          BadFile: it cannot be written (a full disk: the bytes it needed); the records before it
            are kept.
        """
        line = record.to_json() + "\n"
        try:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as error:
            raise BadFile(
                f"{self.path}: cannot write a bug record ({write_failure(error, len(line))}); the "
                "records before it are kept, "
                "and --resume continues the campaign once it can be written"
            ) from None

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> BugRecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def truncate_torn_line(path: Path) -> None:
    """Cuts a last line without its newline (a write killed midway) off ``path``, with a warning
    naming its byte offset; a missing or empty file, or one ending in a newline, is left alone."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as file:
        data = file.read()
        if data.endswith(b"\n"):
            return
        offset = data.rfind(b"\n") + 1
        warnings.warn(
            f"{path}: truncating a torn last line at byte {offset} ({len(data) - offset} bytes, a "
            "write cut short)",
            stacklevel=3,
        )
        file.truncate(offset)
        file.flush()
        os.fsync(file.fileno())


def parse_bug_record(line: str | bytes) -> BugRecord:
    """One line of a ``bugs.jsonl`` as a record.

    Raises:
      BadInput: the line is not UTF-8, not JSON, or not a valid record (the message says which).
    """
    try:
        data = json.loads(line)
    except UnicodeDecodeError:
        raise BadInput("not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise BadInput(f"not JSON ({error})") from None
    except RecursionError:
        raise BadInput("not a bug record (nested too deeply)") from None
    return BugRecord.from_dict(data)


def read_bug_records(path: str | os.PathLike) -> list[BugRecord]:
    """The valid records of a ``bugs.jsonl``, in order; each line that is not one (a torn last line,
    a damaged one) is skipped with a warning naming its line number, and the others stay usable.

    Raises:
      BadFile: no such file, or the path is a directory or cannot be read
        (:func:`jgtest.files.read_bytes`).
    """
    lines = read_bytes(path).split(b"\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(parse_bug_record(line))
        except BadInput as error:
            torn = " (a torn last line)" if number == len(lines) else ""
            warnings.warn(
                f"{path}:{number}: skipping a line that is not a bug record{torn}: {error}",
                stacklevel=2,
            )
    return records


def located_records(run_dir: str | Path) -> list[tuple[BugRecord, Path, int]]:
    """Every record of every ``bugs.jsonl`` in ``run_dir``, with its file and index (what ``jgtest
    replay --index`` takes)."""
    return [
        (r, path, i)
        for path in sorted(Path(run_dir).rglob("bugs.jsonl"))
        for i, r in enumerate(read_bug_records(path))
    ]


def replay_command(record: BugRecord, path: Path, index: int) -> str:
    """The shell command that replays record ``index`` of ``path``, its shrunk trace when it has
    one, each argument quoted (``shlex``): safe to paste whatever the run directory's name holds."""
    return shlex.join(
        [
            "jgtest",
            "replay",
            str(path),
            "--index",
            str(index),
            *(["--min"] if record.trace_min else []),
        ]
    )


def records_to_resume(out_dir: str | os.PathLike, resume: bool) -> list[BugRecord]:
    """The records a stopped campaign in ``out_dir`` wrote (its ``bugs.jsonl``), for a resumed run
    to keep and not write again; none when the run does not resume or wrote nothing."""
    path = Path(out_dir) / "bugs.jsonl"
    return read_bug_records(path) if resume and path.exists() else []
