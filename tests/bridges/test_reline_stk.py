"""RELINE's SuperTuxKart campaign: its reward over host steps, its cells, its settings, and (slow) a
real campaign."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from jgtest.methods import reline
from jgtest.methods.reline import real_game
from jgtest.methods.reline import stk as reline_stk
from jgtest.types import Telemetry


def _info(centering, delta, frame_ms, autoreset=False):
    tel = Telemetry(
        position=np.zeros((1, 2), np.float32),
        cell=np.zeros(1, np.int32),
        bugs_fired=np.zeros((1, 0), bool),
        game_reward=np.zeros(1, np.float32),
        frame_time_ms=np.array([frame_ms], np.float32),
        crashed=np.zeros(1, bool),
    )
    return {
        "telemetry": tel,
        "centering": np.array([centering], np.float32),
        "delta_path_done": np.array([delta], np.float32),
        "autoreset": np.array([autoreset]),
    }


def test_kart_reline_reward_follows_the_paper():
    """r_g + r_p, and 10 × Σ r_p when the lap is done (§4.1.2); nothing on autoreset steps."""
    reward = reline_stk.KartRelineReward(1, threshold_ms=20.0, theta=20.0, progress_cap=10.0)
    no, yes = np.array([False]), np.array([True])
    # slow frame near the road
    assert reward(None, no, _info(5.0, 3.0, 25.0)) == pytest.approx(3.0 + 10.0)
    assert reward(None, no, _info(25.0, 3.0, 25.0)) == pytest.approx(-1.0)  # beyond θ: -1, no r_p
    assert reward(None, no, _info(0.0, 30.0, 5.0)) == pytest.approx(10.0)  # progress capped at M
    reward.threshold_ms = 4.0  # the warm-up's t_b replaced by t
    # Σ r_p = 20
    assert reward(None, yes, _info(0.0, 2.0, 5.0)) == pytest.approx(2.0 + 10.0 + 10.0 * 20.0)
    assert reward(None, no, _info(0.0, 2.0, 5.0, autoreset=True)) == 0.0
    assert reward.performance_return[0] == 0.0
    reward(None, no, _info(0.0, 2.0, 5.0))
    reward.reset()  # a new phase's first race: its own Σ r_p
    assert reward(None, yes, _info(0.0, 2.0, 5.0)) == pytest.approx(2.0 + 10.0 + 10.0 * 10.0)


def test_cell_centres_invert_the_bridges_buckets():
    game = SimpleNamespace(map_shape=(200, 24), track_length=860.0, centering_span=30.0)
    cells = np.array([0, 23, 24 * 199 + 12])
    path_done, centering = reline_stk.cell_centres(game, cells)
    np.testing.assert_allclose(path_done, [2.15, 2.15, 857.85])
    np.testing.assert_allclose(centering, [-28.75, 28.75, 1.25])


def test_quick_caps_the_episode_counts_and_configs_are_checked():
    quick = reline.RelineConfig(game="supertuxkart:lighthouse", quick=True)
    assert real_game.settings(quick) == real_game.QUICK_EPISODES and quick.models == 1
    full = reline.RelineConfig(game="supertuxkart:lighthouse")
    assert real_game.settings(full) == {
        "threshold_episodes": 300,
        "warmup_episodes": 100,
        "eval_episodes": 1000,
        "replays": 300,
    }
    with pytest.raises(ValueError, match="in this process"):
        reline.RelineConfig(game="supertuxkart:lighthouse", actors=2)
    # the bridge pays rl-baseline with θ = 20, M = 10
    with pytest.raises(ValueError, match="must use the same"):
        reline.RelineConfig(game="supertuxkart:lighthouse", theta=15.0)
    with pytest.raises(ValueError, match="needs rl-baseline"):
        reline.RelineConfig(game="supertuxkart:lighthouse", agents=("reline",))


@pytest.mark.slow
def test_a_short_real_campaign_calibrates_finds_and_replays(tmp_path):
    """The whole campaign on the real game at a tiny budget, through the CLI, in a process of its
    own: killed (SIGKILL) once both learners are trained, resumed without training again, and
    resumed once more when finished without playing anything."""
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "jgtest.cli",
        "run",
        "reline",
        "--game",
        "supertuxkart:lighthouse",
        "--out",
        str(out),
        "--quick",
        "--train-steps",
        "80",
        "--eval-episodes",
        "3",
        "--threshold-episodes",
        "2",
        "--warmup-episodes",
        "1",
        "--replays",
        "3",
        "--game-arg",
        "max_seconds=16",
        "--quiet",
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    progress = out / "progress.json"
    with subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as killed:
        deadline = time.monotonic() + 900
        while not (progress.exists() and "train reline" in json.loads(progress.read_text())):
            assert killed.poll() is None, killed.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.2)
        killed.kill()
    assert not (out / "summary.json").exists()
    done = subprocess.run(
        [*command, "--resume"], capture_output=True, text=True, timeout=900, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert {"train rl-baseline", "calibrate t_b", "train reline"} <= set(summary["resumed_phases"])
    # nothing trained again
    assert not {"train rl-baseline", "RELINE warm-up", "train reline"} & set(summary["phases_s"])
    # the restored learner trains on as it is evaluated
    assert "evaluate reline (training on)" in summary["phases_s"]
    threshold = summary["threshold"]
    assert (
        0 < threshold["t_b_ms"] <= threshold["t_ms"] < 1000
        and threshold["warmup_render_times"] >= 2
    )
    low_fps = json.loads((out / "low_fps.json").read_text())
    assert set(low_fps["per_agent"]) == {"reline", "rl-baseline", "random"}
    records = [json.loads(line) for line in (out / "bugs.jsonl").read_text().splitlines()]
    assert len(records) == sum(r["count"] for r in low_fps["per_agent"].values())
    for record in records:  # a point's record: the trace of its first visit over t
        assert record["kind"] == "low_fps" and len(record["actions"]) == record["step"] + 1
    replay = summary["replay_reliability"]
    assert replay["per_step"]["replays"] == 3 and replay["replayed_steps"] >= 3
    assert -1.0 <= replay["per_step"]["rho_min"] <= replay["per_step"]["rho_median"] <= 1.0
    for name in ("render_times.png", "low_fps_points.png", "sections.png"):
        assert (out / name).stat().st_size > 1000
    again = subprocess.run(
        [*command, "--resume"], capture_output=True, text=True, timeout=900, env=env
    )
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = json.loads((out / "summary.json").read_text())
    # all was done
    assert not any(
        p.startswith(("train", "evaluate", "calibrate", "replay")) for p in resumed["phases_s"]
    )
    assert resumed["threshold"] == threshold and resumed["low_fps"] == summary["low_fps"]
    assert resumed["replay_reliability"] == replay
    assert len((out / "bugs.jsonl").read_text().splitlines()) == len(records)


def test_progress_keeps_finished_phases_and_their_measurements(tmp_path):
    """What a resumed kart run reads back: a finished phase's figures, its measurements (telemetry
    included) as saved; a run that does not resume starts afresh."""
    config = reline.RelineConfig(game="supertuxkart:lighthouse", quick=True)
    tel = Telemetry(
        position=np.arange(12, dtype=np.float32).reshape(2, 3, 2),
        cell=np.ones((2, 3), np.int32),
        bugs_fired=np.zeros((2, 3, 0), bool),
        game_reward=np.zeros((2, 3), np.float32),
        frame_time_ms=np.full((2, 3), 7.5, np.float32),
        crashed=np.zeros((2, 3), bool),
    )
    out = {
        "actions": np.arange(6).reshape(2, 3),
        "valid": np.ones((2, 3), bool),
        "telemetry": tel,
        "seed": np.array([4, 4]),
    }
    progress = real_game.RunProgress(tmp_path, config, resume=False)
    assert progress.figures("evaluate random") is None
    progress.save_measurements("evaluate-random", out)
    assert progress.finish("evaluate random", {"episodes": np.int64(2)}) == {"episodes": 2}
    again = real_game.RunProgress(tmp_path, config, resume=True)
    assert again.resumed == ["evaluate random"] and again.figures("evaluate random") == {
        "episodes": 2
    }
    restored = again.measurements_of("evaluate-random")
    assert isinstance(restored["telemetry"], Telemetry) and restored[
        "telemetry"
    ].bugs_fired.shape == (2, 3, 0)
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(out)):
        np.testing.assert_array_equal(a, b)
    fresh = real_game.RunProgress(tmp_path, config, resume=False)
    assert fresh.figures("evaluate random") is None and not (tmp_path / "measurements").exists()
