"""Private helpers shared by the losses: categorical log-probs, entropy, masked means."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def log_prob_of(logits_t: jax.Array, a_t: jax.Array) -> jax.Array:
    """``log π(a_t | s_t)`` for a categorical policy: ``[T, A], [T] -> [T]``."""
    log_pi_t = jax.nn.log_softmax(logits_t, axis=-1)
    return jnp.take_along_axis(log_pi_t, a_t[:, None].astype(jnp.int32), axis=-1)[:, 0]


def entropy_of(logits_t: jax.Array) -> jax.Array:
    """``H[π(·|s_t)] = −Σ_a π(a|s_t) log π(a|s_t)``: ``[T, A] -> [T]``.

    Safe for ``−inf`` logits (masked actions): their ``0·log 0`` counts as 0, with
    finite gradients.
    """
    log_pi_t = jax.nn.log_softmax(logits_t, axis=-1)
    pi_t = jnp.exp(log_pi_t)
    safe_log_pi_t = jnp.where(pi_t > 0, log_pi_t, 0.0)
    return -jnp.sum(pi_t * safe_log_pi_t, axis=-1)


def as_weights(name: str, w_t: jax.Array | None, like: jax.Array) -> jax.Array:
    """A bool mask or float weights ``[T]`` as float weights in ``like``'s dtype."""
    if w_t is None:
        return jnp.ones_like(like)
    w_t = jnp.asarray(w_t)
    if not (w_t.dtype == jnp.bool_ or jnp.issubdtype(w_t.dtype, jnp.floating)):
        raise AssertionError(f"{name} must be bool or float, got {w_t.dtype}")
    return w_t.astype(like.dtype)


def weighted_mean(x_t: jax.Array, w_t: jax.Array) -> jax.Array:
    """``Σ w·x / Σ w``, and 0 (with zero gradient) when ``Σ w = 0``."""
    total = jnp.sum(w_t)
    safe_total = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, jnp.sum(w_t * x_t) / safe_total, 0.0)
