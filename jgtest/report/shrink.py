"""Shrinking a bug record's action trace to a minimal reproducer (:func:`shrink_record`; ``jgtest
shrink``: :func:`shrink_file`): Zeller and Hildebrandt's delta debugging (IEEE TSE 28(2), 2002,
Fig. 5; :func:`ddmin`) with replay as the oracle. The result is 1-minimal.

chosen: window and pair removals between ddmin rounds (:func:`shrink_indices`), because on a game
that amplifies every change (CartPole's pole) what can go is a whole loop of the trajectory.
chosen: a candidate replays from the record's start, reset kept, and reproduces when the same bug
fires before its episode ends; the shrunk trace stops at that firing.
chosen: a device round's candidates replay in one call (:class:`DeviceOracle`), ddmin taking the
first in its order, so the result is the one-at-a-time algorithm's; bridged games, one at a time
until a time limit (:class:`HostOracle`).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jgtest.errors import BadFile, BadInput
from jgtest.files import read_bytes, write_text
from jgtest.records import BugRecord, parse_bug_record
from jgtest.report.replay import batch_replayer, options_key
from jgtest.run_dir import holding_run_dir

#: Candidates one device call replays (the last call of a round is padded to it).
CANDIDATES_PER_CALL = 64

#: The oracle of every shrinking pass: whether each candidate (a list of kept actions' indices)
#: still reproduces the bug.
Reproduces = Callable[[Sequence[np.ndarray]], Sequence[bool]]


def ddmin(length: int, reproduces: Reproduces, batched: bool = True) -> np.ndarray:
    """The 1-minimal subset of ``range(length)`` (the kept actions' indices, ascending) that still
    reproduces, by Zeller's ddmin: split the kept actions into ``n`` chunks; if one chunk alone
    reproduces, keep it (``n = 2``); else if one chunk's complement does, keep that (``n = n − 1``);
    else double ``n``, until ``n`` exceeds their number. Removing any single action then loses the
    bug.

    Args:
      length: the trace's length; the whole trace must reproduce.
      reproduces: whether each candidate (an ascending index array) reproduces the bug.
      batched: ``True``: a round's candidates go to ``reproduces`` at once; ``False``: one at a
        time, stopping at the first that reproduces (the same result, fewer replays, more calls).
    """
    kept = np.arange(length)
    n = 2
    while len(kept) >= 2:
        chunks = np.array_split(kept, min(n, len(kept)))
        candidates = (
            [*chunks, *(np.setdiff1d(kept, c, assume_unique=True) for c in chunks)]
            if len(chunks) > 2
            else list(chunks)
        )
        found = _first_reproducing(candidates, reproduces, batched)
        if found is not None:
            kept = candidates[found]
            n = 2 if found < len(chunks) else max(n - 1, 2)
        elif n < len(kept):
            n = min(2 * n, len(kept))
        else:
            break
    return kept


def remove_window(
    kept: np.ndarray, reproduces: Reproduces, batched: bool = True
) -> np.ndarray | None:
    """``kept`` less one contiguous window of it that still reproduces, the longest window first (at
    the earliest place among those of its length), or ``None`` when no window can go: a stretch of
    the trajectory that ends about where it began. The windows of one length go to ``reproduces``
    together (``batched``) or one at a time."""
    size = len(kept)
    for width in range(size - 1, 0, -1):
        candidates = [
            np.concatenate([kept[:start], kept[start + width :]])
            for start in range(size - width + 1)
        ]
        found = _first_reproducing(candidates, reproduces, batched)
        if found is not None:
            return candidates[found]
    return None


def remove_pair(
    kept: np.ndarray, reproduces: Reproduces, batched: bool = True
) -> np.ndarray | None:
    """``kept`` less two of its actions, not next to each other, that still reproduces (the pairs in
    order of their first action, then their second), or ``None`` when no pair can go: on CartPole a
    push each way, far apart, cancel where either alone tips the pole. All pairs go to
    ``reproduces`` at once (``batched``) or one at a time."""
    size = len(kept)
    candidates = [
        np.delete(kept, [first, second])
        for first in range(size)
        for second in range(first + 2, size)
    ]
    found = _first_reproducing(candidates, reproduces, batched)
    return None if found is None else candidates[found]


def shrink_indices(length: int, reproduces: Reproduces, batched: bool = True) -> np.ndarray:
    """The kept actions' indices (ascending) after :func:`ddmin`, then :func:`remove_window` or,
    where no window can go, :func:`remove_pair`, each removal followed by ddmin, until nothing more
    goes: 1-minimal, with no contiguous window and no pair of actions removable (our addition to
    Zeller's algorithm: ddmin alone leaves long traces on a game whose dynamics amplify every
    change, where the rest of an open-loop trace derails once one action or an aligned chunk
    goes)."""
    kept = ddmin(length, reproduces, batched)
    while (shorter := _remove_window_or_pair(kept, reproduces, batched)) is not None:
        kept = shorter[
            ddmin(
                len(shorter),
                lambda candidates, base=shorter: reproduces([base[c] for c in candidates]),
                batched,
            )
        ]
    return kept


def _remove_window_or_pair(kept: np.ndarray, reproduces, batched: bool) -> np.ndarray | None:
    """:func:`remove_window`'s result, else :func:`remove_pair`'s (the window pass is cheaper and
    removes more)."""
    shorter = remove_window(kept, reproduces, batched)
    return shorter if shorter is not None else remove_pair(kept, reproduces, batched)


def _first_reproducing(candidates: list[np.ndarray], reproduces, batched: bool) -> int | None:
    """The index of the first candidate that reproduces, or ``None``."""
    if batched:
        hits = np.flatnonzero(np.asarray(reproduces(candidates), bool))
        return int(hits[0]) if len(hits) else None
    for i, candidate in enumerate(candidates):
        if reproduces([candidate])[0]:
            return i
    return None


class DeviceOracle:
    """Replays candidates of one record of an on-device game, up to ``batch`` per jitted call.

    A call's shape is a power of two each way, so that a game compiles a few functions for all its
    records: the candidates (the round's, up to ``batch``) and the steps (the record's length: no
    candidate is longer, and steps past a candidate's own length do not count).

    ``__call__(candidates)`` (index arrays into the record's actions) says whether each reproduces
    the record's bug; :meth:`first_fires` where each trace's bug first fires (``None``: it does
    not).
    """

    def __init__(self, record: BugRecord, batch: int = CANDIDATES_PER_CALL):
        from jgtest.report.replay import replayable

        self.record, self.batch = record, int(batch)
        _, params, self._replay = replayable(
            record, lambda: batch_replayer(record.game, options_key(record.game_kwargs))
        )
        self._params = params
        self._length = _power_of_two(len(record.actions))  # no candidate is longer than the record
        self._actions = np.asarray(record.actions, np.int32)
        self.calls = 0

    def first_fires(self, traces: Sequence[np.ndarray]) -> list[int | None]:
        """The first step at which the bug fires in each trace (its episode still running), or
        ``None``."""
        out: list[int | None] = []
        for start in range(0, len(traces), self.batch):
            part = traces[start : start + self.batch]
            size = min(self.batch, _power_of_two(len(part)))
            padded = np.zeros((size, self._length), np.int32)
            lengths = np.zeros(size, np.int32)
            for i, trace in enumerate(part):
                padded[i, : len(trace)], lengths[i] = trace, len(trace)
            r = self.record  # every candidate from the record's start
            fired = self._replay(
                self._params,
                jnp.full(size, r.seed, jnp.uint32),
                jnp.full(size, r.env_index, jnp.int32),
                jnp.full(size, r.episode, jnp.int32),
                jnp.asarray(padded),
                jnp.asarray(lengths),
            )
            self.calls += 1
            out += [int(f) if f >= 0 else None for f in np.asarray(fired)[: len(part), r.bug_id]]
        return out

    def __call__(self, candidates: Sequence[np.ndarray]) -> list[bool]:
        return [f is not None for f in self.first_fires([self._actions[c] for c in candidates])]

    def first_fire(self, trace: np.ndarray) -> int | None:
        return self.first_fires([trace])[0]


class HostOracle:
    """Replays candidates of one record of a bridged game, one after another on a fresh game each
    (:func:`jgtest.host_loop.replay_host_record`), until ``time_limit_s`` runs out: a candidate
    left untried counts as not reproducing."""

    def __init__(self, record: BugRecord, time_limit_s: float = 60.0):
        self.record, self._actions = record, np.asarray(record.actions, np.int32)
        self._deadline = time.perf_counter() + float(time_limit_s)
        self.calls = 0
        self.timed_out = False

    def first_fire(self, trace: np.ndarray) -> int | None:
        """Where the bug first fires in ``trace`` (``None``: it does not), the time limit aside."""
        from jgtest.host_loop import replay_host_record

        self.calls += 1
        fired = replay_host_record(
            dataclasses.replace(
                self.record, actions=tuple(int(a) for a in trace), step=len(trace) - 1
            )
        )
        hits = np.flatnonzero(fired)
        return int(hits[0]) if len(hits) else None

    def __call__(self, candidates: Sequence[np.ndarray]) -> list[bool]:
        out = []
        for c in candidates:
            self.timed_out |= time.perf_counter() > self._deadline
            out.append(not self.timed_out and self.first_fire(self._actions[c]) is not None)
        return out


def can_shrink(record: BugRecord) -> bool:
    """Whether ``record`` holds a trace to shrink: a bug the game reports (``bug_id >= 0``), not an
    object test's texture bug (found by a scripted walk, not by the trace alone)."""
    return record.bug_id >= 0 and record.kind != "texture"


def shrink_record(record: BugRecord, batched: bool = True, time_limit_s: float = 60.0) -> BugRecord:
    """``record`` with ``trace_min``: its actions shrunk by :func:`shrink_indices`, cut at the bug's
    first firing (on a bridged game within ``time_limit_s``; ``batched``: a device round in one call
    per :data:`CANDIDATES_PER_CALL` candidates, else one candidate a call).

    Raises:
      BadFile: the record cannot be replayed here (:func:`jgtest.report.replay.replay`'s reasons),
        or its own trace does not reproduce its bug (a game that has changed: ``jgtest verify``).
    """
    from jgtest.host_loop import is_host_game

    if not can_shrink(record):
        raise BadFile(
            "only records of a bug the game reports (bug_id >= 0; not an object "
            "test's texture bug) can be shrunk"
        )
    oracle = (
        HostOracle(record, time_limit_s)
        if is_host_game(record.game)
        else DeviceOracle(record, CANDIDATES_PER_CALL if batched else 1)
    )
    actions = np.asarray(record.actions, np.int32)
    if oracle.first_fire(actions) is None:
        raise BadFile(
            f"the record of {record.game} (bug {record.bug_id}, episode "
            f"{record.episode}) does not reproduce: nothing to shrink"
        )
    kept = shrink_indices(len(actions), oracle, batched=batched and not is_host_game(record.game))
    trace = actions[kept]  # it reproduces: ddmin keeps only what did
    fire = oracle.first_fire(trace)
    trace = (
        trace[: fire + 1] if fire is not None else actions
    )  # a game that does not replay the same twice: the original
    return dataclasses.replace(record, trace_min=tuple(int(a) for a in trace))


def _power_of_two(n: int) -> int:
    """The least power of two at least ``n`` (and 1)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def minimal(record: BugRecord) -> BugRecord:
    """The record as its shrunk trace: ``trace_min`` as its actions, the bug at its last step."""
    if record.trace_min is None:
        raise ValueError("the record has no shrunk trace (trace_min)")
    return dataclasses.replace(record, actions=record.trace_min, step=len(record.trace_min) - 1)


@dataclasses.dataclass(frozen=True)
class Shrunk:
    """One record shrunk in a file: where (its line, and its index among the file's records, as
    ``jgtest replay --index`` takes it), and the trace's length before and after."""

    path: str
    line: int
    index: int
    record: BugRecord

    @property
    def lengths(self) -> tuple[int, int]:
        return len(self.record.actions), len(self.record.trace_min)


def shrink_file(
    path, index: int | None = None, batched: bool = True, time_limit_s: float = 60.0
) -> list[Shrunk]:
    """Shrinks the records of the ``bugs.jsonl`` at ``path`` (only the ``index``-th, 0-based,
    negative from the end, when given) and writes each back in its line, with ``trace_min``; the
    other lines, damaged ones included, stay as they were. The file is replaced atomically.

    Raises:
      BadFile: the file cannot be read or holds no record, or the ``index``-th record cannot be
        shrunk (the message names its line; without ``index``, such a record is left as it is, with
        a warning naming its line).
      BadInput: ``index`` is out of range.
    """
    read_bytes(path)  # a missing file refused before its folder is locked (and made)
    with holding_run_dir(
        Path(path).parent
    ):  # no campaign appends to the file while it is rewritten
        return _shrink_file(path, index, batched, time_limit_s)


def _shrink_file(path, index: int | None, batched: bool, time_limit_s: float) -> list[Shrunk]:
    lines = read_bytes(path).decode("utf-8", errors="replace").split("\n")
    parsed: list[tuple[int, int, BugRecord]] = []
    for number, line in enumerate(lines):
        if line.strip():
            try:
                parsed.append((number, len(parsed), parse_bug_record(line.encode())))
            except BadInput as error:
                warnings.warn(
                    f"{path}:{number + 1}: left as it is, not a bug record: {error}", stacklevel=2
                )
    if not parsed:
        raise BadFile(f"{path} holds no bug records")
    if index is not None:
        if not -len(parsed) <= index < len(parsed):
            raise BadInput(
                f"--index {index} is out of range; {path} holds {len(parsed)} records "
                f"(0..{len(parsed) - 1})"
            )
        parsed = [parsed[index]]
    else:  # a whole file: the records with no trace to shrink stay as they are, unremarked
        parsed = [p for p in parsed if can_shrink(p[2])]
    done = []
    for number, position, record in parsed:
        try:
            shrunk = shrink_record(record, batched=batched, time_limit_s=time_limit_s)
        except BadFile as error:
            if index is not None:
                raise BadFile(f"{path}:{number + 1}: {error}") from None
            warnings.warn(f"{path}:{number + 1}: not shrunk: {error}", stacklevel=2)
            continue
        lines[number] = shrunk.to_json()
        done.append(Shrunk(str(path), number + 1, position, shrunk))
    write_text(path, "\n".join(lines))
    return done


def shrink_run(run_dir, batched: bool = True, time_limit_s: float = 60.0) -> list[Shrunk]:
    """Shrinks every record of every ``bugs.jsonl`` in ``run_dir`` (a campaign's, or a comparison's
    runs below it): what ``jgtest run --shrink`` does after the campaign."""
    return [
        s
        for path in sorted(Path(run_dir).rglob("bugs.jsonl"))
        if path.stat().st_size
        for s in shrink_file(path, None, batched, time_limit_s)
    ]
