"""RELINE's rewards: the pure functions by hand and the RelineReward wrapper on the games."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.rewards import (
    PACKAGE_MIN_ADVANCE,
    SLOW_BONUS_RULES,
    RelineReward,
    bug_bonus_reward,
    kart_finish_bonus,
    kart_performance_reward,
    kart_progress_reward,
    kart_stalled_steps,
)


def test_pure_rewards_by_hand():
    assert float(bug_bonus_reward(1.0, jnp.array([True, False]))) == 51.0
    assert float(bug_bonus_reward(0.0, jnp.array([True, True, False, True]))) == 150.0
    assert float(kart_progress_reward(21.0, 5.0, 20.0, 10.0)) == -1.0
    # |x| = θ is inside; capped at M
    assert float(kart_progress_reward(-20.0, 12.0, 20.0, 10.0)) == 10.0
    assert float(kart_progress_reward(3.0, -4.0, 20.0, 10.0)) == 0.0
    assert float(kart_performance_reward(19.0, 25.0, 20.5, 20.0)) == 10.0
    # far from the road: no reward
    assert float(kart_performance_reward(21.0, 25.0, 20.5, 20.0)) == 0.0
    assert float(kart_performance_reward(0.0, 20.5, 20.5, 20.0)) == 0.0  # not above t
    assert (
        float(kart_finish_bonus(30.0, True)) == 300.0
        and float(kart_finish_bonus(30.0, False)) == 0.0
    )
    with pytest.raises(ValueError, match="kind"):
        RelineReward(jgtest.make("CartPoleBugs-v0")[0], "fps")


def test_bug_bonus_on_the_toy_games_leaves_the_game_reward_alone():
    env, params = jgtest.make("CartPoleBugs-v0")
    wrapped = RelineReward(env, "bugs")
    _, state = wrapped.reset(jax.random.key(0), params)
    state = state.replace(env_state=state.env_state.replace(x=jnp.float32(0.47)))
    _, state, reward, _, _, info = wrapped.step(jax.random.key(1), state, 1, params)
    assert float(reward) == 51.0 and float(info["telemetry"].game_reward) == 1.0
    # still in the interval: once a episode
    _, _, reward, _, _, _ = wrapped.step(jax.random.key(2), state, 1, params)
    assert float(reward) == 1.0


def test_kart_reward_is_rg_plus_rp_with_the_performance_finish_bonus():
    env, params = jgtest.make("KartTrack-v0")
    params = params.replace(noise_ms=0.0)
    wrapped = RelineReward(env, "kart")
    pos = np.asarray(params.heavy_pos)
    step = jax.jit(wrapped.step)
    _, state = wrapped.reset(jax.random.key(0), params)
    # On the spot at the start, coasting at speed 5: r_g = progress, r_p = 10 (render time > t).
    state = state.replace(env_state=env.state_at(params, pos[0, 0], pos[0, 1], speed=5.0))
    _, state, reward, _, _, info = step(jax.random.key(1), state, 0, params)
    assert float(info["telemetry"].frame_time_ms) > params.threshold_ms
    assert float(reward) == pytest.approx(float(info["delta_path_done"]) + 10.0, abs=1e-4)
    assert float(state.performance_return) == 10.0
    # The game's own reward (the rl-baseline's) has no r_p.
    assert float(info["telemetry"].game_reward) == pytest.approx(
        float(info["delta_path_done"]), abs=1e-4
    )
    # Crossing the finish line: r_g without the +1,000, plus 10 × Σ r_p.
    near_end = env.state_at(params, env.track_length - 1.0, speed=20.0)
    state = state.replace(env_state=near_end.replace(path_done=jnp.float32(env.track_length - 1.0)))
    _, state, reward, term, _, info = step(jax.random.key(2), state, 1, params)
    assert bool(term)
    progress = min(float(info["delta_path_done"]), 10.0)
    assert float(reward) == pytest.approx(progress + 10.0 * 10.0, abs=1e-3)
    assert float(info["telemetry"].game_reward) == pytest.approx(progress + 1000.0, abs=1e-3)
    assert float(state.performance_return) == 0.0  # cleared for the next episode


def test_standing_still_on_a_slow_cell_pays_no_bonus_as_in_the_package():
    # The package pays r_p only while the kart advances (SuperTuxKart_RELINE.py, _reward2): on a
    # slow spot standing still, the first step still pays, the next ones do not; the paper's text
    # ("any") pays every slow step.
    env, params = jgtest.make("KartTrack-v0")
    params = params.replace(noise_ms=0.0)
    pos = np.asarray(params.heavy_pos)
    standing = env.state_at(params, pos[0, 0], pos[0, 1], speed=0.0)
    paid = {}
    for rule in SLOW_BONUS_RULES:
        wrapped = RelineReward(env, "kart", slow_bonus=rule)
        step = jax.jit(wrapped.step)
        _, state = wrapped.reset(jax.random.key(0), params)
        state = state.replace(env_state=standing)
        rewards = []
        for t in range(4):
            state = state.replace(env_state=standing)  # held on the spot
            _, state, reward, _, _, info = step(jax.random.key(t), state, 0, params)
            assert float(info["telemetry"].frame_time_ms) > params.threshold_ms
            assert float(info["delta_path_done"]) <= PACKAGE_MIN_ADVANCE
            rewards.append(float(reward))
        paid[rule] = rewards
    assert paid["any"] == pytest.approx([10.0] * 4, abs=0.3)
    assert paid["advancing"] == pytest.approx([10.0, 0.0, 0.0, 0.0], abs=0.3)
    assert int(kart_stalled_steps(3, 0.0, 5.0, 20.0)) == 0  # advancing again
    assert int(kart_stalled_steps(3, 25.0, 0.0, 20.0)) == 0  # off the road
    with pytest.raises(ValueError, match="slow_bonus must be one of"):
        RelineReward(env, "kart", slow_bonus="sometimes")
