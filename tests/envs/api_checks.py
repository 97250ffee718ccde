"""Checks every jgtest game must pass (used by test_api.py for each registered game)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.types import Telemetry

BATCH = 4
STEPS = 8


def make_rollout(env, params, num_envs: int = BATCH, steps: int = STEPS):
    """``key -> (obs0, (obs, reward, term, trunc, telemetry))``: jit(vmap) reset + scan of random
    steps, compiled once for every key it is called with."""

    def one_env(k):
        k_reset, k_run = jax.random.split(k)
        obs, state = env.reset(k_reset, params)

        def body(carry, k_t):
            obs, state = carry
            k_act, k_step = jax.random.split(k_t)
            action = env.action_space(params).sample(k_act)
            obs, state, reward, term, trunc, info = env.step(k_step, state, action, params)
            return (obs, state), (obs, reward, term, trunc, info["telemetry"])

        _, out = jax.lax.scan(body, (obs, state), jax.random.split(k_run, steps))
        return obs, out

    run = jax.jit(jax.vmap(one_env))
    return lambda key: run(jax.random.split(key, num_envs))


def check_env_api(env, params) -> None:
    """Reset/step under jit and vmap, observation in space, determinism, telemetry shape."""
    rollout = make_rollout(env, params)
    obs0, (obs, reward, term, trunc, tel) = rollout(jax.random.key(0))
    space = env.observation_space(params)
    assert obs0.shape == (BATCH, *space.shape)
    assert obs.shape == (BATCH, STEPS, *space.shape)
    assert obs.dtype == jnp.dtype(space.dtype), (obs.dtype, space.dtype)
    assert bool(jax.vmap(jax.vmap(space.contains))(obs).all()), "observation outside its space"
    assert bool(jax.vmap(space.contains)(obs0).all()), "reset observation outside its space"
    assert reward.shape == (BATCH, STEPS) and term.dtype == jnp.bool_ and trunc.dtype == jnp.bool_
    assert isinstance(tel, Telemetry)
    assert tel.position.shape == (BATCH, STEPS, 2)
    assert tel.bugs_fired.shape == (BATCH, STEPS, env.num_bugs)
    assert tel.bugs_fired.dtype == jnp.bool_
    assert bool(((tel.cell >= 0) & (tel.cell < env.num_cells)).all()), (
        "cell id outside [0, num_cells)"
    )
    assert np.isfinite(np.asarray(reward)).all()
    # Same key, same result; another key, another result.
    again = rollout(jax.random.key(0))
    for a, b in zip(
        jax.tree.leaves((obs0, obs, reward, tel)),
        jax.tree.leaves((again[0], *again[1][:2], again[1][4])),
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    other = rollout(jax.random.key(1))
    assert not np.array_equal(np.asarray(other[1][0]), np.asarray(obs)), (
        "different keys gave identical runs"
    )
    # Eager single step equals the jitted one.
    obs_e, state_e = env.reset(jax.random.key(5), params)
    jit_reset = jax.jit(env.reset)(jax.random.key(5), params)
    np.testing.assert_array_equal(np.asarray(obs_e), np.asarray(jit_reset[0]))
    assert len(env.bug_kinds) == env.num_bugs
    # oracle bugs, or bugs found by testing the game
    assert (env.num_bugs > 0) != env.bugs_found_by_tests
