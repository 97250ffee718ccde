"""Behaviour cloning: hand-computed masked cross-entropy and accuracy, vmap and jit."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.losses import bc_loss

bc_jit = jax.jit(bc_loss)


def _demo():
    logits = jnp.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    a = jnp.array([0, 2, 1])
    mask = jnp.array([True, True, False])
    return logits, a, mask


def test_masked_cross_entropy_and_accuracy_by_hand():
    logits, a, mask = _demo()
    loss, m = bc_loss(logits, a, mask)  # eager
    # step 0: −log(e²/(e² + 2)) = log(1 + 2e⁻²); step 1: −log(1/3) = ln 3; step 2 masked out
    ce0, ce1, ce2 = math.log1p(2 * math.exp(-2.0)), math.log(3.0), math.log1p(2 * math.exp(-1.0))
    np.testing.assert_allclose(loss, (ce0 + ce1) / 2, rtol=1e-6)
    np.testing.assert_allclose(m["accuracy"], 0.5)  # step 0 right; step 1 argmax 0 ≠ 2
    loss, m = bc_jit(logits, a)
    np.testing.assert_allclose(loss, (ce0 + ce1 + ce2) / 3, rtol=1e-6)
    np.testing.assert_allclose(m["accuracy"], 2 / 3, rtol=1e-6)
    # float weights work as a mask; jit agrees with eager
    np.testing.assert_allclose(
        bc_jit(logits, a, mask.astype(jnp.float32))[0], (ce0 + ce1) / 2, rtol=1e-6
    )
    np.testing.assert_allclose(bc_jit(logits, a, mask)[0], (ce0 + ce1) / 2, rtol=1e-6)
    np.testing.assert_allclose(bc_jit(logits, a, None)[0], (ce0 + ce1 + ce2) / 3, rtol=1e-6)


def test_gradient_step_raises_the_demonstrated_actions_log_prob():
    logits, a, mask = _demo()
    g = jax.jit(jax.grad(lambda lg: bc_loss(lg, a, mask)[0]))(logits)
    np.testing.assert_array_equal(g[2], 0.0)  # masked step

    def log_pi(lg):
        return jnp.take_along_axis(jax.nn.log_softmax(lg), a[:, None], axis=-1)[:2, 0]

    assert bool(jnp.all(log_pi(logits - 0.5 * g) > log_pi(logits)))
    _, g_empty = jax.jit(jax.value_and_grad(lambda lg: bc_loss(lg, a, jnp.zeros(3, bool))[0]))(
        logits
    )
    np.testing.assert_array_equal(g_empty, 0.0)


def test_vmap_equals_single_calls():
    rng = np.random.default_rng(0)
    N, T, A = 3, 5, 4
    logits = jnp.asarray(rng.normal(size=(N, T, A)), jnp.float32)
    a = jnp.asarray(rng.integers(0, A, size=(N, T)), jnp.int32)
    mask = jnp.asarray(rng.random((N, T)) > 0.3)
    batched, batched_m = jax.jit(jax.vmap(bc_loss))(logits, a, mask)
    for i in range(N):
        loss, m = bc_jit(logits[i], a[i], mask[i])
        np.testing.assert_allclose(batched[i], loss, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(batched_m["accuracy"][i], m["accuracy"], rtol=1e-5, atol=1e-6)


def test_bad_ranks_raise():
    logits, a, mask = _demo()
    with pytest.raises(AssertionError):
        bc_loss(logits[0], a, mask)
    with pytest.raises(AssertionError):
        bc_loss(logits, a[:2], mask)
    with pytest.raises(AssertionError):
        bc_loss(logits, a, mask[None])
