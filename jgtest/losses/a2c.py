"""Advantage actor-critic (A2C) loss on one stream (categorical policy)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jgtest.losses._common import entropy_of, log_prob_of


def a2c_loss(
    logits_t: jax.Array,
    v_t: jax.Array,
    a_t: jax.Array,
    advantage_t: jax.Array,
    return_t: jax.Array,
    *,
    vf_coef: float = 0.5,
    ent_coef: float = 0.01,
    mask_t: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Advantage actor-critic loss: policy gradient + value regression − entropy bonus.

    Mnih, Badia, Mirza, Graves, Lillicrap, Harley, Silver & Kavukcuoglu (2016),
    "Asynchronous methods for deep reinforcement learning" (A3C), ICML,
    arXiv:1602.01783; A2C is its synchronous variant. Wuji (Zheng et al. 2019,
    "Wuji: automatic online combat game testing using evolutionary deep
    reinforcement learning", ASE, §III-D "DRL training") fine-tunes every
    offspring policy with "a standard DRL algorithm named advantage actor critic
    (A2C)"::

        L_pi  = −mean_t log π(a_t|s_t) · sg(A_t)
        L_v   = 0.5·mean_t (v_t − sg(R_t))²
        H     = mean_t H[π(·|s_t)]
        loss  = L_pi + vf_coef·L_v − ent_coef·H

    where ``sg`` is ``stop_gradient``. With n-step returns, ``A_t = R_t − V(s_t)``;
    :func:`jgtest.losses.gae` with ``lam=1`` gives those (bootstrapped from the
    last value, terminated ≠ truncated).

    Args:
      logits_t: ``float[T, A]`` policy logits.
      v_t: ``float[T]`` value estimates ``V(s_t)``.
      a_t: ``int[T]`` actions taken.
      advantage_t: ``float[T]`` advantages (constants of the update).
      return_t: ``float[T]`` value targets (constants of the update).
      vf_coef: weight of the value loss.
      ent_coef: weight of the entropy bonus.
      mask_t: ``bool[T]``, the rows that are steps (the means are over them); all by default.

    Returns:
      ``(loss, metrics)``: scalar loss and a dict of scalars ``policy_loss``,
      ``value_loss`` (``L_v``, before ``vf_coef``) and ``entropy``.

    Example:
      >>> import jax.numpy as jnp
      >>> from jgtest.losses import a2c_loss
      >>> logits = jnp.zeros((2, 3))                      # a uniform policy over 3 actions
      >>> ones = jnp.ones(2)
      >>> loss, metrics = a2c_loss(logits, jnp.zeros(2), jnp.array([0, 2]), ones, ones)
      >>> round(float(metrics["entropy"]), 4)             # log 3
      1.0986
    """
    chex.assert_rank([logits_t, v_t, a_t, advantage_t, return_t], [2, 1, 1, 1, 1])
    chex.assert_type([logits_t, v_t, advantage_t, return_t], float)
    chex.assert_type(a_t, int)
    chex.assert_equal_shape([v_t, a_t, advantage_t, return_t])
    chex.assert_equal_shape_prefix([logits_t, v_t], 1)

    advantage_t = jax.lax.stop_gradient(advantage_t)
    return_t = jax.lax.stop_gradient(return_t)

    weight = jnp.ones_like(v_t) if mask_t is None else mask_t.astype(v_t.dtype)
    mean = lambda x: jnp.sum(x * weight) / jnp.maximum(jnp.sum(weight), 1.0)
    policy_loss = -mean(log_prob_of(logits_t, a_t) * advantage_t)
    value_loss = 0.5 * mean(jnp.square(v_t - return_t))
    entropy = mean(entropy_of(logits_t))
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
    return loss, {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}
