"""DQN / double-DQN loss and target updates: hand-computed values, gradients, vmap and jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.losses import dqn_loss, periodic_update, polyak_update

dqn_jit = jax.jit(dqn_loss)


def _batch():
    q_tm1 = jnp.array([[1.0, 2.0, 0.0], [0.5, 0.0, 1.0]])
    a_tm1 = jnp.array([1, 2])
    r_t = jnp.array([1.0, 0.0])
    discount_t = jnp.array([0.9, 0.0])  # second transition terminated
    q_t_target = jnp.array([[1.0, 3.0, 2.0], [5.0, 0.0, 0.0]])
    # online prefers action 2, target action 1
    q_t_online = jnp.array([[0.0, 1.0, 4.0], [0.0, 9.0, 0.0]])
    return q_tm1, a_tm1, r_t, discount_t, q_t_target, q_t_online


def test_dqn_by_hand():
    q_tm1, a_tm1, r_t, discount_t, q_t_target, _ = _batch()
    loss, m = dqn_jit(q_tm1, a_tm1, r_t, discount_t, q_t_target)
    # b=0: y = 1 + 0.9·max(1, 3, 2) = 3.7, δ = 3.7 − q_tm1[0, 1] = 1.7 → Huber = 1·(1.7 − 0.5) = 1.2
    # b=1: y = 0 + 0·5 = 0,               δ = 0 − q_tm1[1, 2] = −1  → Huber = 0.5·1² = 0.5
    np.testing.assert_allclose(loss, (1.2 + 0.5) / 2, rtol=1e-6)
    np.testing.assert_allclose(m["td_error"], (1.7 + 1.0) / 2, rtol=1e-6)
    np.testing.assert_allclose(m["q_mean"], (2.0 + 1.0) / 2, rtol=1e-6)
    # squared error: 0.5·(1.7² + 1²)/2
    loss, _ = dqn_jit(q_tm1, a_tm1, r_t, discount_t, q_t_target, huber_delta=None)
    np.testing.assert_allclose(loss, 0.5 * (1.7**2 + 1.0) / 2, rtol=1e-6)
    # a large Huber threshold is the squared error
    loss, _ = dqn_jit(q_tm1, a_tm1, r_t, discount_t, q_t_target, huber_delta=10.0)
    np.testing.assert_allclose(loss, 0.5 * (1.7**2 + 1.0) / 2, rtol=1e-6)


def test_double_dqn_selects_with_online_and_evaluates_with_target():
    q_tm1, a_tm1, r_t, discount_t, q_t_target, q_t_online = _batch()
    loss, m = dqn_jit(q_tm1, a_tm1, r_t, discount_t, q_t_target, q_t_online)
    # b=0: a* = argmax online = 2 (DQN would take 1), y = 1 + 0.9·target[0, 2] = 2.8,
    #      δ = 0.8 → 0.5·0.64 = 0.32
    # b=1: terminated, y = 0, δ = −1 → 0.5
    np.testing.assert_allclose(loss, (0.32 + 0.5) / 2, rtol=1e-6)
    np.testing.assert_allclose(m["td_error"], (0.8 + 1.0) / 2, rtol=1e-6)


def test_gradient_only_reaches_the_taken_online_q_values():
    q_tm1, a_tm1, r_t, discount_t, q_t_target, q_t_online = _batch()

    def loss_fn(q_tm1, q_t_target, q_t_online):
        return dqn_loss(q_tm1, a_tm1, r_t, discount_t, q_t_target, q_t_online)[0]

    g_tm1, g_tgt, g_onl = jax.jit(jax.grad(loss_fn, (0, 1, 2)))(q_tm1, q_t_target, q_t_online)
    # ∂/∂q = −huber'(δ)/B: b=0 δ = 0.8 → −0.4; b=1 δ = −1 (|δ| = κ) → +0.5
    np.testing.assert_allclose(g_tm1, [[0.0, -0.4, 0.0], [0.0, 0.0, 0.5]], rtol=1e-6)
    np.testing.assert_allclose(g_tgt, 0.0)
    np.testing.assert_allclose(g_onl, 0.0)


def test_vmap_equals_single_calls_and_jit_equals_eager():
    rng = np.random.default_rng(0)
    N, B, A = 3, 5, 4
    q_tm1, q_t_target, q_t_online = (
        jnp.asarray(rng.normal(size=(N, B, A)), jnp.float32) for _ in range(3)
    )
    a_tm1 = jnp.asarray(rng.integers(0, A, size=(N, B)), jnp.int32)
    r_t = jnp.asarray(rng.normal(size=(N, B)), jnp.float32)
    discount_t = jnp.asarray(0.99 * (rng.random((N, B)) > 0.2), jnp.float32)
    for online in (None, q_t_online):
        batched_loss, batched_m = jax.jit(jax.vmap(dqn_loss))(
            q_tm1, a_tm1, r_t, discount_t, q_t_target, online
        )
        for i in range(N):
            args = (
                q_tm1[i],
                a_tm1[i],
                r_t[i],
                discount_t[i],
                q_t_target[i],
                None if online is None else online[i],
            )
            jit_loss, jit_m = dqn_jit(*args)
            np.testing.assert_allclose(batched_loss[i], jit_loss, rtol=1e-5, atol=1e-6)
            for k in jit_m:
                np.testing.assert_allclose(batched_m[k][i], jit_m[k], rtol=1e-5, atol=1e-6)
    # jit vs eager on the same inputs
    eager_loss, eager_m = dqn_loss(*args)
    np.testing.assert_allclose(jit_loss, eager_loss, rtol=1e-6)
    for k in eager_m:
        np.testing.assert_allclose(jit_m[k], eager_m[k], rtol=1e-6)


def test_polyak_and_periodic_target_updates():
    target = {"w": jnp.array([0.0, 4.0]), "b": jnp.array(1.0)}
    online = {"w": jnp.array([2.0, 0.0]), "b": jnp.array(3.0)}
    half = jax.jit(polyak_update)(target, online, 0.5)
    np.testing.assert_allclose(half["w"], [1.0, 2.0])
    np.testing.assert_allclose(half["b"], 2.0)
    hard = jax.jit(polyak_update)(target, online, 1.0)
    np.testing.assert_array_equal(hard["w"], online["w"])
    np.testing.assert_array_equal(hard["b"], online["b"])
    same = jax.jit(polyak_update)(target, online, 0.0)
    np.testing.assert_array_equal(same["w"], target["w"])
    periodic = jax.jit(periodic_update)
    for step, expected in [(0, online), (3, target), (4, online), (5, target)]:
        out = periodic(target, online, jnp.asarray(step), 2)
        np.testing.assert_array_equal(out["w"], expected["w"])
        np.testing.assert_array_equal(out["b"], expected["b"])


def test_bad_ranks_raise():
    q_tm1, a_tm1, r_t, discount_t, q_t_target, q_t_online = _batch()
    with pytest.raises(AssertionError):
        dqn_loss(q_tm1[0], a_tm1, r_t, discount_t, q_t_target)
    with pytest.raises(AssertionError):
        dqn_loss(q_tm1, a_tm1[:, None], r_t, discount_t, q_t_target)
    with pytest.raises(AssertionError):
        dqn_loss(q_tm1, a_tm1, r_t, discount_t, q_t_target, q_t_online[0])
    with pytest.raises(AssertionError):
        dqn_loss(q_tm1, a_tm1.astype(jnp.float32), r_t, discount_t, q_t_target)
