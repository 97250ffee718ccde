"""RELINE on a real level (jgtest.methods.reline.level): its reward over host steps, its terms over
a level's geometry, the level map, and (slow) a campaign on Freedoom 2's MAP01 through the CLI."""

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from jgtest.cli import main
from jgtest.methods import reline
from jgtest.methods.reline import level
from jgtest.report.level_maps import level_map
from jgtest.types import Telemetry


def _info(cells, frame_ms, autoreset=(False, False), finished=(False, False)):
    n = len(cells)
    tel = Telemetry(
        position=np.zeros((n, 2), np.float32),
        cell=np.asarray(cells, np.int32),
        bugs_fired=np.zeros((n, 0), bool),
        game_reward=np.zeros(n, np.float32),
        frame_time_ms=np.asarray(frame_ms, np.float32),
        crashed=np.zeros(n, bool),
    )
    return {
        "telemetry": tel,
        "autoreset": np.asarray(autoreset),
        "level_finished": np.asarray(finished),
    }


def test_level_reward_pays_first_visits_slow_frames_and_the_exit():
    """r_g = the engine's reward + 1 a cell first entered in the episode; r_p = 10 a frame over t;
    10 × Σ r_p on reaching the exit; nothing on autoreset steps, which start the cells afresh."""
    reward = level.LevelRelineReward(2, num_cells=5, threshold_ms=2.0)
    no = np.array([False, False])
    np.testing.assert_allclose(
        reward(np.array([0.0, 0.5]), no, _info([1, 1], [1.0, 3.0])), [1.0, 1.5 + 10.0]
    )
    # game 0 stays in cell 1
    np.testing.assert_allclose(reward(np.zeros(2), no, _info([1, 2], [3.0, 1.0])), [10.0, 1.0])
    exit_ = np.array([False, True])
    np.testing.assert_allclose(
        reward(np.zeros(2), exit_, _info([1, 2], [1.0, 1.0], finished=exit_)), [0.0, 10.0 * 10.0]
    )
    np.testing.assert_allclose(
        reward(np.zeros(2), no, _info([1, 2], [5.0, 1.0], autoreset=(False, True))), [10.0, 0.0]
    )
    # game 1's start cell is visited
    np.testing.assert_allclose(reward(np.zeros(2), no, _info([3, 2], [1.0, 1.0])), [1.0, 0.0])
    died = np.array([True, False])
    # ended without reaching the exit: no bonus
    assert reward(np.zeros(2), died, _info([3, 2], [1.0, 1.0]))[0] == 0.0
    # rl-baseline's: r_g alone
    game_only = level.LevelRelineReward(1, num_cells=5, threshold_ms=float("inf"))
    assert game_only(np.zeros(1), np.array([True]), _info([4], [1e6], (False,), (True,)))[0] == 1.0
    reward.reset()
    np.testing.assert_allclose(reward(np.zeros(2), no, _info([1, 2], [1.0, 1.0])), [1.0, 1.0])


@pytest.fixture
def terms():
    game = SimpleNamespace(
        num_envs=1,
        num_cells=12,
        map_shape=(3, 4),
        cell_size=64,
        bounds=(-100.0, 200.0, 156.0, 392.0),
        bug_kinds=("crash", "stuck", "logical"),
        walls=[(0.0, 0.0, 1.0, 1.0)],
        walkable=np.ones(12, bool),
    )
    return level.LevelTerms(reline.RelineConfig(game="vizdoom:freedoom2/MAP01", quick=True), game)


def test_level_terms_read_the_levels_geometry_and_oracles(terms):
    where = terms.coordinates(np.array([0, 5, 11]))
    np.testing.assert_allclose(where["x"], [-68.0, -4.0, 124.0])
    np.testing.assert_allclose(where["y"], [232.0, 296.0, 360.0])
    bugs = np.zeros((1, 6, 3), bool)
    bugs[0, 3, 1] = True  # stuck at step 3
    out = {"telemetry": SimpleNamespace(bugs_fired=bugs), "valid": np.array([[True] * 5 + [False]])}
    np.testing.assert_array_equal(
        terms.calibration_steps(out), [[True, True, True, False, False, False]]
    )
    section, starts, _ = terms.sections(np.array([[4, 4, 7, 4, 9], [4, 7, 7, 9, 2]]))
    np.testing.assert_array_equal(section, [[0, 0, 1, 0, 2], [0, 1, 1, 2, -1]])
    np.testing.assert_array_equal(starts, [0.0, 1.0, 2.0])
    finished = {
        "level_finished": np.array([[False, False], [False, True]]),
        "valid": np.array([[True, True], [True, True]]),
    }
    assert terms.replay_episode(finished) == (1, True)
    assert terms.replay_episode(
        {
            **finished,
            "level_finished": np.zeros((2, 2), bool),
            "valid": np.array([[True, False], [True, True]]),
        }
    ) == (1, False)
    assert "x -4, y 296" in terms.describe({k: v[1] for k, v in where.items()})


def test_position_terms_place_points_where_their_visits_were():
    """A game without a map (a Gymnasium game): a point's place is the mean position of its cell's
    visits; without a stuck oracle the calibration keeps every step."""
    game = SimpleNamespace(num_envs=1, num_cells=4, bug_kinds=("crash",))
    terms = level.PositionTerms(reline.RelineConfig(game="gym:Tiny-v0", quick=True), game)
    tel = SimpleNamespace(
        cell=np.array([[1, 1, 2, 3]]),
        position=np.array([[[0.0, 0.0], [2.0, 4.0], [5.0, 5.0], [9.0, 9.0]]]),
        bugs_fired=np.zeros((1, 4, 1), bool),
    )
    out = {"telemetry": tel, "valid": np.array([[True, True, True, False]])}
    terms.observe(out)
    where = terms.coordinates(np.array([1, 2]))
    np.testing.assert_allclose(where["x"], [1.0, 5.0])
    np.testing.assert_allclose(where["y"], [2.0, 5.0])
    assert np.isnan(terms.coordinates(np.array([3]))["x"][0])  # only valid steps are visits
    np.testing.assert_array_equal(terms.calibration_steps(out), out["valid"])
    assert terms.replay_episode(out) == (0, False) and level.episode_options(terms.config) == {}


def test_levels_are_relines_and_quick_shortens_their_episodes():
    quick = reline.RelineConfig(game="vizdoom:basic", quick=True)
    assert quick.models == 1 and level.episode_options(quick) == {
        "max_steps_in_episode": 225,
        "resolution": "640x480",
    }
    assert (
        level.episode_options(reline.RelineConfig(game="vizdoom:basic"))["max_steps_in_episode"]
        == 788
    )
    given = (("max_steps_in_episode", 50), ("resolution", "160x120"))
    assert level.episode_options(reline.RelineConfig(game="vizdoom:basic", game_kwargs=given)) == {}
    with pytest.raises(ValueError, match="in this process"):
        reline.RelineConfig(game="vizdoom:basic", actors=2)
    with pytest.raises(ValueError, match="needs rl-baseline"):
        reline.RelineConfig(game="vizdoom:basic", agents=("reline",))


def test_level_map_draws_walls_traces_and_points(tmp_path):
    walls = [(0, 0, 100, 0), (100, 0, 100, 100), (100, 100, 0, 100), (0, 100, 0, 0)]
    path = level_map(
        walls,
        tmp_path / "m.png",
        traces={"random": np.array([[10.0, 10.0], [50.0, 50.0]])},
        points={"reline": (np.array([[20.0, 30.0]]), np.array([0.9]))},
        covered=(np.eye(2, dtype=bool), (0.0, 0.0, 100.0, 100.0), 50.0),
    )
    assert path.stat().st_size > 5000
    with pytest.raises(ValueError, match="needs the level's walls or traces"):
        level_map([], tmp_path / "n.png")
    with pytest.raises(ValueError, match="2 positions but 1 confidences"):
        level_map(walls, tmp_path / "n.png", points={"a": (np.zeros((2, 2)), np.ones(1))})


@pytest.mark.slow
def test_a_short_campaign_on_a_freedoom_level(tmp_path):
    """Every phase on the real engine at a tiny budget, through the CLI: t calibrated from
    rl-baseline's render times, low-FPS points with their confidence drawn on the level map, the
    replay check, and each point a record that replays."""
    pytest.importorskip("vizdoom")
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "jgtest.cli",
        "run",
        "reline",
        "--game",
        "vizdoom:freedoom2/MAP01",
        "--out",
        str(out),
        "--quick",
        "--train-steps",
        "80",
        "--eval-episodes",
        "2",
        "--threshold-episodes",
        "2",
        "--warmup-episodes",
        "1",
        "--replays",
        "3",
        "--game-arg",
        "max_steps_in_episode=60",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "threshold: t_b = mean + 5 sd" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    threshold = summary["threshold"]
    assert (
        0 < threshold["t_b_ms"] <= threshold["t_ms"] < 100
        and threshold["baseline_render_times"] >= 2
    )
    low_fps = json.loads((out / "low_fps.json").read_text())
    assert (
        set(low_fps["per_agent"]) == {"reline", "rl-baseline", "random"}
        and low_fps["level"]["walkable_cells"] > 500
    )
    for point in (p for r in low_fps["per_agent"].values() for p in r["points"]):
        assert {"x", "y", "confidence", "visits"} <= set(point) and point["confidence"] > 0.5
    assert summary["replay_reliability"]["per_step"]["replays"] == 3
    for name in ("render_times.png", "low_fps_points.png", "sections.png"):
        assert (out / name).stat().st_size > 1000
    records = [json.loads(line) for line in (out / "bugs.jsonl").read_text().splitlines()]
    assert len(records) == sum(r["count"] for r in low_fps["per_agent"].values())
    if records:  # a point's record drives the player to its cell again
        assert main(["replay", str(out / "bugs.jsonl")]) == 0


@pytest.mark.slow
def test_reline_on_a_gymnasium_game_it_does_not_ship(tmp_path):
    """The generic terms on tests/bridges/tiny_gym.py: its telemetry's position and cells, each
    step's wall time as the frame time; the points placed where their cells' visits were."""
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "jgtest.cli",
        "run",
        "reline",
        "--game",
        "gym:tests.bridges.tiny_gym:Tiny-v0",
        "--telemetry",
        "tests.bridges.tiny_gym:telemetry",
        "--out",
        str(out),
        "--quick",
        "--train-steps",
        "60",
        "--eval-episodes",
        "2",
        "--threshold-episodes",
        "2",
        "--warmup-episodes",
        "1",
        "--replays",
        "3",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["threshold"]["t_ms"] > 0 and summary["threshold"]["stuck_cut_skipped"] is False
    low_fps = json.loads((out / "low_fps.json").read_text())
    assert "level" not in low_fps and all(
        0 <= a["x"] <= 11 and a["y"] == 0 for a in low_fps["slowest_areas"]
    )
    assert (out / "low_fps_points.png").stat().st_size > 1000
