"""PPO's clipped-surrogate actor-critic loss on one stream (categorical policy)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jgtest.losses._common import entropy_of, log_prob_of


def ppo_loss(
    logits_t: jax.Array,
    v_t: jax.Array,
    a_t: jax.Array,
    old_log_prob_t: jax.Array,
    old_v_t: jax.Array,
    advantage_t: jax.Array,
    return_t: jax.Array,
    *,
    clip_eps: float = 0.2,
    vf_clip: float | None = 0.2,
    vf_coef: float = 0.5,
    ent_coef: float = 0.01,
    normalize_advantages: bool = True,
    adv_norm_eps: float = 1e-8,
    mask_t: jax.Array | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """PPO-Clip loss: clipped surrogate + clipped value loss − entropy bonus.

    Schulman, Wolski, Dhariwal, Radford & Klimov (2017), "Proximal policy
    optimization algorithms", arXiv:1707.06347 (eq. 7 and eq. 9); value clipping
    as in the OpenAI baselines ``ppo2`` implementation::

        ρ_t     = π(a_t|s_t) / π_old(a_t|s_t) = exp(log π(a_t|s_t) − old_log_prob_t)
        L_pi    = −mean_t min(ρ_t·Â_t, clip(ρ_t, 1−ε, 1+ε)·Â_t)
        ṽ_t     = old_v_t + clip(v_t − old_v_t, −c, c)
        L_v     = 0.5·mean_t max((v_t − R_t)², (ṽ_t − R_t)²)
        H       = mean_t H[π(·|s_t)]
        loss    = L_pi + vf_coef·L_v − ent_coef·H

    ``Â`` is ``advantage_t``, standardised over the stream when
    ``normalize_advantages`` (``(A − mean A) / (std A + adv_norm_eps)``). PPO
    normalises over the *minibatch*: call this on the flattened minibatch
    (``[B·T, ...]``), not under ``vmap`` over its rows, or each row is normalised
    on its own. Under ``vmap`` the losses are per row: take their mean.

    ``old_log_prob_t``, ``old_v_t``, ``advantage_t`` and ``return_t`` are
    constants of the update: gradients through them are stopped.

    Args:
      logits_t: ``float[T, A]`` current policy logits.
      v_t: ``float[T]`` current value estimates ``V(s_t)``.
      a_t: ``int[T]`` actions taken.
      old_log_prob_t: ``float[T]`` ``log π_old(a_t|s_t)`` at collection time.
      old_v_t: ``float[T]`` value estimates at collection time.
      advantage_t: ``float[T]`` advantages (e.g. from :func:`jgtest.losses.gae`).
      return_t: ``float[T]`` value targets ``R_t`` (e.g. GAE's λ-returns).
      clip_eps: ``ε``, the ratio clip.
      vf_clip: ``c``, the value clip; ``None`` for the unclipped ``0.5·(v − R)²``.
      vf_coef: weight of the value loss.
      ent_coef: weight of the entropy bonus.
      normalize_advantages: standardise ``advantage_t`` over the stream.
      adv_norm_eps: added to the standard deviation when normalising.
      mask_t: ``bool[T]`` or ``None``: the steps that count. Every mean above (and the advantages'
        standardisation) is over them alone, so masked steps add nothing to the loss or its gradient
        (e.g. steps where a test, not the policy, drove the game: :func:`jgtest.losses.gae`'s
        ``valid_t``).

    Returns:
      ``(loss, metrics)``: scalar loss and a dict of scalars ``policy_loss``,
      ``value_loss`` (``L_v``, before ``vf_coef``), ``entropy``, ``approx_kl``
      (``mean((ρ − 1) − log ρ)``, the low-variance estimator of
      ``KL(π_old ‖ π)``) and ``clip_fraction`` (share of steps with
      ``|ρ − 1| > ε``).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jgtest.losses import ppo_loss
      >>> a, old_log_prob = jnp.array([0, 1]), jnp.log(jnp.array([0.5, 0.5]))
      >>> adv, zeros = jnp.array([1.0, -1.0]), jnp.zeros(2)
      >>> def loss_fn(logits):                          # logits: the policy head's output [B, A]
      ...     return ppo_loss(logits, zeros, a, old_log_prob, zeros, adv, zeros)
      >>> (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(jnp.zeros((2, 2)))
      >>> float(metrics["approx_kl"]), grads.shape      # the collecting policy: no step taken yet
      (0.0, (2, 2))
    """
    chex.assert_rank(
        [logits_t, v_t, a_t, old_log_prob_t, old_v_t, advantage_t, return_t], [2, 1, 1, 1, 1, 1, 1]
    )
    chex.assert_type([logits_t, v_t, old_log_prob_t, old_v_t, advantage_t, return_t], float)
    chex.assert_type(a_t, int)
    chex.assert_equal_shape([v_t, a_t, old_log_prob_t, old_v_t, advantage_t, return_t])
    chex.assert_equal_shape_prefix([logits_t, v_t], 1)

    old_log_prob_t = jax.lax.stop_gradient(old_log_prob_t)
    old_v_t = jax.lax.stop_gradient(old_v_t)
    advantage_t = jax.lax.stop_gradient(advantage_t)
    return_t = jax.lax.stop_gradient(return_t)

    if mask_t is not None:
        chex.assert_equal_shape([v_t, mask_t])
    weight_t = jnp.ones_like(v_t) if mask_t is None else mask_t.astype(v_t.dtype)
    mean = lambda x: jnp.sum(weight_t * x) / jnp.maximum(jnp.sum(weight_t), 1.0)
    if normalize_advantages:
        centred_t = advantage_t - mean(advantage_t)
        advantage_t = centred_t / (jnp.sqrt(mean(jnp.square(centred_t))) + adv_norm_eps)

    log_prob_t = log_prob_of(logits_t, a_t)
    log_ratio_t = log_prob_t - old_log_prob_t
    ratio_t = jnp.exp(log_ratio_t)
    surrogate_t = ratio_t * advantage_t
    clipped_surrogate_t = jnp.clip(ratio_t, 1.0 - clip_eps, 1.0 + clip_eps) * advantage_t
    policy_loss = -mean(jnp.minimum(surrogate_t, clipped_surrogate_t))

    value_sq_t = jnp.square(v_t - return_t)
    if vf_clip is not None:
        v_clipped_t = old_v_t + jnp.clip(v_t - old_v_t, -vf_clip, vf_clip)
        value_sq_t = jnp.maximum(value_sq_t, jnp.square(v_clipped_t - return_t))
    value_loss = 0.5 * mean(value_sq_t)

    entropy = mean(entropy_of(logits_t))
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy

    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": jax.lax.stop_gradient(mean((ratio_t - 1.0) - log_ratio_t)),
        "clip_fraction": jax.lax.stop_gradient(
            mean((jnp.abs(ratio_t - 1.0) > clip_eps).astype(ratio_t.dtype))
        ),
    }
    return loss, metrics
