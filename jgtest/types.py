"""Shared type aliases and :class:`Telemetry`, the record every game's ``step`` reports under
``info["telemetry"]``: what oracles, coverage and reports read, whatever the game.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

PRNGKey = jax.Array
PyTree = Any


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
    ) -> Telemetry:
        """Builds a record with the canonical dtypes."""
        return cls(
            position=jnp.asarray(position, jnp.float32),
            cell=jnp.asarray(cell, jnp.int32),
            bugs_fired=jnp.asarray(bugs_fired, bool),
            game_reward=jnp.asarray(game_reward, jnp.float32),
            frame_time_ms=jnp.asarray(frame_time_ms, jnp.float32),
            crashed=jnp.asarray(crashed, bool),
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
