"""DQN / double-DQN TD loss on a batch of transitions, and target-network updates."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import optax

from jgtest.types import PyTree


def dqn_loss(
    q_tm1: jax.Array,
    a_tm1: jax.Array,
    r_t: jax.Array,
    discount_t: jax.Array,
    q_t_target: jax.Array,
    q_t_online: jax.Array | None = None,
    *,
    huber_delta: float | None = 1.0,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """One-step Q-learning TD loss with a target network, optionally double-Q.

    DQN: Mnih et al. (2015), "Human-level control through deep reinforcement
    learning", Nature 518. Double DQN: van Hasselt, Guez & Silver (2016), "Deep
    reinforcement learning with double Q-learning", AAAI, arXiv:1509.06461::

        a*_t   = argmax_a q_t_online[a]   if q_t_online is given   (double DQN)
               = argmax_a q_t_target[a]   otherwise                (DQN)
        y_t    = r_t + discount_t · q_t_target[a*_t]               (no gradient)
        δ_t    = y_t − q_tm1[a_tm1]
        loss   = mean_b huber_κ(δ_t),   huber_κ(x) = ½x² if |x| ≤ κ else κ(|x| − ½κ)

    (``huber_delta=None`` gives ``½δ²``, the squared error with the same scale
    as Huber's quadratic part.) ``max_a q_t_target[a]`` equals
    ``q_t_target[argmax_a q_t_target[a]]``, so without ``q_t_online`` this is
    the 2015 target.

    ``discount_t = γ·(1 − terminated_t)``: a *truncated* transition keeps
    ``γ`` and bootstraps from the final observation ``s_t`` (store that, not the
    auto-reset observation, in the replay buffer) — Pardo et al. (2018), "Time
    limits in reinforcement learning".

    Args:
      q_tm1: ``float[B, A]`` online-network Q-values at ``s_{t−1}``.
      a_tm1: ``int[B]`` actions taken at ``s_{t−1}``.
      r_t: ``float[B]`` rewards.
      discount_t: ``float[B]`` ``γ·(1 − terminated_t)``.
      q_t_target: ``float[B, A]`` target-network Q-values at ``s_t``.
      q_t_online: optional ``float[B, A]`` online-network Q-values at ``s_t``;
        when given, the next action is chosen by them (double DQN).
      huber_delta: Huber threshold ``κ``; ``None`` for the squared error.

    Returns:
      ``(loss, metrics)``: scalar loss and a dict of scalars ``td_error`` (mean
      ``|δ|``) and ``q_mean`` (mean of ``q_tm1[a_tm1]``).

    Example:
      >>> import jax.numpy as jnp
      >>> from jgtest.losses import dqn_loss
      >>> q_tm1 = jnp.array([[1.0, 2.0]]); q_t = jnp.array([[0.0, 4.0]])
      >>> loss, metrics = dqn_loss(q_tm1, jnp.array([1]), jnp.array([1.0]), jnp.array([0.5]), q_t)
      >>> float(loss)   # TD error 1 + 0.5·4 − 2 = 1, Huber(1) = 0.5
      0.5
    """
    chex.assert_rank([q_tm1, a_tm1, r_t, discount_t, q_t_target], [2, 1, 1, 1, 2])
    chex.assert_type([q_tm1, r_t, discount_t, q_t_target], float)
    chex.assert_type(a_tm1, int)
    chex.assert_equal_shape([a_tm1, r_t, discount_t])
    chex.assert_equal_shape([q_tm1, q_t_target])
    chex.assert_equal_shape_prefix([q_tm1, a_tm1], 1)
    if q_t_online is not None:
        chex.assert_rank(q_t_online, 2)
        chex.assert_type(q_t_online, float)
        chex.assert_equal_shape([q_t_online, q_t_target])
        selector_t = q_t_online
    else:
        selector_t = q_t_target

    a_star_t = jnp.argmax(selector_t, axis=-1)
    q_next_t = jnp.take_along_axis(q_t_target, a_star_t[:, None], axis=-1)[:, 0]
    target_t = jax.lax.stop_gradient(r_t + discount_t * q_next_t)
    q_taken_tm1 = jnp.take_along_axis(q_tm1, a_tm1[:, None].astype(jnp.int32), axis=-1)[:, 0]
    td_t = target_t - q_taken_tm1

    if huber_delta is None:
        per_example = 0.5 * jnp.square(td_t)
    else:
        per_example = optax.huber_loss(td_t, delta=huber_delta)
    loss = jnp.mean(per_example)
    metrics = {
        "td_error": jax.lax.stop_gradient(jnp.mean(jnp.abs(td_t))),
        "q_mean": jax.lax.stop_gradient(jnp.mean(q_taken_tm1)),
    }
    return loss, metrics


def polyak_update(target_params: PyTree, online_params: PyTree, tau: float | jax.Array) -> PyTree:
    """Soft target update ``θ⁻ ← τ·θ + (1 − τ)·θ⁻`` (``optax.incremental_update``).

    Lillicrap et al. (2016), "Continuous control with deep reinforcement
    learning" (DDPG), ICLR. ``tau=1`` copies the online parameters (the hard
    update of Mnih et al. 2015); ``tau=0`` leaves the target unchanged.

    Args:
      target_params: the target network's parameters ``θ⁻``.
      online_params: the online network's parameters ``θ`` (same structure).
      tau: step size ``τ ∈ [0, 1]`` (may be traced).

    Returns:
      The new target parameters.
    """
    return optax.incremental_update(online_params, target_params, tau)


def periodic_update(
    target_params: PyTree, online_params: PyTree, step: int | jax.Array, period: int | jax.Array
) -> PyTree:
    """Hard target update every ``period`` steps (``optax.periodic_update``).

    Mnih et al. (2015): the target network ``θ⁻`` is a copy of ``θ`` refreshed
    every ``C`` updates. Returns ``online_params`` when ``step % period == 0``
    (so also at ``step == 0``) and ``target_params`` otherwise; jittable (a
    ``lax.cond``), ``step`` may be traced.

    Args:
      target_params: the target network's parameters.
      online_params: the online network's parameters (same structure).
      step: the number of online updates done so far.
      period: ``C``, every how many steps to copy.

    Returns:
      The new target parameters.
    """
    return optax.periodic_update(online_params, target_params, step, period)
