"""The real Doom engine through the ViZDoom bridge: a short episode's frames, labels, game variables and
render times, and an episode replayed from its seed and actions."""

import json

import numpy as np
import pytest

from envs_bridge import make
from jgtest.cli import main

pytest.importorskip("vizdoom")
LEVEL = "freedoom2/MAP01"


@pytest.fixture(scope="module")
def episode():
    actions = np.random.default_rng(0).integers(0, 8, (120, 2))
    steps = []
    with make(f"vizdoom:{LEVEL}", num_envs=2, seed=3, max_steps_in_episode=100) as game:
        frames, info = game.reset(3)
        for a in actions:
            steps.append(game.step(a))
        return game, frames, info, actions, steps


def test_a_short_real_episode(episode):
    game, frames, info, actions, steps = episode
    assert frames.shape == (2, 120, 160, 3) and frames.dtype == np.uint8 and frames.std() > 10  # a drawn screen
    assert game.num_actions == 8 and game.action_names[0] == "MOVE_FORWARD" and game.map_shape[0] * game.map_shape[1] == game.num_cells
    position = np.stack([s[4]["telemetry"].position for s in steps])
    x0, y0, x1, y1 = game.bounds
    assert ((position[..., 0] >= x0) & (position[..., 0] <= x1) & (position[..., 1] >= y0) & (position[..., 1] <= y1)).all()
    assert np.abs(np.diff(position[:50, 0], axis=0)).max() > 1  # the player moves
    assert np.stack([s[4]["state"] for s in steps])[0, 0, 0] == 100  # full health at the start
    labels = [obj for s in steps for objects in s[4]["objects"] for obj in objects]
    assert labels and all(isinstance(name, str) and w > 0 and h > 0 for name, _, _, _, w, h in labels)
    frame_ms = np.stack([s[4]["telemetry"].frame_time_ms for s in steps])
    assert (frame_ms[~np.stack([s[4]["autoreset"] for s in steps])] > 0).all() and np.median(frame_ms) < 50  # the engine's step, timed
    truncated = np.stack([s[3] for s in steps])
    assert truncated[99].all() and np.stack([s[4]["autoreset"] for s in steps])[100].all()  # the cap, then the next episode


def test_an_episode_replays_from_its_seed_and_actions(episode):
    game, _, _, actions, steps = episode
    original = np.stack([s[4]["telemetry"].position[1] for s in steps[:60]])
    with make(f"vizdoom:{LEVEL}", num_envs=1, seed=3, first_game=1, max_steps_in_episode=100) as fresh:  # game 1 alone, as a replay builds it
        fresh.reset(3, episode=0)
        replayed = [fresh.step(actions[t, 1:])[4]["telemetry"] for t in range(60)]
    np.testing.assert_array_equal(np.stack([t.position[0] for t in replayed]), original)
    np.testing.assert_array_equal(np.stack([t.cell[0] for t in replayed]), np.stack([s[4]["telemetry"].cell[1] for s in steps[:60]]))


def test_random_campaign_on_a_freedoom_level(tmp_path):
    out = tmp_path / "doom"
    assert main(["run", "random", "--game", f"vizdoom:{LEVEL}", "--episodes", "2", "--game-arg", "max_steps_in_episode=150", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 2 and summary["env_steps"] == 300 and summary["state_coverage"] > 1 and summary["frame_time_ms"]["median"] > 0


def test_unknown_levels_list_the_known_ones():
    with pytest.raises(ValueError, match="unknown ViZDoom level 'nope'; levels: .*basic.*freedoom2/MAP01"):
        make("vizdoom:nope")
