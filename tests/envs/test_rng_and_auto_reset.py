"""The games' cheap random draws and the auto-reset key."""

import jax
import numpy as np
import pytest

import jgtest
from jgtest.envs import rng
from jgtest.envs.base import AUTO_RESET_COUNTER, step_with_reset
from jgtest.envs.rng import random_words, uniform


def test_threefry_counters_are_as_the_auto_reset_key_assumes():
    """``fold_in(key, i)`` is the block at counter ``i``: the ``i``-th key of a split and the
    ``i``-th value of a draw (its two words xor-ed). If JAX changes this, AUTO_RESET_COUNTER's
    argument and ``random_words`` must be revisited."""
    key = jax.random.key(7)
    folded = np.stack(
        [np.asarray(jax.random.key_data(jax.random.fold_in(key, i))) for i in range(4)]
    )
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(jax.random.split(key, 4))), folded)
    np.testing.assert_array_equal(
        np.asarray(jax.random.bits(key, (4,))), folded[:, 0] ^ folded[:, 1]
    )
    np.testing.assert_array_equal(np.asarray(random_words(key, 7)), folded.reshape(-1)[:7])


@pytest.mark.parametrize("games", [(8,), (1024,), (4, 300)])
def test_the_written_out_threefry_gives_jax_randoms_bits(games):
    """:func:`rng.fold_in`, :func:`rng.normal` and :func:`rng.random_words` give exactly what
    ``jax.random`` gives, one key at a time and vmapped (nested too), on both sides of
    :data:`rng.WRITTEN_OUT_MAX_WORDS` words a game (written out below it, JAX's own threefry
    above)."""
    large = 2 * rng.WRITTEN_OUT_MAX_WORDS + 3
    keys = jax.random.split(jax.random.key(11), games)

    def vmapped(draw):
        for _ in games:
            draw = jax.vmap(draw)
        return jax.jit(draw)

    ours = vmapped(
        lambda k: (
            jax.random.key_data(rng.fold_in(k, AUTO_RESET_COUNTER)),
            rng.normal(k),
            random_words(k, 5),
            random_words(k, large),
        )
    )(keys)
    theirs = vmapped(
        lambda k: (
            jax.random.key_data(jax.random.fold_in(k, AUTO_RESET_COUNTER)),
            jax.random.normal(k, ()),
            jax.random.key_data(jax.random.split(k, 3)).reshape(-1)[:5],
            jax.random.key_data(jax.random.split(k, (large + 1) // 2)).reshape(-1)[:large],
        )
    )(keys)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    keys = keys.reshape(-1)
    for i in (0, 1, 200):
        np.testing.assert_array_equal(
            np.asarray(jax.random.key_data(rng.fold_in(keys[i], i))),
            np.asarray(jax.random.key_data(jax.random.fold_in(keys[i], i))),
        )
        assert np.asarray(rng.normal(keys[i])) == np.asarray(jax.random.normal(keys[i], ()))


def test_other_keys_go_to_jax_random():
    """A raw ``uint32`` key or an rbg key is not threefry written out: ``jax.random`` draws."""
    raw = jax.random.PRNGKey(4)
    np.testing.assert_array_equal(rng.fold_in(raw, 9), jax.random.fold_in(raw, 9))
    rbg = jax.random.key(4, impl="rbg")
    np.testing.assert_array_equal(
        jax.random.key_data(rng.fold_in(rbg, 9)), jax.random.key_data(jax.random.fold_in(rbg, 9))
    )
    assert rng.normal(rbg) == jax.random.normal(rbg, ())


def test_uniform_float32_matches_jax_uniform_in_law():
    values = np.asarray(
        jax.vmap(lambda k: uniform(k, (3,), -0.05, 0.05))(
            jax.random.split(jax.random.key(0), 20_000)
        )
    )
    assert values.dtype == np.float32 and values.shape == (20_000, 3)
    assert values.min() >= -0.05 and values.max() < 0.05
    # Mean and variance of U(-0.05, 0.05): 0 and 0.1**2 / 12, to 5 standard errors.
    assert abs(values.mean()) < 5 * 0.1 / np.sqrt(12 * values.size)
    np.testing.assert_allclose(values.var(), 0.01 / 12, rtol=0.02)
    # Columns are independent, and so are neighbouring keys.
    assert abs(np.corrcoef(values.T)[0, 1]) < 0.03
    assert len(np.unique(values)) > 0.99 * values.size


def test_uniform_float64_is_jax_uniform_unchanged():
    with jax.enable_x64(True):
        key = jax.random.key(3)
        np.testing.assert_array_equal(
            np.asarray(uniform(key, (4,), -0.05, 0.05)),
            np.asarray(jax.random.uniform(key, (4,), float, -0.05, 0.05)),
        )


@pytest.mark.parametrize("name", ["CartPoleBugs-v0", "PacMaze-v0"])
def test_step_resets_with_the_folded_key_when_an_episode_ends(name):
    env, params = jgtest.make(name, max_steps_in_episode=3)
    _, state = env.reset(jax.random.key(0), params)
    key = jax.random.key(11)
    explicit = jax.jit(step_with_reset, static_argnums=0)
    for t in range(3):
        k = jax.random.fold_in(key, t)
        obs, state_next, _, terminated, truncated, info = env.step(k, state, 0, params)
        expected = explicit(env, params, state, 0, k, jax.random.fold_in(k, AUTO_RESET_COUNTER))
        for a, b in zip(jax.tree.leaves((obs, state_next)), jax.tree.leaves(expected[:2])):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        state = state_next
    assert bool(truncated | terminated)
    reset_obs, _ = jax.jit(env.reset_env)(
        jax.random.fold_in(jax.random.fold_in(key, 2), AUTO_RESET_COUNTER), params
    )
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(reset_obs))
    assert not np.array_equal(np.asarray(info["final_observation"]), np.asarray(obs))
