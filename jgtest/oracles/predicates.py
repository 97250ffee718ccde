"""Stateless oracle predicates (see :mod:`jgtest.oracles`). All jittable and vmappable."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import chex
import jax
import jax.numpy as jnp

from jgtest.types import PyTree, Telemetry


def crash(telemetry: Telemetry) -> jax.Array:
    """Crash oracle: true where the game crashed this step."""
    return telemetry.crashed


def stuck(history: jax.Array, current: jax.Array, threshold: float) -> jax.Array:
    """Wuji's stuck oracle: ``‖s_t − mean(s_{t−n..t−1})‖₂ < threshold``.

    Args:
      history: ``[n, d]`` the previous ``n`` state feature vectors.
      current: ``[d]`` the current state features.
      threshold: ``T_s``.

    Returns:
      bool scalar.
    """
    chex.assert_rank([history, current], [2, 1])
    moving_average = jnp.mean(history, axis=0)
    return jnp.linalg.norm(current - moving_average) < threshold


def logical(assertions: Sequence[Callable[[PyTree], jax.Array]], state: PyTree) -> jax.Array:
    """Logical oracle: ``bool[k]``, true for each user assertion the state violates.

    Each assertion maps a state (any pytree, e.g. ``(state_before, state_after)``)
    to true when the state is valid.
    """
    if not assertions:
        raise ValueError("logical oracle needs at least one assertion")
    return jnp.stack([~jnp.asarray(check(state), bool) for check in assertions])


def balance(performance: jax.Array, low: float, high: float) -> jax.Array:
    """Balance oracle: true where a performance measure is below ``low`` or above ``high``."""
    return (performance < low) | (performance > high)
