"""Per-episode flags (bugs already fired) kept as the bits of one ``uint32`` a game.

* chosen: a ``uint32`` bitmask in place of a ``bool[N]`` field, because XLA's CPU backend compiles
  a fusion that loads 8-bit values (booleans) to scalar code: the frame-time fusion of a game with
  telemetry, which reads the flags, then ran a fraction of its vector speed.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

#: The most flags one mask holds.
MAX_FLAGS = 32


def pack(flags: Sequence[jax.Array]) -> jax.Array:
    """The ``uint32`` mask whose bit ``i`` is ``flags[i]`` (booleans of one shape)."""
    if len(flags) > MAX_FLAGS:
        raise ValueError(f"a bitmask holds at most {MAX_FLAGS} flags, got {len(flags)}")
    return sum(
        (jnp.asarray(f).astype(jnp.uint32) << jnp.uint32(i) for i, f in enumerate(flags)),
        jnp.uint32(0),
    )


def unpack(mask: jax.Array, n: int) -> jax.Array:
    """``bool[..., n]``: bit ``i`` of ``mask`` in entry ``i``."""
    bits = jnp.asarray(mask, jnp.uint32)[..., None] >> jnp.arange(n, dtype=jnp.uint32)
    return (bits & jnp.uint32(1)).astype(bool)
