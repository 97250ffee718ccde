"""PPO loss: hand-computed values with a clipped ratio, gradients, vmap and jit."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.losses import ppo_loss

ppo_jit = jax.jit(ppo_loss, static_argnames=("normalize_advantages",))


def _two_steps():
    logits = jnp.zeros((2, 2))  # π = (0.5, 0.5) at both steps
    a = jnp.array([0, 1])
    old_log_prob = jnp.log(jnp.array([0.25, 0.5]))  # ρ = (2, 1): step 0 is clipped at 1 + ε = 1.2
    v = jnp.array([1.0, 2.0])
    old_v = jnp.array([0.5, 2.5])
    adv = jnp.array([1.0, -1.0])
    ret = jnp.array([2.0, 2.0])
    return logits, v, a, old_log_prob, old_v, adv, ret


def test_two_steps_one_clipped_ratio_by_hand():
    loss, m = ppo_loss(*_two_steps(), normalize_advantages=False)  # eager
    jit_loss, jit_m = ppo_jit(*_two_steps(), normalize_advantages=False)
    np.testing.assert_allclose(jit_loss, loss, rtol=1e-6)
    for k in m:
        np.testing.assert_allclose(jit_m[k], m[k], rtol=1e-6, atol=1e-7)
    # policy: step 0 min(2·1, 1.2·1) = 1.2; step 1 min(1·−1, 1·−1) = −1 → L_pi = −(1.2 − 1)/2 = −0.1
    np.testing.assert_allclose(m["policy_loss"], -0.1, rtol=1e-6)
    # value: step 0 max((1 − 2)², (0.5 + 0.2 − 2)²) = max(1, 1.69) = 1.69
    #        step 1 max((2 − 2)², (2.5 − 0.2 − 2)²) = max(0, 0.09) = 0.09
    #        → L_v = 0.5·(1.69 + 0.09)/2 = 0.445
    np.testing.assert_allclose(m["value_loss"], 0.445, rtol=1e-6)
    np.testing.assert_allclose(m["entropy"], math.log(2.0), rtol=1e-6)
    # approx KL = mean((ρ − 1) − log ρ) = ((1 − ln 2) + 0)/2
    np.testing.assert_allclose(m["approx_kl"], (1.0 - math.log(2.0)) / 2, rtol=1e-6)
    np.testing.assert_allclose(m["clip_fraction"], 0.5)
    np.testing.assert_allclose(loss, -0.1 + 0.5 * 0.445 - 0.01 * math.log(2.0), rtol=1e-6)


def test_without_value_clipping_and_with_other_coefficients():
    _, m = ppo_jit(*_two_steps(), normalize_advantages=False, vf_clip=None)
    np.testing.assert_allclose(m["value_loss"], 0.5 * (1.0 + 0.0) / 2, rtol=1e-6)
    # ε = 1.5 leaves ρ = 2 unclipped: L_pi = −(2·1 + 1·−1)/2 = −0.5
    loss, m = ppo_jit(
        *_two_steps(), normalize_advantages=False, clip_eps=1.5, vf_coef=0.0, ent_coef=0.0
    )
    np.testing.assert_allclose(m["policy_loss"], -0.5, rtol=1e-6)
    np.testing.assert_allclose(loss, -0.5, rtol=1e-6)
    np.testing.assert_allclose(m["clip_fraction"], 0.0)


def test_negative_advantage_takes_the_pessimistic_unclipped_term():
    logits, v, a, old_log_prob, old_v, _, ret = _two_steps()
    _, m = ppo_jit(
        logits, v, a, old_log_prob, old_v, jnp.array([-1.0, 0.0]), ret, normalize_advantages=False
    )
    # step 0: min(2·−1, 1.2·−1) = −2; step 1: 0 → L_pi = 1.0
    np.testing.assert_allclose(m["policy_loss"], 1.0, rtol=1e-6)


def test_advantage_normalisation_over_the_stream():
    logits, v, a, old_log_prob, old_v, _, ret = _two_steps()
    # (3, 1) standardises to (1, −1), the advantages of the hand-computed case
    _, m = ppo_jit(logits, v, a, old_log_prob, old_v, jnp.array([3.0, 1.0]), ret)
    np.testing.assert_allclose(m["policy_loss"], -0.1, rtol=1e-5)


def test_masked_steps_count_for_nothing():
    # A third step, masked out, with values that would change every term: the loss, its metrics and
    # its gradient are the two unmasked steps' (advantages standardised over those two alone).
    logits, v, a, old_log_prob, old_v, adv, ret = _two_steps()
    extended = (
        jnp.concatenate([logits, jnp.array([[3.0, -3.0]])]),
        jnp.append(v, 9.0),
        jnp.append(a, 1),
        jnp.append(old_log_prob, -5.0),
        jnp.append(old_v, -4.0),
        jnp.append(adv, 50.0),
        jnp.append(ret, 8.0),
    )
    mask = jnp.array([True, True, False])
    loss_of = lambda l, args, **kw: ppo_jit(l, *args, **kw)[0]
    for normalize in (False, True):
        (loss, m), (loss_masked, m_masked) = (
            ppo_jit(*_two_steps(), normalize_advantages=normalize),
            ppo_jit(*extended, normalize_advantages=normalize, mask_t=mask),
        )
        np.testing.assert_allclose(loss_masked, loss, rtol=1e-5)
        for k in m:
            np.testing.assert_allclose(m_masked[k], m[k], rtol=1e-5, atol=1e-7)
    grad = jax.grad(loss_of)(logits, _two_steps()[1:])
    grad_masked = jax.grad(lambda l: loss_of(l, extended[1:], mask_t=mask))(extended[0])
    np.testing.assert_allclose(grad_masked[:2], grad, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(grad_masked[2], 0.0)


def test_clipped_step_gets_no_policy_gradient_and_constants_get_none():
    args = _two_steps()

    def policy_part(logits, old_log_prob, adv):
        a_args = (logits, args[1], args[2], old_log_prob, args[4], adv, args[6])
        return ppo_loss(*a_args, normalize_advantages=False, vf_coef=0.0, ent_coef=0.0)[0]

    g_logits, g_old, g_adv = jax.jit(jax.grad(policy_part, argnums=(0, 1, 2)))(
        args[0], args[3], args[5]
    )
    np.testing.assert_allclose(g_logits[0], [0.0, 0.0], atol=1e-7)  # ρ > 1 + ε with A > 0: clipped
    # step 1 (ρ = 1, A = −1): ∂L/∂logits = −(1/2)·A·ρ·∂log π(a=1)/∂logits
    #                                    = 0.5·(e_1 − π) = (−0.25, 0.25)
    np.testing.assert_allclose(g_logits[1], [-0.25, 0.25], rtol=1e-6)
    np.testing.assert_allclose(g_old, 0.0)
    np.testing.assert_allclose(g_adv, 0.0)


def test_vmap_equals_single_calls_and_gradients_are_finite():
    rng = np.random.default_rng(0)
    N, T, A = 3, 5, 4
    logits = jnp.asarray(rng.normal(size=(N, T, A)), jnp.float32)
    v, old_log_prob, old_v, adv, ret = (
        jnp.asarray(rng.normal(size=(N, T)), jnp.float32) for _ in range(5)
    )
    old_log_prob = -jnp.abs(old_log_prob) - 0.5
    a = jnp.asarray(rng.integers(0, A, size=(N, T)), jnp.int32)
    batched_loss, batched_m = jax.jit(jax.vmap(ppo_loss))(
        logits, v, a, old_log_prob, old_v, adv, ret
    )
    for i in range(N):
        args = (logits[i], v[i], a[i], old_log_prob[i], old_v[i], adv[i], ret[i])
        jit_loss, jit_m = ppo_jit(*args)
        np.testing.assert_allclose(batched_loss[i], jit_loss, rtol=1e-5, atol=1e-6)
        for k in jit_m:
            np.testing.assert_allclose(batched_m[k][i], jit_m[k], rtol=1e-5, atol=1e-6)
    grads = jax.jit(jax.grad(lambda lg, vv: ppo_loss(lg, vv, *args[2:])[0], (0, 1)))(
        logits[-1], v[-1]
    )
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in grads)


def test_bad_ranks_raise():
    logits, v, a, old_log_prob, old_v, adv, ret = _two_steps()
    with pytest.raises(AssertionError):
        ppo_loss(logits[0], v, a, old_log_prob, old_v, adv, ret)
    with pytest.raises(AssertionError):
        ppo_loss(logits, v[:, None], a, old_log_prob, old_v, adv, ret)
    with pytest.raises(AssertionError):
        ppo_loss(logits, v, a.astype(jnp.float32), old_log_prob, old_v, adv, ret)
