"""Streaming form of Wuji's stuck oracle: a ring buffer of the last ``n`` states."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jgtest.oracles.predicates import stuck


@struct.dataclass
class StuckMonitor:
    """The previous ``n`` state feature vectors and how many have been seen."""

    history: jax.Array  # [n, d]
    count: jax.Array  # int32


def stuck_init(n: int, d: int) -> StuckMonitor:
    """An empty monitor for ``n`` previous states of ``d`` features."""
    if n < 1 or d < 1:
        raise ValueError(f"stuck monitor needs n >= 1 and d >= 1, got n={n}, d={d}")
    return StuckMonitor(history=jnp.zeros((n, d), jnp.float32), count=jnp.int32(0))


def stuck_update(
    monitor: StuckMonitor, features: jax.Array, threshold: float
) -> tuple[StuckMonitor, jax.Array]:
    """Checks ``features`` against the moving average, then records them.

    Returns ``(monitor, is_stuck)``; ``is_stuck`` is false until ``n`` previous
    states have been seen. Reset the monitor (``stuck_init``) at episode starts.
    """
    n = monitor.history.shape[0]
    features = features.astype(jnp.float32)
    is_stuck = (monitor.count >= n) & stuck(monitor.history, features, threshold)
    history = monitor.history.at[monitor.count % n].set(features)
    return StuckMonitor(history=history, count=monitor.count + 1), is_stuck
