"""Every game plays its recorded trajectory again, value for value (:mod:`tests.envs.trajectories`):
a faster step must compute the same game (same states, bugs, rewards, telemetry and pixels)."""

import numpy as np
import pytest

import jgtest
from tests.envs.trajectories import recorded, trajectory

#: How far the digest of a drawn frame (a game's uint8 pixels) may move: two pixels at full scale
#: (3 channels of 0-255). A float rounded differently in its last bit (XLA fuses a changed step
#: differently) can move an edge of a drawn frame by a pixel; a change of the rules moves many.
FRAME_SLACK = 2 * 3 * 255.0


@pytest.mark.parametrize("game", sorted(jgtest.registered_games()))
def test_a_game_plays_its_recorded_trajectory(game):
    expected, played = recorded(game), trajectory(game)
    env, params = jgtest.make(game)
    drawn = hasattr(env, "draw") or env.observation_space(params).dtype == np.uint8
    assert expected, f"no recorded trajectory of {game}: record it (tests/envs/trajectories.py)"
    assert sorted(played) == sorted(expected)
    for name, value in expected.items():
        if drawn and name in ("['obs']#digest", "['final_observation']#digest"):
            np.testing.assert_allclose(played[name], value, rtol=0, atol=FRAME_SLACK, err_msg=name)
        elif np.issubdtype(value.dtype, np.floating):
            np.testing.assert_allclose(played[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(played[name], value, err_msg=name)
