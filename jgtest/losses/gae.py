"""Generalised advantage estimation on one stream, with terminated ≠ truncated."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jax import lax


def gae(
    r_t: jax.Array,
    v_t: jax.Array,
    v_tp1: jax.Array,
    terminated_t: jax.Array,
    truncated_t: jax.Array,
    gamma: float | jax.Array,
    lam: float | jax.Array,
    valid_t: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """GAE(γ, λ) advantages and λ-returns of one stream of ``T`` transitions.

    Schulman, Moritz, Levine, Jordan & Abbeel (2016), "High-dimensional continuous
    control using generalized advantage estimation", ICLR (arXiv:1506.02438)::

        δ_t    = r_t + γ·(1 − term_t)·V(s_{t+1}) − V(s_t)
        A_t    = δ_t + γ·λ·(1 − done_t)·A_{t+1},      done_t = term_t ∨ trunc_t,
        A_T    = 0   (beyond the stream's last step)
        R_t    = A_t + V(s_t)

    computed right to left with ``lax.scan(reverse=True)``.

    **terminated ≠ truncated** (Pardo, Tavakoli, Levdik & Kormushev 2018, "Time
    limits in reinforcement learning", ICML, arXiv:1712.00378). A *terminated*
    step reached a true end state: nothing follows, so its bootstrap is cut. A
    *truncated* step was stopped by a time limit (or the end of the collection
    window) in a state the game could have continued from: cutting the bootstrap
    there would teach the critic that the time-out state is worth ``r_t`` alone
    (a state-dependent value for a time-dependent event), so the bootstrap
    ``γ·V(s_{t+1})`` is kept — from the episode's *final* observation, not the
    auto-reset one. Both end the λ-recursion: ``A_{t+1}`` belongs to the next
    episode.

    The stream's last step is bootstrapped through ``v_tp1[T−1]`` like any other
    (unless terminated), so a rollout cut mid-episode needs no special flag.

    Args:
      r_t: ``float[T]`` reward of transition ``t`` (for acting at ``s_t``).
      v_t: ``float[T]`` ``V(s_t)``.
      v_tp1: ``float[T]`` ``V(s_{t+1})`` at the **true next observation** (the
        final observation of the episode where step ``t`` ended it).
      terminated_t: ``bool[T]`` the step reached a terminal state.
      truncated_t: ``bool[T]`` the step hit a time limit (not terminal).
      gamma: discount ``γ`` (scalar; may be traced, e.g. vmapped over a sweep).
      lam: ``λ`` (scalar; may be traced).
      valid_t: ``bool[T]`` or ``None``: the agent's own steps. Steps where it did not act (e.g.
        while a scripted or learned test drove the game, PPGTA) are skipped: each valid step
        bootstraps from the next valid step's ``V`` and takes its ``A``, as if the skipped steps
        were part of the game's transition, their rewards not credited to anyone; a skipped step
        that ends the episode passes its bootstrap ``(1 − term)·V(s_{t+1})`` and a cut recursion
        back. Skipped steps get ``A = 0`` and ``R = V(s_t)`` (mask them out of the loss). With every
        step valid this is the formula above, with ``V(s_{t+1})`` read from ``v_t[t + 1]`` instead
        of ``v_tp1[t]`` inside an episode.

    Returns:
      ``(advantages float[T], returns float[T])`` with ``returns = advantages + v_t``.
      No gradient is stopped: call on values computed outside the loss (or wrap
      the outputs in ``jax.lax.stop_gradient``).

    Example:
      >>> import jax.numpy as jnp
      >>> adv, ret = gae(jnp.array([1.0, 1.0]), jnp.zeros(2), jnp.ones(2),
      ...                jnp.array([False, True]), jnp.array([False, False]), 0.5, 1.0)
      >>> adv.tolist()   # δ = [1.5, 1.0]; A_0 = 1.5 + 0.5·1.0
      [2.0, 1.0]

    Batch over ``N`` environments with
    ``jax.vmap(gae, in_axes=(1, 1, 1, 1, 1, None, None), out_axes=1)`` for ``[T, N]`` arrays.
    """
    chex.assert_rank([r_t, v_t, v_tp1, terminated_t, truncated_t], 1)
    chex.assert_type([r_t, v_t, v_tp1], float)
    chex.assert_type([terminated_t, truncated_t], bool)
    chex.assert_equal_shape([r_t, v_t, v_tp1, terminated_t, truncated_t])

    dtype = jnp.result_type(r_t, v_t, v_tp1)
    gamma = jnp.asarray(gamma, dtype)
    lam = jnp.asarray(lam, dtype)
    not_term_t = 1.0 - terminated_t.astype(dtype)
    not_done_t = 1.0 - (terminated_t | truncated_t).astype(dtype)

    if valid_t is not None:
        return _gae_over_valid_steps(
            r_t, v_t, not_term_t * v_tp1, not_done_t, valid_t, gamma, lam, dtype
        )
    delta_t = r_t + gamma * not_term_t * v_tp1 - v_t
    decay_t = gamma * lam * not_done_t

    def step(adv_tp1, inputs):
        delta, decay = inputs
        adv = delta + decay * adv_tp1
        return adv, adv

    _, advantages = lax.scan(
        step, jnp.zeros((), dtype), (delta_t.astype(dtype), decay_t), reverse=True
    )
    return advantages, advantages + v_t


def _gae_over_valid_steps(r_t, v_t, bootstrap_t, not_done_t, valid_t, gamma, lam, dtype):
    """:func:`gae` on the valid steps of a stream (its ``valid_t``): right to left, carrying the
    next valid step's ``(A, V)``; an episode's end resets them to ``(0, bootstrap)``."""
    chex.assert_equal_shape([r_t, valid_t])
    chex.assert_type(valid_t, bool)

    def step(carry, inputs):
        r, v, bootstrap, not_done, valid = inputs
        adv_next, v_next = (
            jnp.where(not_done, carry[0], 0.0),
            jnp.where(not_done, carry[1], bootstrap),
        )
        adv = r + gamma * v_next - v + gamma * lam * adv_next
        return (jnp.where(valid, adv, adv_next), jnp.where(valid, v, v_next)), jnp.where(
            valid, adv, 0.0
        )

    init = (jnp.zeros((), dtype), bootstrap_t[-1].astype(dtype))
    _, advantages = lax.scan(
        step,
        init,
        (r_t.astype(dtype), v_t.astype(dtype), bootstrap_t.astype(dtype), not_done_t, valid_t),
        reverse=True,
    )
    return advantages, advantages + v_t
