"""Fast random draws for the games: ``jax.random``'s distributions from half the threefry work.

A threefry block yields two uniform 32-bit words; ``jax.random.bits`` XORs them into one value,
while :func:`random_words` keeps both (the raw words of ``jax.random.split``), so :func:`uniform`
draws two float32 values per block.

* chosen: dtypes other than float32 go to ``jax.random.uniform`` unchanged, because float64 under
  x64 needs its 52 random bits.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

#: The float32 1.0 bit pattern, as ``jax.random.uniform`` uses: 23 random mantissa bits below it
#: give [1, 2).
_ONE_BITS = 0x3F800000


def random_words(key: jax.Array, n: int) -> jax.Array:
    """``uint32[n]`` independent uniform words from ``ceil(n / 2)`` threefry blocks.

    With the default (partitionable) threefry, ``jax.random.bits(key, (n,))`` runs one block per
    value (element ``i`` is the block at counter ``i``, the block ``fold_in(key, i)`` and
    ``split(key, n)[i]`` return) and XORs its two output words into one. These are the words of
    ``split`` unreduced, two per block, as ``jax.random.bits`` gives them under x64 for ``uint64``.
    """
    words = jax.random.key_data(jax.random.split(key, -(-n // 2))).reshape(-1)
    return words[:n].astype(jnp.uint32)


def uniform(
    key: jax.Array, shape: tuple[int, ...] = (), minval=0.0, maxval=1.0, dtype=None
) -> jax.Array:
    """Uniform values in ``[minval, maxval)``, as ``jax.random.uniform``.

    ``dtype`` defaults to JAX's default float. float32 values take 23 random
    mantissa bits each, as ``jax.random.uniform`` does, from :func:`random_words`;
    other dtypes go to ``jax.random.uniform`` unchanged (so float64 under x64
    keeps its 52 random bits and its exact values).
    """
    dtype = jnp.dtype(dtype or jnp.zeros(()).dtype)
    if dtype != jnp.float32:
        return jax.random.uniform(key, shape, dtype, minval, maxval)
    words = random_words(key, math.prod(shape)).reshape(shape)
    unit = jax.lax.bitcast_convert_type((words >> 9) | jnp.uint32(_ONE_BITS), jnp.float32) - 1.0
    return jnp.maximum(minval, unit * (maxval - minval) + minval).astype(dtype)
