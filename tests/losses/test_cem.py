"""Cross-entropy method: elite mask on 16 returns (RELINE's n = 16), weighted loss, vmap and jit."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.losses import cem_elite_mask, cem_loss

cem_loss_jit = jax.jit(cem_loss)
elite_jit = jax.jit(cem_elite_mask)

RETURNS = jnp.array(
    [12.0, 3.0, 45.0, 7.0, 30.0, 22.0, 9.0, 60.0, 15.0, 41.0, 5.0, 28.0, 33.0, 18.0, 50.0, 25.0]
)
# sorted: 3 5 7 9 12 15 18 22 25 28 30 33 41 45 50 60


def test_elite_mask_on_sixteen_returns_by_hand():
    # 70th percentile (Lapan's default): position 0.7·15 = 10.5 → (30 + 33)/2 = 31.5;
    # keep 33 41 45 50 60
    elite = cem_elite_mask(RETURNS)
    np.testing.assert_array_equal(np.flatnonzero(np.asarray(elite)), [2, 7, 9, 12, 14])
    # RELINE's "m = 11 (70%) episodes having the highest score" is percentile 30:
    # position 0.3·15 = 4.5 → (12 + 15)/2 = 13.5; keep the 11 returns ≥ 15
    elite30 = elite_jit(RETURNS, 30.0)
    assert int(elite30.sum()) == 11
    np.testing.assert_array_equal(np.asarray(elite30), np.asarray(RETURNS) >= 13.5)
    np.testing.assert_array_equal(
        np.asarray(elite30), np.asarray(RETURNS) >= np.percentile(np.asarray(RETURNS), 30)
    )


def test_elite_mask_keeps_ties_and_never_keeps_nobody():
    capped = jnp.array([1000.0] * 8 + [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0])
    assert int(elite_jit(capped).sum()) == 8  # bound = 1000: every capped episode is elite
    assert bool(jnp.all(elite_jit(jnp.full(16, 7.0))))
    assert int(elite_jit(RETURNS, 100.0).sum()) == 1  # the best episode only


def test_elite_mask_vmaps_over_batches_and_percentiles():
    batch = jnp.stack([RETURNS, -RETURNS])
    out = jax.jit(jax.vmap(cem_elite_mask))(batch, jnp.array([70.0, 30.0]))
    np.testing.assert_array_equal(out[0], elite_jit(RETURNS, 70.0))
    np.testing.assert_array_equal(out[1], elite_jit(-RETURNS, 30.0))


def test_loss_is_the_weighted_mean_cross_entropy_by_hand():
    # π = (.5, .5), (.25, .75), …
    logits = jnp.array([[0.0, 0.0], [0.0, math.log(3.0)], [5.0, 0.0]])
    a = jnp.array([0, 1, 1])
    weight = jnp.array([1.0, 1.0, 0.0])  # third step: a non-elite episode (or padding)
    loss, m = cem_loss(logits, a, weight)
    # (−ln 0.5 − ln 0.75)/2 = ln(8/3)/2
    np.testing.assert_allclose(loss, math.log(8.0 / 3.0) / 2, rtol=1e-6)
    np.testing.assert_allclose(m["accuracy"], 1.0)
    entropy1 = -0.25 * math.log(0.25) - 0.75 * math.log(0.75)
    np.testing.assert_allclose(m["entropy"], (math.log(2.0) + entropy1) / 2, rtol=1e-6)
    # a bool mask gives the same; the jitted loss agrees with the eager one
    np.testing.assert_allclose(cem_loss_jit(logits, a, weight > 0)[0], loss, rtol=1e-6)
    np.testing.assert_allclose(cem_loss_jit(logits, a, weight)[0], loss, rtol=1e-6)
    # with every weight 1 the third step counts: CE = −log(1/(1 + e⁵)) = log(1 + e⁵)
    expected = (math.log(2.0) + math.log(4.0 / 3.0) + math.log1p(math.exp(5.0))) / 3
    np.testing.assert_allclose(cem_loss_jit(logits, a, jnp.ones(3))[0], expected, rtol=1e-6)


def test_no_elite_step_gives_zero_loss_and_zero_finite_gradient():
    logits = jnp.array([[1.0, -1.0], [0.0, 2.0]])
    loss, g = jax.jit(
        jax.value_and_grad(lambda lg: cem_loss(lg, jnp.array([0, 1]), jnp.zeros(2))[0])
    )(logits)
    assert float(loss) == 0.0
    np.testing.assert_array_equal(g, 0.0)


def test_gradient_moves_the_policy_towards_elite_actions():
    logits = jnp.zeros((2, 3))
    a = jnp.array([2, 0])
    g = jax.jit(jax.grad(lambda lg: cem_loss(lg, a, jnp.array([1.0, 0.0]))[0]))(logits)
    # ∂/∂logits of −log π(a_0) / 1 = π − e_a = (1/3, 1/3, −2/3); the non-elite step gets nothing
    np.testing.assert_allclose(g, [[1 / 3, 1 / 3, -2 / 3], [0.0, 0.0, 0.0]], rtol=1e-6)


def test_vmap_equals_single_calls():
    rng = np.random.default_rng(0)
    N, T, A = 3, 4, 2
    logits = jnp.asarray(rng.normal(size=(N, T, A)), jnp.float32)
    a = jnp.asarray(rng.integers(0, A, size=(N, T)), jnp.int32)
    w = jnp.asarray(rng.random((N, T)) > 0.4, jnp.float32)
    batched, _ = jax.jit(jax.vmap(cem_loss))(logits, a, w)
    for i in range(N):
        np.testing.assert_allclose(
            batched[i], cem_loss_jit(logits[i], a[i], w[i])[0], rtol=1e-5, atol=1e-6
        )


def test_bad_ranks_and_dtypes_raise():
    with pytest.raises(AssertionError):
        cem_elite_mask(RETURNS[None])
    with pytest.raises(AssertionError):
        cem_elite_mask(jnp.arange(16))
    with pytest.raises(AssertionError):
        cem_loss(jnp.zeros(2), jnp.array([0, 1]), jnp.ones(2))
    with pytest.raises(AssertionError):
        cem_loss(jnp.zeros((2, 2)), jnp.array([0, 1]), jnp.ones(3))
    with pytest.raises(AssertionError):
        cem_loss(jnp.zeros((2, 2)), jnp.array([0, 1]), jnp.ones(2, jnp.int32))


def test_top_m_mask_keeps_exactly_m_by_rank_even_with_ties():
    from jgtest.losses import cem_top_m_mask

    returns = jnp.array([1000.0, 1050.0, 1000.0, 30.0, 1100.0, 1000.0, 1000.0, 80.0])
    mask = np.asarray(cem_top_m_mask(returns, 4))
    assert mask.sum() == 4 and mask[1] and mask[4] and not mask[3] and not mask[7]
    np.testing.assert_array_equal(np.flatnonzero(mask), [0, 1, 2, 4])  # ties: the earlier episodes
    # The percentile cut keeps every tied episode instead.
    assert int(np.asarray(cem_elite_mask(returns, 30.0)).sum()) == 6
    with pytest.raises(ValueError, match="m must be in"):
        cem_top_m_mask(returns, 9)
