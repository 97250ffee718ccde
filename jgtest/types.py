"""Shared type aliases and :class:`Telemetry`, the record every game's ``step`` reports under
``info["telemetry"]``: what oracles, coverage and reports read, whatever the game.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

PRNGKey = jax.Array
PyTree = Any
#: A campaign's progress callback, ``progress(done, total, found)``: after each unit of work
#: (device call, episode, round, generation), the units done, their total and the bugs or objects
#: found so far.
Progress = Callable[[int, int, int], None]
#: RELINE's progress callback, ``progress(phase, done, total)``: a named phase's periods done.
PhaseProgress = Callable[[str, int, int], None]


@struct.dataclass
class Telemetry:
    """What a game reports about one step, with the same fields in every game.

    Attributes:
      position: ``float32[2]`` position for bird's-eye maps, in map units
        (grid games: ``(row, col)``; continuous games: ``(x, y)``).
      cell: ``int32`` id of the coverage cell the step ended in, in
        ``[0, env.num_cells)`` (the game's bucketing of its state, SPEC §2).
      bugs_fired: ``bool[num_bugs]``, which injected bugs fired this step.
      game_reward: ``float32`` reward of the game alone (no testing bonus).
      frame_time_ms: ``float32`` simulated frame time in milliseconds; zero in
        games that do not simulate rendering load.
      crashed: ``bool``, the game crashed this step (the crash oracle's input).
    """

    position: jax.Array
    cell: jax.Array
    bugs_fired: jax.Array
    game_reward: jax.Array
    frame_time_ms: jax.Array
    crashed: jax.Array

    @classmethod
    def make(
        cls,
        position,
        cell,
        bugs_fired,
        game_reward,
        frame_time_ms=0.0,
        crashed=False,
        *,
        xp=jnp,
    ) -> Telemetry:
        """Builds a record with the canonical dtypes, of ``xp`` arrays (``jax.numpy`` on device,
        ``numpy`` on the host)."""
        return cls(
            position=xp.asarray(position, xp.float32),
            cell=xp.asarray(cell, xp.int32),
            bugs_fired=xp.asarray(bugs_fired, bool),
            game_reward=xp.asarray(game_reward, xp.float32),
            frame_time_ms=xp.asarray(frame_time_ms, xp.float32),
            crashed=xp.asarray(crashed, bool),
        )


def check_telemetry_fields(out, fields, where: str, error: type[Exception]) -> None:
    """Raises ``error`` unless ``out``, what the telemetry function ``where`` names returned, is a
    dict whose keys are all among ``fields``."""
    if not isinstance(out, dict):
        raise error(f"{where} must return a dict of telemetry fields, got {type(out).__name__}")
    unknown = sorted(set(out) - set(fields))
    if unknown:
        raise error(
            f"{where} returned unknown field(s) {', '.join(unknown)}; fields: {', '.join(fields)}"
        )


@struct.dataclass
class Transition:
    """One step of experience, batched as ``[T, N, ...]`` by rollouts.

    ``next_obs`` is the true next observation: the final observation of the
    episode when this step ended it (not the auto-reset one), so a truncated
    step can bootstrap from it (DESIGN.md, "terminated ≠ truncated").
    """

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: jax.Array
    value: jax.Array = None
    log_prob: jax.Array = None
