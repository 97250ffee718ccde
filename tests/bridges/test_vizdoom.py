"""The real Doom engine through the ViZDoom bridge: a short episode's frames, labels, game variables
and render times, and an episode replayed from its seed and actions."""

import dataclasses
import json

import numpy as np
import pytest

from envs_bridge import make
from jgtest.cli import main
from jgtest.records import BugRecord
from jgtest.report.replay import replay

pytest.importorskip("vizdoom")
LEVEL = "freedoom2/MAP01"
RULES = "tests.bridges.doom_rules:RULES"


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
    # a drawn screen
    assert frames.shape == (2, 120, 160, 3) and frames.dtype == np.uint8 and frames.std() > 10
    assert (
        game.num_actions == 8
        and game.action_names[0] == "MOVE_FORWARD"
        and game.map_shape[0] * game.map_shape[1] == game.num_cells
    )
    position = np.stack([s[4]["telemetry"].position for s in steps])
    x0, y0, x1, y1 = game.bounds
    assert (
        (position[..., 0] >= x0)
        & (position[..., 0] <= x1)
        & (position[..., 1] >= y0)
        & (position[..., 1] <= y1)
    ).all()
    assert np.abs(np.diff(position[:50, 0], axis=0)).max() > 1  # the player moves
    assert np.stack([s[4]["state"] for s in steps])[0, 0, 0] == 100  # full health at the start
    labels = [obj for s in steps for objects in s[4]["objects"] for obj in objects]
    assert labels and all(
        isinstance(name, str) and w > 0 and h > 0 for name, _, _, _, w, h in labels
    )
    frame_ms = np.stack([s[4]["telemetry"].frame_time_ms for s in steps])
    # the engine's step, timed
    assert (frame_ms[~np.stack([s[4]["autoreset"] for s in steps])] > 0).all() and np.median(
        frame_ms
    ) < 50
    truncated = np.stack([s[3] for s in steps])
    # the cap, then the next episode
    assert truncated[99].all() and np.stack([s[4]["autoreset"] for s in steps])[100].all()


def test_an_episode_replays_from_its_seed_and_actions(episode):
    game, _, _, actions, steps = episode
    original = np.stack([s[4]["telemetry"].position[1] for s in steps[:60]])
    # game 1 alone, as a replay builds it
    with make(
        f"vizdoom:{LEVEL}", num_envs=1, seed=3, first_game=1, max_steps_in_episode=100
    ) as fresh:
        fresh.reset(3, episode=0)
        replayed = [fresh.step(actions[t, 1:])[4]["telemetry"] for t in range(60)]
    np.testing.assert_array_equal(np.stack([t.position[0] for t in replayed]), original)
    np.testing.assert_array_equal(
        np.stack([t.cell[0] for t in replayed]),
        np.stack([s[4]["telemetry"].cell[1] for s in steps[:60]]),
    )
    # a low-FPS record of game 1 at step 39: its bug is its cell
    cell = int(steps[39][4]["telemetry"].cell[1])
    point = BugRecord(
        kind="low_fps",
        game=f"vizdoom:{LEVEL}",
        bug_id=cell,
        step=39,
        episode=0,
        seed=3,
        env_index=1,
        actions=tuple(int(a) for a in actions[:40, 1]),
        game_kwargs={"max_steps_in_episode": 100},
    )
    assert replay(point).reproduced
    assert not replay(dataclasses.replace(point, bug_id=cell + 1)).reproduced


def test_a_random_campaign_records_a_users_assertion_and_the_record_replays(tmp_path):
    """The user's assertion (tests/bridges/doom_rules.py) fails once the player walks east: the
    random agent exploring the level records it the moment it fails, and ``jgtest replay`` plays the
    record on a fresh engine, started at its episode from its seed, to the same failure at the same
    step."""
    out = tmp_path / "doom"
    args = [
        "run",
        "random",
        "--game",
        f"vizdoom:{LEVEL}",
        "--episodes",
        "2",
        "--game-arg",
        "max_steps_in_episode=150",
        "--game-arg",
        f"assertions={RULES}",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(args) == 0
    # the level's exploration: coverage and object tests
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 2 and len(summary["curves"]["coverage_walkable"]) == 2
    assert 0 < summary["coverage_walkable"] < 0.5 and (out / "coverage.png").stat().st_size > 5000
    records = [json.loads(line) for line in (out / "bugs.jsonl").read_text().splitlines()]
    broken = [r for r in records if "player stays west" in r["detail"]]
    assert len(broken) == 1 and broken[0]["kind"] == "logical" and broken[0]["position"][0] >= -100
    # Doom's own invariants hold, the engine did not crash
    assert {r["kind"] for r in records} <= {"logical", "stuck"}
    assert main(["replay", str(out / "bugs.jsonl")]) == 0
    record = broken[0]
    cut = tmp_path / "cut.jsonl"  # one step short: the player is not yet east of the line
    cut.write_text(
        json.dumps({**record, "actions": record["actions"][:-1], "step": record["step"] - 1}) + "\n"
    )
    assert main(["replay", str(cut)]) == 1


def test_stuck_needs_a_window_of_moving_in_place():
    """Wuji's stuck oracle over the position: a player that backs into the start room's wall for the
    whole window is stuck; one that turns on the spot is not (its buttons do not move it)."""
    with make(f"vizdoom:{LEVEL}", num_envs=2, stuck_steps=20, max_steps_in_episode=200) as game:
        game.reset(0)
        backward, turn = (
            game.action_names.index("MOVE_BACKWARD"),
            game.action_names.index("TURN_LEFT"),
        )
        fired = np.stack(
            [
                game.step(np.array([backward, turn]))[4]["telemetry"].bugs_fired[:, 1]
                for _ in range(60)
            ]
        )
    assert fired[:, 0].any() and not fired[:20, 0].any() and not fired[:, 1].any()


def test_walkable_area_and_map():
    with make(f"vizdoom:{LEVEL}") as game:
        assert (
            game.walkable.shape == (game.num_cells,) and 500 < game.walkable.sum() < game.num_cells
        )
        assert len(game.walls) > 100
    with pytest.raises(
        ValueError, match="assertion name\\(s\\) health never above 200 are Doom's own"
    ):
        make(f"vizdoom:{LEVEL}", assertions={"health never above 200": lambda v: True})


def test_unknown_levels_list_the_known_ones():
    with pytest.raises(
        ValueError, match="unknown ViZDoom level 'nope'; levels: .*basic.*freedoom2/MAP01"
    ):
        make("vizdoom:nope")


def test_doom_assertions_hold_for_an_unarmed_player():
    # the player has no weapon: ammunition reads -1
    with make("vizdoom:health_gathering", num_envs=1, seed=0) as game:
        game.reset(0)
        steps = [game.step(np.array([2]))[4] for _ in range(20)]
    assert all(s["state"][0, 1] == -1 for s in steps)
    assert not np.any([s["telemetry"].bugs_fired[0, 2:] for s in steps])
