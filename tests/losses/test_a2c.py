"""A2C loss: hand-computed values, gradient signs, vmap and jit."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.losses import a2c_loss

a2c_jit = jax.jit(a2c_loss)


def _two_steps():
    logits = jnp.array([[0.0, 0.0], [0.0, math.log(3.0)]])  # π = (0.5, 0.5) and (0.25, 0.75)
    v = jnp.array([1.0, 0.0])
    a = jnp.array([0, 1])
    adv = jnp.array([2.0, -1.0])
    ret = jnp.array([0.0, 1.0])
    return logits, v, a, adv, ret


def test_two_steps_by_hand():
    loss, m = a2c_loss(*_two_steps())
    # L_pi = −(2·ln 0.5 + (−1)·ln 0.75)/2 = −ln(0.25/0.75)/2 = ln(3)/2
    np.testing.assert_allclose(m["policy_loss"], math.log(3.0) / 2, rtol=1e-6)
    # L_v = 0.5·((1 − 0)² + (0 − 1)²)/2 = 0.5
    np.testing.assert_allclose(m["value_loss"], 0.5, rtol=1e-6)
    # H = (ln 2 + (−0.25 ln 0.25 − 0.75 ln 0.75))/2
    entropy = (math.log(2.0) - 0.25 * math.log(0.25) - 0.75 * math.log(0.75)) / 2
    np.testing.assert_allclose(m["entropy"], entropy, rtol=1e-6)
    np.testing.assert_allclose(loss, math.log(3.0) / 2 + 0.5 * 0.5 - 0.01 * entropy, rtol=1e-6)
    loss, _ = a2c_jit(*_two_steps(), vf_coef=1.0, ent_coef=0.0)
    np.testing.assert_allclose(loss, math.log(3.0) / 2 + 0.5, rtol=1e-6)
    # jit agrees with eager
    np.testing.assert_allclose(
        a2c_jit(*_two_steps())[0], math.log(3.0) / 2 + 0.25 - 0.01 * entropy, rtol=1e-6
    )


def test_gradient_step_raises_log_prob_of_positive_advantage_action_and_lowers_negative():
    logits, v, a, adv, ret = _two_steps()

    def log_pi(lg):
        return jnp.take_along_axis(jax.nn.log_softmax(lg), a[:, None], axis=-1)[:, 0]

    def loss_fn(logits, v, adv, ret):
        return a2c_loss(logits, v, a, adv, ret, ent_coef=0.0)[0]

    g_logits, g_v, g_adv, g_ret = jax.jit(jax.grad(loss_fn, (0, 1, 2, 3)))(logits, v, adv, ret)
    new_log_pi = log_pi(logits - 0.1 * g_logits)
    assert new_log_pi[0] > log_pi(logits)[0]  # A_0 = +2
    assert new_log_pi[1] < log_pi(logits)[1]  # A_1 = −1
    # ∂L/∂v_t = vf_coef·(v_t − R_t)/T = 0.5·(±1)/2
    np.testing.assert_allclose(g_v, [0.25, -0.25], rtol=1e-6)
    np.testing.assert_allclose(g_adv, 0.0)  # advantages and returns are constants of the update
    np.testing.assert_allclose(g_ret, 0.0)


def test_entropy_bonus_pushes_towards_uniform_and_masked_actions_stay_finite():
    logits = jnp.array([[2.0, 0.0, -jnp.inf]])  # third action masked out
    zeros = jnp.zeros(1)

    def loss_fn(lg):
        return a2c_loss(lg, zeros, jnp.array([0]), zeros, zeros, ent_coef=1.0)[0]

    loss, g = jax.jit(jax.value_and_grad(loss_fn))(logits)
    assert bool(jnp.isfinite(loss)) and bool(jnp.all(jnp.isfinite(g)))
    assert g[0, 0] > 0 > g[0, 1]  # descending raises entropy: lower the favourite, raise the other


def test_vmap_equals_single_calls():
    rng = np.random.default_rng(0)
    N, T, A = 3, 4, 3
    logits = jnp.asarray(rng.normal(size=(N, T, A)), jnp.float32)
    v, adv, ret = (jnp.asarray(rng.normal(size=(N, T)), jnp.float32) for _ in range(3))
    a = jnp.asarray(rng.integers(0, A, size=(N, T)), jnp.int32)
    batched_loss, batched_m = jax.jit(jax.vmap(a2c_loss))(logits, v, a, adv, ret)
    for i in range(N):
        jit_loss, jit_m = a2c_jit(logits[i], v[i], a[i], adv[i], ret[i])
        np.testing.assert_allclose(batched_loss[i], jit_loss, rtol=1e-5, atol=1e-6)
        for k in jit_m:
            np.testing.assert_allclose(batched_m[k][i], jit_m[k], rtol=1e-5, atol=1e-6)


def test_bad_ranks_raise():
    logits, v, a, adv, ret = _two_steps()
    with pytest.raises(AssertionError):
        a2c_loss(logits[None], v, a, adv, ret)
    with pytest.raises(AssertionError):
        a2c_loss(logits, v, a[:, None], adv, ret)
    with pytest.raises(AssertionError):
        a2c_loss(logits, v, a, adv[:1], ret)
