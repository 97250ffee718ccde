"""State coverage (Wuji) and visited-cell maps.

Wuji (Zheng et al., ASE 2019, §V-C "Evaluation on coverage increase"): every
state feature is cut into ``m`` equal intervals; a state falls into one bucket
per feature, and the state coverage is the number of distinct bucket tuples
covered (at most ``m**n`` for ``n`` features).

All functions are pure and jittable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def bucketize(features: jax.Array, low, high, num_buckets: int) -> jax.Array:
    """Bucket index of each feature: ``floor((f - low) / (high - low) * m)``.

    Values outside ``[low, high]`` are put in the first or last bucket.

    Args:
      features: ``[..., n]`` state features.
      low, high: bounds per feature (broadcastable to ``[n]``).
      num_buckets: ``m``, equal intervals per feature.

    Returns:
      ``int32[..., n]`` bucket indices in ``[0, m)``.
    """
    scaled = (features - low) / (jnp.asarray(high) - low) * num_buckets
    return jnp.clip(jnp.floor(scaled), 0, num_buckets - 1).astype(jnp.int32)


def bucket_id(features: jax.Array, low, high, num_buckets: int) -> jax.Array:
    """Flat id of the bucket tuple of a state, in ``[0, m**n)``.

    Example:
      >>> int(bucket_id(jnp.array([0.1, 0.9]), 0.0, 1.0, 10))
      19
    """
    idx = bucketize(features, low, high, num_buckets)
    n = idx.shape[-1]
    strides = num_buckets ** jnp.arange(n - 1, -1, -1, dtype=jnp.int32)
    return jnp.sum(idx * strides, axis=-1).astype(jnp.int32)


def visit_counts(cells: jax.Array, num_cells: int, mask: jax.Array | None = None) -> jax.Array:
    """How many times each cell id occurs in ``cells`` (any shape).

    Args:
      cells: integer cell ids.
      num_cells: number of cells (length of the result).
      mask: optional bool array like ``cells``; only ``True`` entries count.

    Returns:
      ``int32[num_cells]`` counts.
    """
    weights = jnp.ones(cells.shape, jnp.int32) if mask is None else mask.astype(jnp.int32)
    return jnp.zeros((num_cells,), jnp.int32).at[cells.reshape(-1)].add(weights.reshape(-1))


def visited(cells: jax.Array, num_cells: int, mask: jax.Array | None = None) -> jax.Array:
    """``bool[num_cells]``: which cells occur at least once."""
    return visit_counts(cells, num_cells, mask) > 0


def state_coverage(cells: jax.Array, num_cells: int, mask: jax.Array | None = None) -> jax.Array:
    """Wuji's state coverage: the number of distinct cells covered."""
    return jnp.sum(visited(cells, num_cells, mask)).astype(jnp.int32)


def visit_map(cells: jax.Array, map_shape: tuple[int, ...], mask: jax.Array | None = None) -> jax.Array:
    """Bird's-eye visit counts: ``visit_counts`` reshaped to ``map_shape``."""
    num_cells = 1
    for d in map_shape:
        num_cells *= d
    return visit_counts(cells, num_cells, mask).reshape(map_shape)
