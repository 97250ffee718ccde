"""Oracles: hand-computed cases, jit/vmap agreement."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest import oracles
from jgtest.types import Telemetry


def test_stuck_uses_distance_to_moving_average():
    history = jnp.array([[0.0, 0.0], [2.0, 0.0], [1.0, 3.0]])  # mean (1, 1)
    assert bool(oracles.stuck(history, jnp.array([1.0, 1.5]), 0.6))
    assert not bool(oracles.stuck(history, jnp.array([1.0, 1.5]), 0.4))
    batch = jax.jit(jax.vmap(oracles.stuck, in_axes=(None, 0, None)))(
        history, jnp.array([[1.0, 1.0], [5.0, 5.0]]), 0.1
    )
    np.testing.assert_array_equal(np.asarray(batch), [True, False])


def test_stuck_monitor_waits_for_n_states_then_flags_a_frozen_state():
    monitor = oracles.stuck_init(3, 2)
    update = jax.jit(oracles.stuck_update)
    flags = []
    for pos in [[0, 0], [1, 0], [2, 0], [3, 0], [3, 0], [3, 0], [3, 0]]:
        monitor, flag = update(monitor, jnp.array(pos, jnp.float32), 0.5)
        flags.append(bool(flag))
    # moving averages before steps 4..7: (1,0), (2,0), (2.67,0), (3,0)
    assert flags == [False, False, False, False, False, True, True]
    with pytest.raises(ValueError):
        oracles.stuck_init(0, 2)


def test_logical_reports_each_violated_assertion():
    state = {"hp": jnp.array(5.0), "hp_before": jnp.array(3.0)}
    checks = [lambda s: s["hp"] >= 0, lambda s: s["hp"] <= s["hp_before"]]
    np.testing.assert_array_equal(np.asarray(oracles.logical(checks, state)), [False, True])
    with pytest.raises(ValueError):
        oracles.logical([], state)


def test_balance_and_crash_and_low_fps():
    np.testing.assert_array_equal(
        np.asarray(oracles.balance(jnp.array([0.1, 0.5, 0.95]), 0.2, 0.9)), [True, False, True]
    )
    tel = Telemetry.make(position=[0, 0], cell=0, bugs_fired=[False], game_reward=0.0, crashed=True)
    assert bool(oracles.crash(tel))
    np.testing.assert_array_equal(
        np.asarray(oracles.low_fps(jnp.array([10.0, 20.0]), 18.36)), [False, True]
    )


def test_reline_threshold_five_sigma_plus_delta():
    base = np.array([10.0, 12.0, 14.0, 16.0, 18.0])
    t_b = base.mean() + 5 * base.std(ddof=1)
    assert oracles.reline_threshold(base) == pytest.approx(t_b)
    warm = base + np.array([1.0, 1.0, 3.0, 3.0, 3.0])  # Q1 +1, Q3 +3 -> delta 3
    assert oracles.reline_threshold(base, warm) == pytest.approx(t_b + 3.0)
    with pytest.raises(ValueError):
        oracles.reline_threshold([1.0])


def test_low_fps_points_need_more_than_half_of_visits():
    cells = jnp.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    times = jnp.array([20, 20, 5, 20, 5, 20, 20, 5, 5], jnp.float32)
    is_low, visits, confidence = oracles.low_fps_points(cells, times, 18.0, 4)
    np.testing.assert_array_equal(np.asarray(visits), [3, 2, 4, 0])
    # 2/3; 1/2 and 2/4 are not > 50%
    np.testing.assert_array_equal(np.asarray(is_low), [True, False, False, False])
    np.testing.assert_allclose(np.asarray(confidence), [2 / 3, 0.5, 0.5, 0.0], rtol=1e-6)
    mask = jnp.array([True] * 8 + [False])
    is_low, visits, _ = oracles.low_fps_points(cells, times, 18.0, 4, mask)
    assert bool(is_low[2]) and int(visits[2]) == 3
