"""Exploring a real level with object tests: the 360° walk steered by the labels, and (slow)
Inspector learning on Freedoom 2's MAP01."""

import json

import numpy as np
import pytest

from jgtest.methods.park.level_campaign import LevelExplorationConfig, run
from jgtest.methods.park.level_walk import LabelWalk, LabelWalkSettings

BUTTONS = (
    "MOVE_FORWARD",
    "MOVE_BACKWARD",
    "TURN_LEFT",
    "TURN_RIGHT",
    "MOVE_LEFT",
    "MOVE_RIGHT",
    "ATTACK",
    "USE",
)
FORWARD, TURN_LEFT, TURN_RIGHT, STRAFE = 0, 2, 3, 4


def test_the_walk_triggers_steers_and_completes_a_turn():
    walk = LabelWalk(
        2, BUTTONS, screen_width=160, settings=LabelWalkSettings(trigger_pixels=400, near_height=40)
    )
    far = [("Zombieman", 7, 100, 50, 20, 25)]  # 500 px, right of centre
    small = [("Clip", 9, 10, 10, 10, 10)]  # 100 px: too small to trigger
    chosen = np.array([6, 6])
    assert (
        walk.actions(chosen, [small, []], np.zeros(2)) == chosen
    ).all() and not walk.testing().any()
    # off centre: turn toward it
    assert walk.actions(chosen, [far, []], np.zeros(2)).tolist() == [TURN_RIGHT, 6]
    assert walk.testing().tolist() == [True, False]
    centred = [("Zombieman", 7, 70, 50, 20, 25)]
    # small on screen: come closer
    assert walk.actions(chosen, [centred, far], np.zeros(2))[0] == FORWARD
    assert not walk.testing()[1]  # the same thing is not tested twice at once
    near = [("Zombieman", 7, 60, 30, 40, 60)]
    # close and centred: circle it
    assert walk.actions(chosen, [near, []], np.zeros(2))[0] == STRAFE
    ended = []
    for angle in np.arange(10.0, 371.0, 10.0) % 360:  # the player's angle sweeps a full turn
        ended += walk.observe([near, []], np.array([angle, 0.0]), np.zeros(2, bool))
    assert ended == [(0, 7, True)] and walk.outcomes == {7: ("Zombieman", True)}
    # tested: not triggered again
    assert (walk.actions(chosen, [near, []], np.zeros(2)) == chosen).all()


def test_a_walk_that_loses_its_thing_fails_and_an_episode_end_stops_it():
    walk = LabelWalk(1, BUTTONS, screen_width=160, settings=LabelWalkSettings(lost_steps=3))
    walk.actions(np.array([0]), [[("Barrel", 3, 60, 30, 40, 60)]], np.zeros(1))
    # out of view: turn to find it
    assert walk.actions(np.array([0]), [[]], np.zeros(1))[0] in (TURN_LEFT, TURN_RIGHT)
    ended = [e for _ in range(3) for e in walk.observe([[]], np.zeros(1), np.zeros(1, bool))]
    assert ended == [(0, 3, False)]
    walk.actions(np.array([0]), [[("Barrel", 4, 60, 30, 40, 60)]], np.zeros(1))
    assert walk.observe([[]], np.zeros(1), np.ones(1, bool)) == [(0, 4, False)]
    # close and centred: it strafes
    walk.actions(np.array([0]), [[("Barrel", 5, 60, 30, 40, 60)]], np.zeros(1))
    held = [
        e
        for _ in range(3)
        for e in walk.observe([[("Barrel", 5, 60, 30, 40, 60)]], np.zeros(1), np.zeros(1, bool))
    ]
    # a wall holds the player: strafing turns it no more, the walk gives up
    assert held == [(0, 5, False)]
    with pytest.raises(ValueError, match="this game has no TURN_LEFT, TURN_RIGHT"):
        LabelWalk(1, ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK", "MOVE_FORWARD"), 160)


@pytest.mark.slow
def test_inspector_learns_on_a_freedoom_level(tmp_path):
    """Two PPO updates on RND novelty over two games: the coverage curve, tests and map written."""
    pytest.importorskip("vizdoom")
    config = LevelExplorationConfig(
        game="vizdoom:freedoom2/MAP01",
        agent="inspector",
        episodes=2,
        num_envs=2,
        episode_steps=100,
        rollout_steps=50,
    )
    summary = run(config, tmp_path)
    assert summary["ppo_updates"] == 2 and len(summary["novelty_per_update"]) == 2
    assert 0 < summary["coverage_walkable"] < 1 and len(summary["curves"]["coverage_walkable"]) == 2
    assert json.loads((tmp_path / "summary.json").read_text())["tested"] == summary["tested"]
    assert (tmp_path / "coverage.png").stat().st_size > 5000
