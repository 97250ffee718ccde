"""PPGTA's preference-conditioned exploration reward (§IV-C): ``r^p = −KL(π^e ‖ π^p)``, mixed as
``r^c = α·r^p + (1 − α)·r^e`` with α adapted; and its test judge, the Jensen–Shannon divergence
from the demonstrations' actions (§VI-B).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class AlphaSchedule:
    """α's schedule (§IV-C): start, floor, cap, step down, step up, and the novelty drop ε that
    counts as "decreasing novelty": "We initialize α with the value of 0.8 ... In the case of
    decreasing novelty ... we decrease α with a rate of 0.05 until it reaches a minimum threshold of
    0.5 ... a decrease in r^e [is] r^e_t − r^e_{t−1} < ε for ε = −0.1. Once the change in r^e rises,
    we increase α with a rate of 0.1 until it reaches the max value of 0.8"."""

    start: float = 0.8
    low: float = 0.5
    high: float = 0.8
    down: float = 0.05
    up: float = 0.1
    epsilon: float = -0.1

    def __post_init__(self):
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError(
                f"α bounds must satisfy 0 <= low <= high <= 1, got low={self.low}, high={self.high}"
            )
        if not self.low <= self.start <= self.high:
            raise ValueError(f"α must start within [{self.low}, {self.high}], got {self.start}")
        if self.down < 0 or self.up < 0:
            raise ValueError(f"α's steps must be non-negative, got down={self.down}, up={self.up}")


def adapt_alpha(alpha, r_e_t, r_e_tm1, schedule: AlphaSchedule = AlphaSchedule()):
    """One step of α: down by ``schedule.down`` (not below ``low``) when ``r^e_t − r^e_{t−1} < ε``;
    up by ``schedule.up`` (not above ``high``) when the change is positive ("rises"); else
    unchanged."""
    change = r_e_t - r_e_tm1
    lowered = jnp.maximum(alpha - schedule.down, schedule.low)
    raised = jnp.minimum(alpha + schedule.up, schedule.high)
    return jnp.where(change < schedule.epsilon, lowered, jnp.where(change > 0, raised, alpha))


def preference_reward(logits_e: jax.Array, logits_p: jax.Array) -> jax.Array:
    """``−KL(π^e ‖ π^p)`` over the last axis (actions), from the two policies' logits."""
    log_e, log_p = jax.nn.log_softmax(logits_e, axis=-1), jax.nn.log_softmax(logits_p, axis=-1)
    return -jnp.sum(jnp.exp(log_e) * (log_e - log_p), axis=-1)


def trajectory_preference_reward(
    step_kl: jax.Array, counted: jax.Array, kl_so_far: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``−KL(π^e_{1:t} ‖ π^p_{1:t})`` at each step of a rollout: the per-step KLs summed since the
    episode began.

    The KL between two autoregressive policies' distributions over the action sequence ``a_1 … a_t``
    (each step conditioned on the same trajectory so far) is, by the chain rule, the sum of their
    per-step KLs along it. A step's deviation is then paid again at every later step of the
    episode, so its weight in the discounted return is about ``1/(1 − γ)`` times the per-step
    reading's (:func:`preference_reward`).

    Args:
      step_kl: ``[T, ...]`` the per-step KLs ``KL(π^e_t ‖ π^p_t)`` (``−preference_reward``).
      counted: ``bool[T, ...]``: the steps that add to the sum (the explorer's own; not a test's).
      kl_so_far: ``[...]`` the sum before the rollout's first step (0 at an episode's start).

    Returns:
      ``(r^p [T, ...], the sum after the last step [...])``.
    """
    total = kl_so_far[None] + jnp.cumsum(jnp.where(counted, step_kl, 0.0), axis=0)
    return -total, total[-1]


def combined_reward(r_p, r_e, alpha):
    """``r^c = α·r^p + (1 − α)·r^e``."""
    return alpha * r_p + (1.0 - alpha) * r_e


def action_distribution(
    actions: jax.Array, num_actions: int, mask: jax.Array | None = None
) -> jax.Array:
    """The share of each action among ``actions [T]`` (the ``mask``'s steps only)."""
    weights = (
        jnp.ones(actions.shape, jnp.float32) if mask is None else jnp.asarray(mask, jnp.float32)
    )
    counts = jnp.zeros(num_actions, jnp.float32).at[actions].add(weights)
    return counts / jnp.maximum(counts.sum(), 1e-12)


def js_divergence(p: jax.Array, q: jax.Array, base: float = 2.0) -> jax.Array:
    """Jensen–Shannon divergence ``½ KL(p ‖ m) + ½ KL(q ‖ m)``, ``m = ½ (p + q)``, in log ``base``,
    over the last axis (``scipy.spatial.distance.jensenshannon`` returns its square root)."""
    p = p / jnp.sum(p, axis=-1, keepdims=True)
    q = q / jnp.sum(q, axis=-1, keepdims=True)
    m = 0.5 * (p + q)
    kl = lambda a: jnp.sum(
        jnp.where(a > 0, a * (jnp.log(jnp.clip(a, 1e-30)) - jnp.log(jnp.clip(m, 1e-30))), 0.0),
        axis=-1,
    )
    return 0.5 * (kl(p) + kl(q)) / jnp.log(base)
