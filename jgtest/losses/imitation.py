"""Imitation losses: behaviour cloning."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jgtest.losses._common import as_weights, log_prob_of, weighted_mean


def bc_loss(
    logits_t: jax.Array, a_t: jax.Array, mask_t: jax.Array | None = None
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Behaviour cloning: masked mean cross-entropy of the policy to demonstrated actions.

    Pomerleau (1991), "Efficient training of artificial neural networks for
    autonomous navigation"; used by PPGTA/Inspector to imitate demonstrations
    (the ``CE(a_t, student)`` term)::

        loss = Σ_t m_t · (−log π(a_t|s_t)) / Σ_t m_t        (0 when Σ_t m_t = 0)

    Args:
      logits_t: ``float[T, A]`` policy logits.
      a_t: ``int[T]`` demonstrated actions.
      mask_t: optional ``bool[T]`` (or ``float[T]`` weights), which steps count
        (e.g. not padding); ``None`` counts every step.

    Returns:
      ``(loss, metrics)``: scalar loss and a dict of scalars ``accuracy`` (masked
      share of steps where ``argmax π = a_t``).

    Example:
      >>> import jax.numpy as jnp
      >>> from jgtest.losses import bc_loss
      >>> logits = jnp.array([[5.0, 0.0], [0.0, 5.0], [5.0, 0.0]])
      >>> loss, metrics = bc_loss(logits, jnp.array([0, 1, 1]), jnp.array([True, True, False]))
      >>> float(metrics["accuracy"])   # the masked-out third step does not count
      1.0
    """
    chex.assert_rank([logits_t, a_t], [2, 1])
    chex.assert_type(logits_t, float)
    chex.assert_type(a_t, int)
    chex.assert_equal_shape_prefix([logits_t, a_t], 1)
    if mask_t is not None:
        chex.assert_rank(mask_t, 1)
        chex.assert_equal_shape([a_t, mask_t])
    w_t = jax.lax.stop_gradient(as_weights("mask_t", mask_t, logits_t[:, 0]))

    loss = weighted_mean(-log_prob_of(logits_t, a_t), w_t)
    correct_t = (jnp.argmax(logits_t, axis=-1) == a_t).astype(logits_t.dtype)
    return loss, {"accuracy": jax.lax.stop_gradient(weighted_mean(correct_t, w_t))}
