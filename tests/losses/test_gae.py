"""GAE: hand-computed values, terminated ≠ truncated, a plain-Python reference, skipped steps, vmap
and jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.losses import gae

gae_jit = jax.jit(gae)


def gae_reference(r, v, v_next, term, trunc, gamma, lam):
    """The textbook loop, right to left."""
    adv, next_adv = [0.0] * len(r), 0.0
    for t in reversed(range(len(r))):
        delta = r[t] + gamma * (0.0 if term[t] else 1.0) * v_next[t] - v[t]
        next_adv = delta + gamma * lam * (0.0 if (term[t] or trunc[t]) else 1.0) * next_adv
        adv[t] = next_adv
    return np.array(adv), np.array(adv) + np.array(v)


def _stream():
    # step 0: mid-episode, s_1 has V = 1.0 (= v_t[1]);
    # step 1: truncated (time limit), final observation has V = 4.0; the next row starts a new
    #         episode;
    # step 2: terminated, so its v_tp1 (5.0) must be ignored.
    r = jnp.array([1.0, 2.0, 3.0])
    v = jnp.array([0.5, 1.0, 2.0])
    v_next = jnp.array([1.0, 4.0, 5.0])
    term = jnp.array([False, False, True])
    trunc = jnp.array([False, True, False])
    return r, v, v_next, term, trunc


def test_three_steps_with_a_truncation_and_a_termination_by_hand():
    gamma, lam = 0.9, 0.8
    adv, ret = gae(*_stream(), gamma, lam)  # eager
    jit_adv, jit_ret = gae_jit(*_stream(), gamma, lam)
    np.testing.assert_allclose(jit_adv, adv, rtol=1e-6)
    np.testing.assert_allclose(jit_ret, ret, rtol=1e-6)
    # δ_0 = 1 + 0.9·1.0 − 0.5 = 1.4
    # δ_1 = 2 + 0.9·4.0 − 1.0 = 4.6     (truncated: bootstrap kept from the final observation)
    # δ_2 = 3 + 0       − 2.0 = 1.0     (terminated: bootstrap cut)
    # A_2 = 1.0
    # A_1 = 4.6                          (truncation ends the λ-recursion: A_2 is another episode)
    # A_0 = 1.4 + 0.9·0.8·4.6 = 4.712
    np.testing.assert_allclose(adv, [4.712, 4.6, 1.0], rtol=1e-6)
    np.testing.assert_allclose(ret, [4.712 + 0.5, 4.6 + 1.0, 1.0 + 2.0], rtol=1e-6)
    np.testing.assert_allclose(
        adv, gae_reference(*map(np.asarray, _stream()), gamma, lam)[0], rtol=1e-6
    )


def test_terminated_and_truncated_differ_only_by_the_bootstrap():
    r, v, v_next = jnp.array([1.0]), jnp.array([0.25]), jnp.array([2.0])
    yes, no = jnp.array([True]), jnp.array([False])
    adv_term, _ = gae_jit(r, v, v_next, yes, no, 0.5, 0.95)
    adv_trunc, _ = gae_jit(r, v, v_next, no, yes, 0.5, 0.95)
    np.testing.assert_allclose(adv_term, [1.0 - 0.25])
    np.testing.assert_allclose(adv_trunc, [1.0 + 0.5 * 2.0 - 0.25])


def test_lambda_one_without_ends_is_the_discounted_return_minus_value():
    r = jnp.array([1.0, 2.0, 3.0, 4.0])
    v = jnp.array([0.1, 0.2, 0.3, 0.4])
    v_next = jnp.array([0.2, 0.3, 0.4, 10.0])
    flags = jnp.zeros(4, bool)
    gamma = 0.5
    adv, ret = gae_jit(r, v, v_next, flags, flags, gamma, 1.0)
    # R_0 = 1 + .5·2 + .25·3 + .125·4 + .0625·10 = 3.875
    np.testing.assert_allclose(ret[0], 3.875, rtol=1e-6)
    np.testing.assert_allclose(ret[3], 4.0 + 0.5 * 10.0, rtol=1e-6)
    # λ = 0 gives the one-step TD errors.
    adv0, _ = gae_jit(r, v, v_next, flags, flags, gamma, 0.0)
    np.testing.assert_allclose(adv0, r + gamma * v_next - v, rtol=1e-6)


def test_random_streams_match_the_python_loop():
    rng = np.random.default_rng(0)
    T = 17
    r, v, v_next = (rng.normal(size=T).astype(np.float32) for _ in range(3))
    term, trunc = rng.random(T) < 0.2, rng.random(T) < 0.2
    adv, ret = gae_jit(r, v, v_next, term, trunc, 0.99, 0.95)
    ref_adv, ref_ret = gae_reference(r, v, v_next, term, trunc, 0.99, 0.95)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-5, atol=1e-5)


def test_vmap_over_streams_and_hyperparameters_equals_single_calls():
    rng = np.random.default_rng(1)
    N, T = 3, 6
    r, v, v_next = (jnp.asarray(rng.normal(size=(N, T)), jnp.float32) for _ in range(3))
    term, trunc = jnp.asarray(rng.random((N, T)) < 0.3), jnp.asarray(rng.random((N, T)) < 0.3)
    gammas = jnp.array([0.9, 0.95, 0.99])
    batched = jax.jit(jax.vmap(gae, in_axes=(0, 0, 0, 0, 0, 0, None)))(
        r, v, v_next, term, trunc, gammas, 0.9
    )
    for i in range(N):
        jitted = gae_jit(r[i], v[i], v_next[i], term[i], trunc[i], gammas[i], 0.9)
        for b, j in zip(batched, jitted):
            np.testing.assert_allclose(b[i], j, rtol=1e-6, atol=1e-6)
    # time-major [T, N] batches
    tm = jax.jit(jax.vmap(gae, in_axes=(1, 1, 1, 1, 1, None, None), out_axes=1))(
        r.T, v.T, v_next.T, term.T, trunc.T, gammas[1], 0.9
    )
    single = gae_jit(r[1], v[1], v_next[1], term[1], trunc[1], gammas[1], 0.9)
    np.testing.assert_allclose(tm[0][:, 1], single[0], rtol=1e-6)


def test_gradients_flow_to_values_and_are_finite():
    r, v, v_next, term, trunc = _stream()
    g = jax.jit(jax.grad(lambda v: jnp.sum(gae(r, v, v_next, term, trunc, 0.9, 0.8)[0])))(v)
    # ΣA = A_0 + A_1 + A_2 with A_0 = δ_0 + 0.72·δ_1, A_1 = δ_1, A_2 = δ_2, and ∂δ_t/∂v_t = −1
    # (v_tp1 is a separate input), so ∂ΣA/∂v = [−1, −1 − 0.72, −1].
    np.testing.assert_allclose(g, [-1.0, -1.72, -1.0], rtol=1e-6)


def test_invalid_steps_are_skipped_as_if_the_stream_held_only_the_valid_ones():
    # Steps 1–2 and 5 were driven by something else (a test): each valid step bootstraps from the
    # next valid one, as the stream of steps 0, 3, 4, 6 would. Step 4 truncates an episode; 5 is in
    # the next.
    rng = np.random.default_rng(2)
    r, v = (rng.normal(size=7).astype(np.float32) for _ in range(2))
    v_next = np.append(v[1:], rng.normal()).astype(np.float32)
    v_next[4] = 3.0  # the truncated episode's final observation
    term, trunc = np.zeros(7, bool), np.zeros(7, bool)
    trunc[4] = True
    valid = np.array([True, False, False, True, True, False, True])
    adv, ret = gae_jit(r, v, v_next, term, trunc, 0.9, 0.8, valid)
    keep = np.flatnonzero(valid)
    # each kept step's next kept state (or the final observation)
    kept_next = np.array([v[3], v[4], v_next[4], v_next[6]], np.float32)
    ref_adv, ref_ret = gae_reference(r[keep], v[keep], kept_next, term[keep], trunc[keep], 0.9, 0.8)
    np.testing.assert_allclose(np.asarray(adv)[keep], ref_adv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ret)[keep], ref_ret, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(adv)[~valid], 0.0)
    # Every step valid: the plain formula (V(s_{t+1}) read from the next step's V, equal here)
    every = gae_jit(r, v, v_next, term, trunc, 0.9, 0.8, np.ones(7, bool))
    for a, b in zip(every, gae_jit(r, v, v_next, term, trunc, 0.9, 0.8)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # A skipped step that ends the episode passes its bootstrap back: step 0's next state is the
    # final one
    valid_end = np.array([True, False])
    adv_end, _ = gae_jit(
        np.ones(2, np.float32),
        np.zeros(2, np.float32),
        np.array([7.0, 2.0], np.float32),
        np.zeros(2, bool),
        np.array([False, True]),
        0.5,
        1.0,
        valid_end,
    )
    np.testing.assert_allclose(adv_end, [1.0 + 0.5 * 2.0, 0.0])


def test_bad_ranks_and_dtypes_raise():
    r, v, v_next, term, trunc = _stream()
    with pytest.raises(AssertionError):
        gae(r[None], v, v_next, term, trunc, 0.9, 0.9)
    with pytest.raises(AssertionError):
        gae(r, v, v_next, term.astype(jnp.float32), trunc, 0.9, 0.9)
    with pytest.raises(AssertionError):
        gae(r, v[:2], v_next, term, trunc, 0.9, 0.9)
