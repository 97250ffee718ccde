"""Fast random draws for the games: ``jax.random``'s distributions from half the threefry work.

A threefry block yields two uniform 32-bit words; ``jax.random.bits`` XORs them into one value,
while :func:`random_words` keeps both (the raw words of ``jax.random.split``), so :func:`uniform`
draws two float32 values per block.

Threefry itself is written out here (:func:`threefry_block`) for the few values a game draws each
step (:func:`random_words`, :func:`fold_in`, :func:`normal`): the same bits as ``jax.random``.

* chosen: dtypes other than float32 go to ``jax.random.uniform`` unchanged, because float64 under
  x64 needs its 52 random bits.
* chosen: threefry as plain elementwise code for these small draws, because JAX lowers it on CPU to
  a five-trip while loop, a handful of kernel launches per draw that dominate a step of a few games
  a core; the games' large draws (levels, placements) keep ``jax.random``, where the loop is faster,
  and so does a draw of more than :data:`WRITTEN_OUT_MAX_WORDS` words a game under ``vmap``.
"""

from __future__ import annotations

import math

import jax
import jax.extend.random as jax_random
import jax.numpy as jnp
import numpy as np

#: The float32 1.0 bit pattern, as ``jax.random.uniform`` uses: 23 random mantissa bits below it
#: give [1, 2).
_ONE_BITS = 0x3F800000


#: Threefry-2x32's rotations, the even and the odd groups of four rounds (Salmon et al. 2011).
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


#: Vectorised draws of more words than this a game run JAX's own threefry (:func:`_threefry_words`).
WRITTEN_OUT_MAX_WORDS = 512


@jax.custom_batching.custom_vmap
def _threefry_words(k0, k1, x0, x1):
    """Threefry-2x32's 20 rounds on the counter words ``(x0, x1)`` under the key words
    ``(k0, k1)``, as JAX computes them, written out as plain elementwise code.

    * chosen: under ``vmap``, a draw of more than :data:`WRITTEN_OUT_MAX_WORDS` words a game runs
      JAX's own threefry instead (the same words), because XLA fuses written-out rounds into each
      of their consumers and computes them again in each, which costs more than the loop's
      launches once a game's draw is large; a small draw stays written out at any number of
      games, where XLA's CPU code runs it in vector lanes, faster than the loop.
    """
    ks = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << jnp.uint32(r)) | (x1 >> jnp.uint32(32 - r)))
        x0 = x0 + ks[(group + 1) % 3]
        x1 = x1 + ks[(group + 2) % 3] + jnp.uint32(group + 1)
    return x0, x1


@_threefry_words.def_vmap
def _threefry_words_batched(axis_size, in_batched, *words):
    """:func:`_threefry_words` over ``axis_size`` games: written out while a game's draw is at
    most :data:`WRITTEN_OUT_MAX_WORDS` words, else JAX's threefry primitive."""
    in_axes = [0 if batched else None for batched in in_batched]
    draw = max(math.prod(w.shape) // (axis_size if b else 1) for w, b in zip(words, in_batched))
    if draw <= WRITTEN_OUT_MAX_WORDS:
        return jax.vmap(_threefry_words.fun, in_axes)(*words), (True, True)
    full = jax.vmap(jnp.broadcast_arrays, in_axes, axis_size=axis_size)(*words)
    return tuple(jax_random.threefry2x32_p.bind(*full)), (True, True)


def threefry_block(key: jax.Array, x0: jax.Array, x1: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Threefry-2x32's block at the counter words ``(x0, x1)`` under the threefry ``key``: the
    words ``jax.random`` computes (:func:`_threefry_words`)."""
    k0, k1 = (w.astype(jnp.uint32) for w in jax.random.key_data(key))
    x0, x1 = jnp.broadcast_arrays(jnp.uint32(x0), jnp.uint32(x1))
    return _threefry_words(k0, k1, x0, x1)


def _typed_threefry(key: jax.Array) -> bool:
    """Whether ``key`` is a typed threefry key, the only kind written-out threefry serves (a raw
    ``uint32`` key or another implementation goes to ``jax.random``)."""
    return jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and (
        str(jax.random.key_impl(key)) == "threefry2x32"
    )


def _unit(words: jax.Array) -> jax.Array:
    """float32 values in [0, 1) from uint32 words' top 23 bits, as ``jax.random.uniform``."""
    return jax.lax.bitcast_convert_type((words >> 9) | jnp.uint32(_ONE_BITS), jnp.float32) - 1.0


def fold_in(key: jax.Array, data: int) -> jax.Array:
    """``jax.random.fold_in(key, data)``: for a threefry key, the block at counter ``data``."""
    if not _typed_threefry(key):
        return jax.random.fold_in(key, data)
    return jax.random.wrap_key_data(jnp.stack(threefry_block(key, 0, data)))


def normal(key: jax.Array) -> jax.Array:
    """``jax.random.normal(key, ())`` in float32: for a threefry key, the block at counter 0, its
    words XOR'd into the bits of a uniform in ``(-1, 1)``, then ``sqrt(2) erfinv``."""
    if not _typed_threefry(key):
        return jax.random.normal(key, (), jnp.float32)
    words = threefry_block(key, 0, 0)
    lo = np.nextafter(np.float32(-1.0), np.float32(0.0))
    u = jnp.maximum(lo, _unit(words[0] ^ words[1]) * (jnp.float32(1.0) - lo) + lo)
    return jnp.float32(np.sqrt(2)) * jax.lax.erf_inv(u)


def random_words(key: jax.Array, n: int) -> jax.Array:
    """``uint32[n]`` independent uniform words from ``ceil(n / 2)`` threefry blocks.

    With the default (partitionable) threefry, ``jax.random.bits(key, (n,))`` runs one block per
    value (element ``i`` is the block at counter ``i``, the block ``fold_in(key, i)`` and
    ``split(key, n)[i]`` return) and XORs its two output words into one. These are the words of
    ``split`` unreduced, two per block, as ``jax.random.bits`` gives them under x64 for ``uint64``.
    """
    blocks = -(-n // 2)
    if not _typed_threefry(key):
        return jax.random.key_data(jax.random.split(key, blocks)).reshape(-1)[:n].astype(jnp.uint32)
    words = threefry_block(key, 0, jnp.arange(blocks, dtype=jnp.uint32))
    return jnp.stack(words, axis=-1).reshape(-1)[:n]


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
    unit = _unit(random_words(key, math.prod(shape)).reshape(shape))
    return jnp.maximum(minval, unit * (maxval - minval) + minval).astype(dtype)
