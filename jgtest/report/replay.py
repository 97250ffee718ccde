"""Replaying a bug record: re-run its action trace with the campaign's keys (:func:`replay`).

chosen: one game and one compiled replay per game and options, traces padded to the episode cap
(steps past the record's dropped), because a campaign's records, and a test's, then share the game
and the compile.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.base import check_recorded_bug
from jgtest.envs.registration import hashable, make
from jgtest.errors import BadFile
from jgtest.records import BugRecord
from jgtest.rollout import replay_start, replay_step, replay_trace


@dataclasses.dataclass(frozen=True)
class ReplayResult:
    """Outcome of a replay: whether the recorded bug fired at the recorded step."""

    reproduced: bool
    fired_at_steps: tuple[int, ...]  # every step of the trace at which the bug fired
    record: BugRecord

    def describe(self) -> str:
        r = self.record
        where = (
            f"{r.game} bug {r.bug_id} ({r.kind}), episode {r.episode} of slot "
            f"{r.env_index}, seed {r.seed}"
        )
        if self.reproduced:
            return f"reproduced: {where} fired at step {r.step} after {len(r.actions)} actions"
        seen = (
            f"it fired at steps {list(self.fired_at_steps)}"
            if self.fired_at_steps
            else "it never fired"
        )
        return f"NOT reproduced: {where} expected at step {r.step}; {seen}"


def replay(record: BugRecord) -> ReplayResult:
    """Replays ``record`` and checks that its bug fires at its step: on device, or on a bridged game
    that starts its episodes from a seed (:func:`jgtest.host_loop.replay_host_record`).

    Raises:
      BadFile: the record cannot be replayed here: not an injected bug, a game that is not
        registered or refuses its options, a bug or an action the game does not have.
    """
    if record.bug_id < 0:
        raise BadFile("only records of injected bugs (bug_id >= 0) can be replayed on device")
    from jgtest.host_loop import is_host_game, replay_host_record

    if is_host_game(record.game):
        try:
            fired = replay_host_record(record)
        except ValueError as error:
            raise BadFile(
                f"the record of {record.game} (bug {record.bug_id}, episode "
                f"{record.episode}) cannot be replayed: {error}"
            ) from None
        steps = tuple(int(s) for s in np.flatnonzero(fired))
        return ReplayResult(
            reproduced=bool(record.step < len(fired) and fired[record.step]),
            fired_at_steps=steps,
            record=record,
        )
    env, params, run = replayable(
        record, lambda: _game(record.game, options_key(record.game_kwargs))
    )
    actions = np.asarray(record.actions, np.int32)
    padded = np.zeros(max(len(actions), int(np.asarray(params.max_steps_in_episode))), np.int32)
    padded[: len(actions)] = actions
    telemetry = run(params, record.seed, record.env_index, record.episode, jnp.asarray(padded))
    fired = np.asarray(telemetry.bugs_fired[: len(actions), record.bug_id])
    steps = tuple(int(s) for s in np.flatnonzero(fired))
    return ReplayResult(reproduced=bool(fired[record.step]), fired_at_steps=steps, record=record)


def replay_telemetry(record: BugRecord, shortest: bool = True) -> tuple[object, dict]:
    """The game's parameters and, after each action of the record's shortest reproducer
    (``trace_min``, else its actions; with ``shortest=False`` its actions) replayed on the bare
    game, the player's ``position`` ``float[T, D]`` and the ``frame_time_ms`` ``float[T]`` (what
    the report draws).

    Raises:
      BadFile: the record cannot be replayed here (:func:`replayable`).
    """
    trace, env, params, run = _replayable_trace(record, shortest)
    padded = np.zeros(max(len(trace), int(np.asarray(params.max_steps_in_episode))), np.int32)
    padded[: len(trace)] = trace
    telemetry = run(params, record.seed, record.env_index, record.episode, jnp.asarray(padded))
    return params, {
        "position": np.asarray(telemetry.position[: len(trace)], np.float64),
        "frame_time_ms": np.asarray(telemetry.frame_time_ms[: len(trace)], np.float64),
    }


def replay_positions(record: BugRecord, shortest: bool = True) -> np.ndarray:
    """``float[T, D]``: the player's position after each action (:func:`replay_telemetry`)."""
    return replay_telemetry(record, shortest)[1]["position"]


def trace_lines(result: ReplayResult) -> list[str]:
    """The replayed trace, a line a step: its action (by name where the game names them), the
    player's position after it on a game replayed on device, and where the bug fired, the recorded
    step marked."""
    record = result.record
    names, positions = (), None
    if not _is_host(record.game):
        env, _, _ = replayable(record, lambda: _game(record.game, options_key(record.game_kwargs)))
        names = tuple(getattr(env, "action_names", ()) or ())
        positions = replay_positions(record, shortest=False)
    fired = set(result.fired_at_steps)
    lines = []
    for step, action in enumerate(record.actions):
        named = f" {names[action]}" if action < len(names) else ""
        where = (
            f"  at ({', '.join(f'{p:g}' for p in positions[step])})"
            if positions is not None
            else ""
        )
        mark = ""
        if step in fired:
            mark = f"  <- bug {record.bug_id} fires" + (
                " (the recorded step)" if step == record.step else ""
            )
        lines.append(f"step {step:>5d}  action {action}{named}{where}{mark}")
    return lines


def _is_host(game: str) -> bool:
    from jgtest.host_loop import is_host_game

    return is_host_game(game)


def replay_frames(record: BugRecord) -> np.ndarray:
    """``uint8[T, H, W, C]``: the frame after each action of the record's shortest reproducer,
    replayed on the bare game, for a game whose observation is its frames (the ``rgb_frames``
    signal).

    Raises:
      BadFile: the record cannot be replayed here (:func:`replayable`), or its game draws no frames.
    """
    trace, env, params, _ = _replayable_trace(record)
    if "rgb_frames" not in env.signals:
        raise BadFile(f"{record.game} draws no frames")
    frames = replay_trace(
        env,
        params,
        record.seed,
        record.env_index,
        record.episode,
        jnp.asarray(trace),
        observations=True,
    )[3]
    return np.asarray(frames, np.uint8)


def replay_object_boxes(record: BugRecord) -> np.ndarray | None:
    """``int32[T, 4]``: the box ``(row0, col0, row1, col1)`` of the object the record names (its
    ``bug_id``, an object test's) in the frame after each action of its shortest reproducer, all
    zeros where it is out of view; ``None`` for a game that lists no objects (the ``objects``
    signal) or a record of another kind.

    Raises:
      BadFile: the record cannot be replayed here (:func:`replayable`).
    """
    if record.kind != "texture":
        return None
    trace, env, params, _ = _replayable_trace(record)
    options = options_key(record.game_kwargs)
    if "objects" not in env.signals or not hasattr(env, "observe"):
        return None
    boxes = _box_replayer(record.game, options)(
        params, record.seed, record.env_index, record.episode, jnp.asarray(trace), record.bug_id
    )
    return np.asarray(boxes, np.int32)


@functools.lru_cache(maxsize=16)
def _box_replayer(name: str, options: tuple):
    """:func:`replay_object_boxes`' jitted replay for the game ``name`` built with ``options``."""
    env, _, _ = _game(name, options)

    def boxes(params, seed, slot, episode, actions, object_id):
        ep_key, state = replay_start(env, params, seed, slot, episode)

        def body(state, xs):
            state = replay_step(env, params, ep_key, state, *xs)[1]
            objects = env.observe(state, params)[1]["objects"]
            shown = (objects["id"] == object_id) & objects["visible"]
            return state, jnp.where(shown.any(), objects["box"][jnp.argmax(shown)], 0)

        return jax.lax.scan(body, state, (jnp.arange(actions.shape[0]), actions))[1]

    return jax.jit(boxes)


def _replayable_trace(record: BugRecord, shortest: bool = True):
    """``(trace, env, params, replay)``: the actions a view replays (the record's shortest
    reproducer, ``trace_min``, else its actions; with ``shortest=False`` its actions) and its game
    checked against them (:func:`replayable`)."""
    trace = np.asarray((record.trace_min if shortest else None) or record.actions, np.int32)
    game = replayable(
        dataclasses.replace(record, actions=tuple(trace.tolist()), step=len(trace) - 1),
        lambda: _game(record.game, options_key(record.game_kwargs)),
    )
    return (trace, *game)


def replayable(record: BugRecord, build=None):
    """The game ``record`` names, built with its options (``build()``; default ``make``), once the
    record is checked against it: its bug is one the game has, of the kind the game gives it (an
    object test's ``texture`` record names an object instead), its
    actions are in the game's action space, and its trace is no longer than the game's episode (so a
    replay's memory is bounded by the episode, whatever the record holds).

    Raises:
      BadFile: the game is not registered or refuses the options, or the record does not fit it (a
        record of another game, or a damaged or edited one); the message says how.
    """
    try:
        game = build() if build is not None else _built(record.game, record.game_kwargs)
    except ValueError as error:
        raise BadFile(
            f"the record of {record.game} (bug {record.bug_id}, episode "
            f"{record.episode}) cannot be replayed: {error}"
        ) from None
    env, params = game[:2]
    if record.kind != "texture":  # an object test's record names an object, not an injected bug
        _check_bug(record, env, params)
    try:
        env.check_action(np.asarray(record.actions), params)
    except ValueError as error:
        raise BadFile(
            f"the record of {record.game} (bug {record.bug_id}, episode "
            f"{record.episode}) cannot be replayed: {error}"
        ) from None
    return game


def _check_bug(record: BugRecord, env, params) -> None:
    """Refuses a record whose bug the game does not have, or has as another kind, or whose trace is
    longer than the game's episode."""
    check_recorded_bug(record.game, env.bug_kinds, record.bug_id, record.kind)
    cap = int(np.asarray(params.max_steps_in_episode))
    if len(record.actions) > cap:
        raise BadFile(
            f"the record holds {len(record.actions):,} actions, but an episode of "
            f"{record.game} ends by step {cap:,} (a damaged record?)"
        )


def _built(name: str, options: dict):
    """``make(name, **options)``, the same game object for the same options where they are hashable,
    so that what a replay compiles for a game (jitted per game object) is compiled once for its
    records."""
    try:
        return _game(name, tuple(sorted(options.items())))[:2]
    except TypeError:  # an unhashable option's value (a list): built afresh
        return make(name, **options)


@functools.lru_cache(maxsize=16)
def _game(name: str, options: tuple):
    """``(env, params, replay)`` of the game ``name`` built with ``options`` (``(name, value)``
    pairs), ``replay(params, seed, slot, episode, actions)`` jitted: the stacked telemetry of the
    trace."""
    env, params = make(name, **dict(options))
    return (
        env,
        params,
        jax.jit(
            lambda params, seed, slot, episode, actions: replay_trace(
                env, params, seed, slot, episode, actions
            )[0]
        ),
    )


@functools.lru_cache(maxsize=16)
def batch_replayer(name: str, options: tuple):
    """``(env, params, first_fires)`` of the game ``name`` built with ``options`` (``(name, value)``
    pairs): ``first_fires(params, seeds [B], slots [B], episodes [B], traces [B, T], lengths [B])``,
    jitted and vmapped over the traces, is ``int32[B, num_bugs]``: the first step at which each bug
    fires in each trace, within its length and before its episode ends (−1: it does not). What the
    shrinker (:mod:`jgtest.report.shrink`) and ``jgtest verify`` (:mod:`jgtest.report.verify`)
    replay their traces with, many in one call."""
    env, params = make(name, **dict(options))

    def first_fires(params, seed, slot, episode, actions, length):
        ep_key, state = replay_start(env, params, seed, slot, episode)

        def body(carry, xs):  # reduced as it steps: memory of a trace's bugs, not of its steps
            state, first, ended = carry
            t = xs[0]
            _, state, telemetry, terminated, truncated = replay_step(
                env, params, ep_key, state, *xs
            )
            hit = telemetry.bugs_fired & (t < length) & ~ended  # up to the episode's end
            return (
                state,
                jnp.where((first < 0) & hit, t, first),
                ended | terminated | truncated,
            ), None

        first = jnp.full(env.num_bugs, -1, jnp.int32)
        (_, first, _), _ = jax.lax.scan(
            body, (state, first, jnp.zeros((), bool)), (jnp.arange(actions.shape[0]), actions)
        )
        return first

    return env, params, jax.jit(jax.vmap(first_fires, in_axes=(None, 0, 0, 0, 0, 0)))


def options_key(options: dict) -> tuple:
    """A game's options as the hashable key :func:`batch_replayer` caches on."""
    return tuple(sorted((k, hashable(v)) for k, v in options.items()))
