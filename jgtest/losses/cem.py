"""Cross-entropy method for policies (RELINE's CartPole agent): elite selection and loss."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jgtest.losses._common import as_weights, entropy_of, log_prob_of, weighted_mean

#: The percentile of the batch's returns an episode must reach to be an elite: Lapan's (2018)
#: ``PERCENTILE = 70``, which RELINE's replication package uses (the best 30% of the batch).
ELITE_PERCENTILE = 70.0


def cem_elite_mask(
    episode_returns: jax.Array, percentile: float | jax.Array = ELITE_PERCENTILE
) -> jax.Array:
    """Elite episodes of a batch: those whose return is ≥ the ``percentile``-th percentile.

    The cross-entropy method (Rubinstein & Kroese 2004, "The cross-entropy
    method") as applied to policies by Lapan (2018), "Deep Reinforcement Learning
    Hands-On", ch. 4, and used by RELINE (Tufano et al. 2022, "Using
    reinforcement learning for load testing of video games", ICSE, §3.1.2) for
    its CartPole agent: play ``n = 16`` episodes, keep the elite ones, fit the
    policy to their actions (:func:`cem_loss`), repeat::

        bound   = percentile(episode_returns, percentile)   # linear interpolation, as numpy
        elite_i = episode_returns_i ≥ bound

    **Convention.** ``percentile`` is the *return cut-off* (Lapan's
    ``PERCENTILE = 70``, ``reward_bound = np.percentile(rewards, 70)``, keep
    ``reward ≥ reward_bound``), not the share kept: ``percentile = p`` keeps the
    best ≈ ``(100 − p)%`` of the episodes (more on ties, since every episode
    equal to the bound is kept). With 16 distinct returns, ``p = 70`` keeps the
    best 5 and ``p = 30`` keeps the best 11. RELINE's text says it "selects the
    m = 11 (70%) episodes having the highest score" with ``n`` and ``m`` set
    "according to (Lapan, 2018)": to keep the best 70% as written there, pass
    ``percentile = 30``; the default ``70`` is Lapan's setting (the best 30%).

    Args:
      episode_returns: ``float[N]`` total return of each episode.
      percentile: ``p ∈ [0, 100]``, the percentile of the returns used as the
        cut-off (may be traced).

    Returns:
      ``bool[N]``, true for elite episodes (at least one is always true).

    Example:
      >>> import jax.numpy as jnp
      >>> from jgtest.losses.cem import cem_elite_mask
      >>> # the 70th percentile's episodes and above
      >>> cem_elite_mask(jnp.array([1.0, 5.0, 3.0, 9.0])).tolist()
      [False, False, False, True]
    """
    chex.assert_rank(episode_returns, 1)
    chex.assert_type(episode_returns, float)
    bound = jnp.percentile(episode_returns, percentile)
    return episode_returns >= bound


def cem_top_m_mask(episode_returns: jax.Array, m: int) -> jax.Array:
    """The ``m`` episodes with the highest returns, by rank (ties broken by episode order).

    RELINE's wording of the elite (§3.1.2): after ``n = 16`` episodes the agent
    "selects the m = 11 (70%) episodes having the highest score". Unlike the
    percentile cut-off of :func:`cem_elite_mask`, which keeps every episode
    tied with the bound (all of them once most episodes hit the step cap), this
    keeps exactly ``m``, so episodes that scored more than the tied ones always
    make up a larger share of the elite. The episodes of a batch are i.i.d., so
    breaking ties by order is breaking them at random.

    Args:
      episode_returns: ``float[N]`` total return of each episode.
      m: elite size, ``1 ≤ m ≤ N`` (static).

    Returns:
      ``bool[N]`` with exactly ``m`` true entries.
    """
    chex.assert_rank(episode_returns, 1)
    n = episode_returns.shape[0]
    if not 1 <= m <= n:
        raise ValueError(f"cem_top_m_mask: m must be in [1, {n}], got {m}")
    order = jnp.argsort(-episode_returns, stable=True)
    return jnp.zeros(n, bool).at[order[:m]].set(True)


def cem_loss(
    logits_t: jax.Array, a_t: jax.Array, weight_t: jax.Array
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Cross-entropy of the policy to the elite episodes' actions (weighted mean).

    The update step of the cross-entropy method for policies (Lapan 2018, ch. 4;
    RELINE §3.1.2: "uses the experience in those episodes to update the weights
    of the FNN")::

        loss = Σ_t w_t · (−log π(a_t|s_t)) / Σ_t w_t        (0 when Σ_t w_t = 0)

    with ``w_t`` the elite mask of the step's episode (:func:`cem_elite_mask`)
    broadcast over its steps, and 0 for padding. Lapan's loss is the plain mean
    over all elite steps of the batch: call this on the flattened batch
    (``[N·T]``) rather than under ``vmap`` over episodes (which would weight each
    episode equally instead of each step).

    Args:
      logits_t: ``float[T, A]`` policy logits.
      a_t: ``int[T]`` actions taken.
      weight_t: ``float[T]`` (or ``bool[T]``) step weights.

    Returns:
      ``(loss, metrics)``: scalar loss and a dict of scalars ``accuracy``
      (weighted share of steps where ``argmax π = a_t``) and ``entropy``
      (weighted mean policy entropy).
    """
    chex.assert_rank([logits_t, a_t, weight_t], [2, 1, 1])
    chex.assert_type(logits_t, float)
    chex.assert_type(a_t, int)
    chex.assert_equal_shape([a_t, weight_t])
    chex.assert_equal_shape_prefix([logits_t, a_t], 1)
    w_t = jax.lax.stop_gradient(as_weights("weight_t", weight_t, logits_t[:, 0]))

    cross_entropy_t = -log_prob_of(logits_t, a_t)
    loss = weighted_mean(cross_entropy_t, w_t)
    correct_t = (jnp.argmax(logits_t, axis=-1) == a_t).astype(logits_t.dtype)
    metrics = {
        "accuracy": jax.lax.stop_gradient(weighted_mean(correct_t, w_t)),
        "entropy": jax.lax.stop_gradient(weighted_mean(entropy_of(logits_t), w_t)),
    }
    return loss, metrics
