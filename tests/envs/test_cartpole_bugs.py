"""CartPoleBugs-v0: Gymnasium parity (bit-for-bit under x64) and RELINE's bugs."""

import functools

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest

NUM_EPISODES = 48
HORIZON = 400


def gymnasium_episodes(num_episodes=NUM_EPISODES, horizon=HORIZON):
    """Plays Gymnasium CartPole-v1: half random actions, half a noisy balancing
    controller (long episodes). Returns start states, padded actions, lengths and
    the per-step float32 obs, float64 states, rewards and terminations."""
    env = gym.make("CartPole-v1", max_episode_steps=10_000).unwrapped
    rng = np.random.default_rng(1234)
    starts = np.zeros((num_episodes, 4))
    actions = np.zeros((num_episodes, horizon), np.int32)
    obs = np.zeros((num_episodes, horizon, 4), np.float32)
    states = np.zeros((num_episodes, horizon, 4))
    rewards = np.zeros((num_episodes, horizon))
    terms = np.zeros((num_episodes, horizon), bool)
    lengths = np.zeros(num_episodes, np.int32)
    for ep in range(num_episodes):
        env.reset(seed=ep)
        starts[ep] = env.state
        for t in range(horizon):
            if ep % 2 == 0 or rng.random() < 0.1:
                a = int(rng.integers(2))
            else:
                a = int(env.state[2] + 0.5 * env.state[3] > 0)
            o, r, term, _, _ = env.step(a)
            actions[ep, t], obs[ep, t], states[ep, t], rewards[ep, t], terms[ep, t] = (
                a,
                o,
                env.state,
                r,
                term,
            )
            lengths[ep] = t + 1
            if term:
                break
    return starts, actions, lengths, obs, states, rewards, terms


@pytest.fixture(scope="module")
def reference():
    return gymnasium_episodes()


@functools.cache
def _rollout_fn(env):
    def rollout(start, actions, params):
        _, state = env.reset(jax.random.key(0), params)
        dtype = state.x.dtype
        state = state.replace(
            x=start[0].astype(dtype),
            x_dot=start[1].astype(dtype),
            theta=start[2].astype(dtype),
            theta_dot=start[3].astype(dtype),
        )

        def body(state, xs):
            t, a = xs
            _, next_state, reward, term, _, info = env.step(jax.random.key(t), state, a, params)
            pre_reset = jnp.stack(
                [next_state.x, next_state.x_dot, next_state.theta, next_state.theta_dot]
            )
            return next_state, (info["final_observation"], reward, term, pre_reset)

        _, out = jax.lax.scan(body, state, (jnp.arange(actions.shape[0]), actions))
        return out

    return jax.jit(jax.vmap(rollout, in_axes=(0, 0, None)))


def _compare(reference, exact: bool):
    starts, actions, lengths, obs, states, rewards, terms = reference
    env, params = jgtest.make("CartPoleBugs-v0")
    params = jax.tree.map(jnp.asarray, params)
    j_obs, j_rew, j_term, j_state = jax.device_get(
        _rollout_fn(env)(jnp.asarray(starts), jnp.asarray(actions), params)
    )
    assert lengths.max() > 150, "the controller episodes should be long"
    for ep, n in enumerate(lengths):
        if not exact:
            # float32 rounding differs from float64's; open-loop, the unstable pole
            # amplifies it, so float32 is compared over the first 60 steps.
            n = min(n, 60)
        assert list(j_term[ep, :n]) == list(terms[ep, :n]), f"episode {ep}: termination differs"
        np.testing.assert_array_equal(j_rew[ep, :n], rewards[ep, :n])
        if exact:
            assert j_state.dtype == np.float64
            # Every float64 state bit and every float32 observation equal Gymnasium's.
            np.testing.assert_array_equal(j_state[ep, : n - 1], states[ep, : n - 1])
            np.testing.assert_array_equal(j_obs[ep, :n], obs[ep, :n])
        else:
            np.testing.assert_allclose(j_obs[ep, :n], obs[ep, :n], rtol=2e-4, atol=2e-5)


def test_bit_for_bit_parity_with_gymnasium_under_x64(reference):
    with jax.enable_x64(True):
        _compare(reference, exact=True)


def test_float32_parity_with_gymnasium(reference):
    _compare(reference, exact=False)


ENV, PARAMS = jgtest.make("CartPoleBugs-v0")
STEP = jax.jit(ENV.step)


def _place(x, x_dot=0.0):
    _, state = ENV.reset(jax.random.key(0), PARAMS)
    return state.replace(
        x=jnp.float32(x),
        x_dot=jnp.float32(x_dot),
        theta=jnp.float32(0.0),
        theta_dot=jnp.float32(0.0),
    )


@pytest.mark.parametrize("bug, x", [(0, -0.47), (1, 0.47)])
def test_bug_fires_inside_its_interval_once_per_episode(bug, x):
    state = _place(x)  # x_dot = 0: one step keeps the cart inside the interval
    _, state, reward, _, _, info = STEP(jax.random.key(1), state, 1, PARAMS)
    tel = info["telemetry"]
    expected = np.zeros(2, bool)
    expected[bug] = True
    np.testing.assert_array_equal(np.asarray(tel.bugs_fired), expected)
    assert float(tel.frame_time_ms) > float(PARAMS.base_frame_ms) + 0.5 * float(PARAMS.bug_delay_ms)
    # Still inside the interval on the next step: no second firing in the episode.
    _, state, _, _, _, info = STEP(jax.random.key(2), state, 0, PARAMS)
    assert not np.asarray(info["telemetry"].bugs_fired).any()
    assert float(info["telemetry"].frame_time_ms) < float(PARAMS.base_frame_ms) + 0.5 * float(
        PARAMS.bug_delay_ms
    )


@pytest.mark.parametrize("x", [-0.52, -0.44, 0.0, 0.44, 0.52])
def test_no_bug_outside_the_intervals(x):
    _, _, _, _, _, info = STEP(jax.random.key(1), _place(x), 1, PARAMS)
    assert not np.asarray(info["telemetry"].bugs_fired).any()


def test_bug_fires_again_in_a_new_episode():
    state = _place(0.47).replace(bugs_seen=jnp.uint32(0b10))  # bug 1 already fired
    _, _, _, _, _, info = STEP(jax.random.key(1), state, 1, PARAMS)
    assert not np.asarray(info["telemetry"].bugs_fired).any()
    _, fresh = ENV.reset(jax.random.key(3), PARAMS)
    assert int(fresh.bugs_seen) == 0


def test_episode_is_truncated_at_1000_steps_as_in_the_paper():
    state = _place(0.0).replace(time=999)
    _, _, _, term, trunc, _ = STEP(jax.random.key(1), state, 1, PARAMS)
    assert bool(trunc) and not bool(term)


def test_bug_interval_outside_the_track_is_refused():
    with pytest.raises(ValueError, match="bug 1 interval .* outside the track"):
        jgtest.make("CartPoleBugs-v0", bug_intervals=[[-0.5, -0.45], [2.3, 2.6]])
