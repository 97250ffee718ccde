"""Regression runs (``jgtest verify``, :func:`verify_records`): every stored bug replayed from its
start on its game with the options given (``--game-arg``: the changed game), each judged still
present, changed (another bug fires) or fixed (:data:`STATUSES`).

chosen: a shrunk trace that no longer fires its bug is checked on the full trace, which decides,
because a shrunk trace can go stale.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jgtest.errors import BadFile
from jgtest.records import BugRecord, replay_command
from jgtest.report.replay import batch_replayer, options_key, replayable

#: Records one device call replays.
RECORDS_PER_CALL = 64
STATUSES = ("still present", "changed", "fixed")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One stored bug against the game now: ``status`` (:data:`STATUSES`), the bug that fired
    instead (``changed``), where the record is, the command that replays it, and which trace
    decided."""

    record: BugRecord
    status: str
    where: str
    command: str
    other_bug: int | None = None
    #: Which trace decided: ``"shrunk trace"``, ``"full trace"`` (the shrunk one no longer fired),
    #: or ``""`` for a record without a shrunk trace.
    trace: str = ""

    @property
    def shown_status(self) -> str:
        """The status with the trace that decided it: ``still present (full trace)``."""
        return f"{self.status} ({self.trace})" if self.trace else self.status

    @property
    def case_name(self) -> str:
        return f"{self.where}: {self.record.kind} bug {self.record.bug_id}"

    def describe(self) -> str:
        r = self.record
        what = (
            f"{r.game} {r.kind} bug {r.bug_id} "
            f"({len(r.actions if self.trace == 'full trace' else r.trace_min or r.actions)} "
            "actions)"
        )
        if self.status == "changed":
            return f"{what}: bug {self.other_bug} fires instead"
        return f"{what}: {'fires again' if self.status == 'still present' else 'no bug fires'}"


def verify_records(
    located: list[tuple[BugRecord, Path, int]], game_args: dict | None = None
) -> list[Verdict]:
    """The verdict of each record: **still present** (its bug fires again, at any step of the
    trace), **changed** (another bug fires instead, the first such named) or **fixed** (no bug
    fires). ``located``: records with their file and index (:func:`jgtest.records.located_records`);
    ``game_args``: the options that change the game.

    Each record is first checked against its game (its bug one the game has, of the kind the game
    gives it). A record with a shrunk trace (``trace_min``) replays it first; where its bug does not
    fire there, the full trace replays too and decides (the game changed under it, or the file was
    edited), so a bug is never called fixed on the shrunk trace alone; each verdict says which trace
    decided (``still present (full trace)``). On device the records of one game and options replay
    together, :data:`RECORDS_PER_CALL` a jitted vmapped call
    (:func:`jgtest.report.replay.batch_replayer`); a bridged game's, one after another
    (:func:`jgtest.host_loop.replay_host_record`). Plan runs are verified by running their plans
    again (:func:`jgtest.plans.verify.verify_plan_report`).

    Raises:
      BadFile: a record that cannot be replayed here (another game's, a damaged one, a bug or kind
        its game does not have), named by its file and index.
    """
    game_args = dict(game_args or {})
    for record, path, index in located:
        if record.bug_id < 0 or record.kind == "texture":
            raise BadFile(
                f"{path} record {index}: only records of a bug the game reports (bug_id "
                ">= 0) can be verified by replay"
            )
    verdicts = _replay_all(located, game_args, shrunk=True)
    stale = [
        n
        for n, (record, _, _) in enumerate(located)
        if record.trace_min is not None and verdicts[n].status != "still present"
    ]
    if stale:
        for n, verdict in zip(
            stale, _replay_all([located[n] for n in stale], game_args, shrunk=False)
        ):
            verdicts[n] = verdict
    return verdicts


def _replay_all(
    located: list[tuple[BugRecord, Path, int]], game_args: dict, shrunk: bool
) -> list[Verdict]:
    """Each record's verdict on its shrunk trace where it has one (``shrunk``), else on its full
    trace."""
    from jgtest.host_loop import is_host_game

    verdicts: dict[int, Verdict] = {}
    device: dict[tuple, list[int]] = {}
    for n, (record, path, index) in enumerate(located):
        if is_host_game(record.game):
            verdicts[n] = _verify_host(record, path, index, game_args, shrunk)
        else:
            device.setdefault(
                (record.game, options_key({**record.game_kwargs, **game_args})), []
            ).append(n)
    for (game, options), members in device.items():
        for start in range(0, len(members), RECORDS_PER_CALL):
            chunk = members[start : start + RECORDS_PER_CALL]
            for n, fires in zip(
                chunk, _replay_chunk(game, options, [located[n] for n in chunk], shrunk)
            ):
                verdicts[n] = _verdict(*located[n], fires, shrunk)
    return [verdicts[n] for n in range(len(located))]


def _trace(record: BugRecord, shrunk: bool = True) -> tuple[int, ...]:
    return record.trace_min if shrunk and record.trace_min is not None else record.actions


def _replay_chunk(
    game: str, options: tuple, chunk: list[tuple[BugRecord, Path, int]], shrunk: bool
) -> np.ndarray:
    """``int32[len(chunk), num_bugs]``: each bug's first step in each record's trace (−1: never).

    Each record is checked against the game it was recorded on (:func:`replayable`); on the game as
    changed (``options``), a trace longer than its episode is cut there (nothing after an episode's
    end counts)."""
    for record, path, index in chunk:
        trace = _trace(record, shrunk)
        try:
            replayable(dataclasses.replace(record, actions=trace, step=len(trace) - 1))
            env, params, first_fires = batch_replayer(game, options)
            if record.bug_id >= env.num_bugs:
                raise BadFile(
                    f"the game as changed has {env.num_bugs} bugs, none numbered {record.bug_id}"
                )
            env.check_action(np.asarray(trace), params)
        except ValueError as error:  # BadFile included
            raise BadFile(f"{path} record {index}: {error}") from None
    cap = int(np.asarray(params.max_steps_in_episode))
    size = RECORDS_PER_CALL  # every call the same shape: one compile
    traces, lengths = np.zeros((size, cap), np.int32), np.zeros(size, np.int32)
    seeds, slots, episodes = (
        np.zeros(size, np.uint32),
        np.zeros(size, np.int32),
        np.zeros(size, np.int32),
    )
    for i, (record, _, _) in enumerate(chunk):
        trace = _trace(record, shrunk)[:cap]
        traces[i, : len(trace)], lengths[i] = trace, len(trace)
        seeds[i], slots[i], episodes[i] = record.seed, record.env_index, record.episode
    fires = first_fires(
        params,
        jnp.asarray(seeds),
        jnp.asarray(slots),
        jnp.asarray(episodes),
        jnp.asarray(traces),
        jnp.asarray(lengths),
    )
    return np.asarray(fires)[: len(chunk)]


def _verdict(
    record: BugRecord, path: Path, index: int, fires: np.ndarray, shrunk: bool = True
) -> Verdict:
    command = replay_command(
        record if shrunk else dataclasses.replace(record, trace_min=None), path, index
    )
    where = f"{path} record {index}"
    trace = "" if record.trace_min is None else "shrunk trace" if shrunk else "full trace"
    if fires[record.bug_id] >= 0:
        return Verdict(record, "still present", where, command, trace=trace)
    others = [
        b
        for b in np.argsort(np.where(fires >= 0, fires, np.iinfo(np.int32).max), kind="stable")
        if fires[b] >= 0
    ]
    if others:
        return Verdict(record, "changed", where, command, int(others[0]), trace=trace)
    return Verdict(record, "fixed", where, command, trace=trace)


def _verify_host(
    record: BugRecord, path: Path, index: int, game_args: dict, shrunk: bool
) -> Verdict:
    """A bridged game's record, replayed on a fresh game with the options given."""
    from jgtest.host_loop import replay_host_record

    trace = _trace(record, shrunk)
    replayed = dataclasses.replace(
        record, actions=trace, step=len(trace) - 1, game_kwargs={**record.game_kwargs, **game_args}
    )
    try:
        fired = replay_host_record(
            replayed, every_bug=record.kind != "low_fps"
        )  # a low-FPS point's bug is its place
    except ValueError as error:
        raise BadFile(f"{path} record {index}: {error}") from None
    if record.kind == "low_fps":
        fires = np.full(record.bug_id + 1, -1)
        fires[record.bug_id] = int(np.argmax(fired)) if fired.any() else -1
    else:
        fires = np.array([int(np.argmax(column)) if column.any() else -1 for column in fired.T])
    return _verdict(record, path, index, fires, shrunk)
