"""Regression runs: every stored bug replayed against the game as it is configured now (``jgtest verify``).

Each record replays from its start (its seed, slot and episode), its shrunk trace first
(``trace_min``) when it has one, on its game built with its options updated by the ones given
(``--game-arg``: the changed game). The verdict, per record:

* **still present**: its bug fires again, at any step of the trace;
* **changed**: its bug does not fire, another one does (the first such is named);
* **fixed**: no bug fires.

On device the records of one game and options replay together, :data:`RECORDS_PER_CALL` a jitted
vmapped call (:func:`jgtest.report.replay.batch_replayer`); a bridged game's replay one after
another (:func:`jgtest.host_loop.replay_host_record`). Plan runs are verified by running their
plans again (:func:`jgtest.plans.verify.verify_plan_report`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jgtest.errors import BadFile
from jgtest.report.records import BugRecord, replay_command
from jgtest.report.replay import batch_replayer, options_key, replayable

#: Records one device call replays.
RECORDS_PER_CALL = 64
STATUSES = ("still present", "changed", "fixed")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One stored bug against the game now: ``status`` (:data:`STATUSES`), the bug that fired instead
    (``changed``), where the record is, and the command that replays it."""

    record: BugRecord
    status: str
    where: str
    command: str
    other_bug: int | None = None

    @property
    def case_name(self) -> str:
        return f"{self.where}: {self.record.kind} bug {self.record.bug_id}"

    def describe(self) -> str:
        r = self.record
        what = f"{r.game} {r.kind} bug {r.bug_id} ({len(r.trace_min or r.actions)} actions)"
        if self.status == "changed":
            return f"{what}: bug {self.other_bug} fires instead"
        return f"{what}: {'fires again' if self.status == 'still present' else 'no bug fires'}"


def verify_records(located: list[tuple[BugRecord, Path, int]], game_args: dict | None = None) -> list[Verdict]:
    """The verdict of each record (module docstring); ``located``: records with their file and index
    (:func:`jgtest.report.records.located_records`), ``game_args`` the options that change the game.

    Raises:
      BadFile: a record that cannot be replayed here (another game's, a damaged one), named by its file and index.
    """
    from jgtest.host_loop import is_host_game

    game_args = dict(game_args or {})
    verdicts: dict[int, Verdict] = {}
    device: dict[tuple, list[int]] = {}
    for n, (record, path, index) in enumerate(located):
        if record.bug_id < 0 or record.kind == "texture":
            raise BadFile(f"{path} record {index}: only records of a bug the game reports (bug_id >= 0) can be verified by replay")
        if is_host_game(record.game):
            verdicts[n] = _verify_host(record, path, index, game_args)
        else:
            device.setdefault((record.game, options_key({**record.game_kwargs, **game_args})), []).append(n)
    for (game, options), members in device.items():
        for start in range(0, len(members), RECORDS_PER_CALL):
            chunk = members[start : start + RECORDS_PER_CALL]
            for n, fires in zip(chunk, _replay_chunk(game, options, [located[n] for n in chunk])):
                verdicts[n] = _verdict(*located[n], fires)
    return [verdicts[n] for n in range(len(located))]


def _trace(record: BugRecord) -> tuple[int, ...]:
    return record.trace_min or record.actions


def _replay_chunk(game: str, options: tuple, chunk: list[tuple[BugRecord, Path, int]]) -> np.ndarray:
    """``int32[len(chunk), num_bugs]``: each bug's first step in each record's trace (−1: never)."""
    built = None
    for record, path, index in chunk:
        try:
            built = replayable(dataclasses.replace(record, game_kwargs=dict(options), actions=_trace(record), step=len(_trace(record)) - 1),
                               lambda: batch_replayer(game, options))  # fmt: skip
        except BadFile as error:
            raise BadFile(f"{path} record {index}: {error}") from None
        if record.bug_id >= built[0].num_bugs:
            raise BadFile(f"{path} record {index}: it names bug {record.bug_id} but {game} has {built[0].num_bugs} bugs (a record of another game?)")
    env, params, first_fires = built
    cap = max(max(len(_trace(r)) for r, _, _ in chunk), int(np.asarray(params.max_steps_in_episode)))
    size = RECORDS_PER_CALL  # every call the same shape: one compile
    traces, lengths = np.zeros((size, cap), np.int32), np.zeros(size, np.int32)
    seeds, slots, episodes = np.zeros(size, np.uint32), np.zeros(size, np.int32), np.zeros(size, np.int32)
    for i, (record, _, _) in enumerate(chunk):
        trace = _trace(record)
        traces[i, : len(trace)], lengths[i] = trace, len(trace)
        seeds[i], slots[i], episodes[i] = record.seed, record.env_index, record.episode
    fires = first_fires(params, jnp.asarray(seeds), jnp.asarray(slots), jnp.asarray(episodes), jnp.asarray(traces), jnp.asarray(lengths))
    return np.asarray(fires)[: len(chunk)]


def _verdict(record: BugRecord, path: Path, index: int, fires: np.ndarray) -> Verdict:
    command = replay_command(record, path, index)
    where = f"{path} record {index}"
    if fires[record.bug_id] >= 0:
        return Verdict(record, "still present", where, command)
    others = [b for b in np.argsort(np.where(fires >= 0, fires, np.iinfo(np.int32).max), kind="stable") if fires[b] >= 0]
    if others:
        return Verdict(record, "changed", where, command, int(others[0]))
    return Verdict(record, "fixed", where, command)


def _verify_host(record: BugRecord, path: Path, index: int, game_args: dict) -> Verdict:
    """A bridged game's record, replayed on a fresh game with the options given."""
    from jgtest.host_loop import replay_host_record

    replayed = dataclasses.replace(record, actions=_trace(record), step=len(_trace(record)) - 1, game_kwargs={**record.game_kwargs, **game_args})
    try:
        fired = replay_host_record(replayed, every_bug=record.kind != "low_fps")  # a low-FPS point's bug is its place
    except ValueError as error:
        raise BadFile(f"{path} record {index}: {error}") from None
    if record.kind == "low_fps":
        fires = np.full(record.bug_id + 1, -1)
        fires[record.bug_id] = int(np.argmax(fired)) if fired.any() else -1
    else:
        fires = np.array([int(np.argmax(column)) if column.any() else -1 for column in fired.T])
    return _verdict(record, path, index, fires)
