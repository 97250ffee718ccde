"""Every game plays its recorded trajectory again, value for value (:mod:`tests.envs.trajectories`):
a faster step must compute the same game (same states, bugs, rewards, telemetry and pixels)."""

import numpy as np
import pytest

import jgtest
from tests.envs.trajectories import recorded, trajectory

#: A digest of a frame may move by this much: a pixel or two a frame one level off, as floats
#: rounded into pixels land when XLA fuses a render differently (unit weights in the digest).
PIXEL_SLACK = 2.0


@pytest.mark.parametrize("game", sorted(jgtest.registered_games()))
def test_a_game_plays_its_recorded_trajectory(game):
    expected, played = recorded(game), trajectory(game)
    env, params = jgtest.make(game)
    drawn = hasattr(env, "draw") or env.observation_space(params).dtype == np.uint8
    assert expected, f"no recorded trajectory of {game}: record it (tests/envs/trajectories.py)"
    assert sorted(played) == sorted(expected)
    for name, value in expected.items():
        if np.issubdtype(value.dtype, np.floating):
            frame = drawn and name.split("#")[0].strip("[]'") in ("obs", "final_observation")
            slack = PIXEL_SLACK if frame and name.endswith("#digest") else 1e-5
            np.testing.assert_allclose(played[name], value, rtol=1e-4, atol=slack, err_msg=name)
        else:
            np.testing.assert_array_equal(played[name], value, err_msg=name)
