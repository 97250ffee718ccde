"""Every game plays its recorded trajectory again, value for value (:mod:`tests.envs.trajectories`):
a faster step must compute the same game (same states, bugs, rewards, telemetry and pixels)."""

import numpy as np
import pytest

import jgtest
from tests.envs.trajectories import recorded, trajectory


@pytest.mark.parametrize("game", sorted(jgtest.registered_games()))
def test_a_game_plays_its_recorded_trajectory(game):
    expected, played = recorded(game), trajectory(game)
    assert expected, f"no recorded trajectory of {game}: record it (tests/envs/trajectories.py)"
    assert sorted(played) == sorted(expected)
    for name, value in expected.items():
        if np.issubdtype(value.dtype, np.floating):
            np.testing.assert_allclose(played[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(played[name], value, err_msg=name)
