"""Any Gymnasium game through the gym: bridge: a tiny game the project does not ship (tiny_gym.py),
played by the random campaign from the command line, its records replayed, its telemetry function
checked field by field."""

import json

import numpy as np
import pytest

from envs_bridge import make
from envs_bridge.gym import TelemetryError, frame_hash
from jgtest.cli import main
from jgtest.methods import compatibility

GAME = "gym:tests.bridges.tiny_gym:Tiny-v0"
TELEMETRY = "tests.bridges.tiny_gym:telemetry"


def test_the_bridge_reads_frames_telemetry_and_frame_times():
    with make(GAME, num_envs=2, seed=5, telemetry=TELEMETRY, num_cells=12) as game:
        frames, info = game.reset(5)
        assert frames.shape == (2, 16, 48, 3) and frames.dtype == np.uint8  # drawn by render(): the observation is not an image
        x = info["telemetry"].cell
        np.testing.assert_array_equal(info["telemetry"].position[:, 0], x)
        np.testing.assert_array_equal(frames[np.arange(2), 0, 4 * x], 255)  # the lit column is the player's
        frames, reward, terminated, truncated, info = game.step(np.array([2, 0]))
        np.testing.assert_array_equal(info["telemetry"].cell, [min(x[0] + 1, 11), max(x[1] - 1, 0)])
        assert (info["telemetry"].frame_time_ms > 0).all() and (info["telemetry"].frame_time_ms < 50).all()  # measured, in ms
        assert not info["autoreset"].any() and game.bug_kinds == ("crash",)


def test_a_crash_ends_the_episode_and_the_copy_restarts():
    with make(GAME, num_envs=1, seed=0, telemetry=TELEMETRY, num_cells=12) as game:
        game.reset(0)
        while game.step(np.array([2]))[4]["telemetry"].cell[0] < 4:
            pass
        _, _, terminated, _, info = game.step(np.array([2]))  # the fifth tile has no floor
        assert terminated[0] and info["telemetry"].crashed[0] and info["telemetry"].bugs_fired[0, 0]
        assert tuple(info["telemetry"].position[0]) == (4.0, 0.0)  # where it was
        _, _, _, _, info = game.step(np.array([1]))
        assert info["autoreset"][0] and not info["telemetry"].crashed[0]


def test_random_campaign_from_the_command_line(tmp_path):
    out = tmp_path / "run"
    args = ["run", "random", "--game", GAME, "--telemetry", TELEMETRY, "--game-arg", "num_cells=12", "--episodes", "20", "--envs", "2"]
    assert main([*args, "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 20 and 20 <= summary["env_steps"] <= 20 * 30
    assert 5 <= summary["state_coverage"] <= 12 and summary["num_cells"] == 12
    assert 0 < summary["frame_time_ms"]["median"] < 50
    records = [json.loads(line) for line in (out / "bugs.jsonl").read_text().splitlines()]
    assert summary["bugs_found"] == len(records) == 1  # the crash, recorded once
    crash = records[0]
    assert crash["kind"] == "crash" and crash["position"] == [4.0, 0.0] and crash["actions"][-1] == 2
    assert len(crash["actions"]) == crash["step"] + 1 and crash["game_kwargs"]["telemetry"] == TELEMETRY
    again = tmp_path / "again"
    assert main([*args, "--out", str(again), "--quiet"]) == 0  # seeded: the same campaign
    replayed = [json.loads(line) for line in (again / "bugs.jsonl").read_text().splitlines()]
    assert [{**r, "wall_s": 0} for r in replayed] == [{**r, "wall_s": 0} for r in records]
    assert main(["replay", str(out / "bugs.jsonl")]) == 0  # a fresh game, started at the record's episode from its seed
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps({**crash, "actions": crash["actions"][:-1] + [0]}) + "\n")  # the last step not right from the fifth tile
    assert main(["replay", str(cut)]) == 1


@pytest.mark.parametrize(
    ("function", "message"),
    [("telemetry_bad_shape", "returned position of shape (3,), expected (2,)"), ("telemetry_nan", "returned frame_time_ms = nan: NaN or infinite"),
     ("telemetry_bad_cell", "returned cell 1000000000.0, not an integer in [0, 65536)")],
)  # fmt: skip
def test_a_bad_telemetry_function_is_refused_naming_the_field(tmp_path, capsys, function, message):
    with pytest.raises(TelemetryError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        make(GAME, telemetry=f"tests.bridges.tiny_gym:{function}")
    assert main(["run", "random", "--game", GAME, "--telemetry", f"tests.bridges.tiny_gym:{function}", "--out", str(tmp_path / "a")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "a" / "bugs.jsonl").exists()


def test_signals_follow_the_telemetry_function(capsys, tmp_path):
    assert compatibility.missing("reline", GAME) == ("position",)
    assert compatibility.missing("reline", GAME, {"telemetry": TELEMETRY}) == ()
    assert main(["run", "reline", "--game", GAME, "--out", str(tmp_path / "r")]) == 2
    assert "reline reads position, which gym:tests.bridges.tiny_gym:Tiny-v0 does not provide" in capsys.readouterr().err
    assert main(["run", "random", "--game", "BlockMaze-v0", "--telemetry", TELEMETRY, "--out", str(tmp_path / "b")]) == 2
    assert "--telemetry maps a Gymnasium game's observations to telemetry; BlockMaze-v0 reports its own" in capsys.readouterr().err


def test_frame_hash_tells_screens_apart():
    frame = np.zeros((80, 110, 3), np.uint8)
    moved = frame.copy()
    moved[10:20, 10:20] = 255  # one block of the 8 × 11 thumbnail
    assert frame_hash(frame, 65_536) != frame_hash(moved, 65_536)
    assert frame_hash(frame, 65_536) == frame_hash(frame + 3, 65_536)  # below one of the 8 levels
