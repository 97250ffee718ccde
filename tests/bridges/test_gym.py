"""Any Gymnasium game through the gym: bridge: a tiny game the project does not ship (tiny_gym.py),
played by the random campaign from the command line, its records replayed, its telemetry function
checked field by field; and a tiny first-person room (tiny_room.py) whose telemetry reports the
things in view, explored with the 360° object tests by random and (slow) by Inspector."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from envs_bridge import make
from envs_bridge.gym import TelemetryError, frame_hash
from jgtest.cli import main
from jgtest.methods import compatibility
from jgtest.methods.park.level_campaign import LevelExplorationConfig
from jgtest.methods.park.level_campaign import run as run_level
from tests.bridges import tiny_room

GAME = "gym:tests.bridges.tiny_gym:Tiny-v0"
TELEMETRY = "tests.bridges.tiny_gym:telemetry"


def test_the_bridge_reads_frames_telemetry_and_frame_times():
    with make(GAME, num_envs=2, seed=5, telemetry=TELEMETRY, num_cells=12) as game:
        frames, info = game.reset(5)
        # drawn by render(): the observation is not an image
        assert frames.shape == (2, 16, 48, 3) and frames.dtype == np.uint8
        x = info["telemetry"].cell
        np.testing.assert_array_equal(info["telemetry"].position[:, 0], x)
        # the lit column is the player's
        np.testing.assert_array_equal(frames[np.arange(2), 0, 4 * x], 255)
        frames, reward, terminated, truncated, info = game.step(np.array([2, 0]))
        np.testing.assert_array_equal(info["telemetry"].cell, [min(x[0] + 1, 11), max(x[1] - 1, 0)])
        # measured, in ms
        assert (info["telemetry"].frame_time_ms > 0).all() and (
            info["telemetry"].frame_time_ms < 50
        ).all()
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
    args = [
        "run",
        "random",
        "--game",
        GAME,
        "--telemetry",
        TELEMETRY,
        "--game-arg",
        "num_cells=12",
        "--episodes",
        "20",
        "--envs",
        "2",
    ]
    assert main([*args, "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["episodes"] == 20 and 20 <= summary["env_steps"] <= 20 * 30
    assert 5 <= summary["state_coverage"] <= 12 and summary["num_cells"] == 12
    assert 0 < summary["frame_time_ms"]["median"] < 50
    records = [json.loads(line) for line in (out / "bugs.jsonl").read_text().splitlines()]
    assert summary["bugs_found"] == len(records) == 1  # the crash, recorded once
    crash = records[0]
    assert (
        crash["kind"] == "crash" and crash["position"] == [4.0, 0.0] and crash["actions"][-1] == 2
    )
    assert (
        len(crash["actions"]) == crash["step"] + 1
        and crash["game_kwargs"]["telemetry"] == TELEMETRY
    )
    again = tmp_path / "again"
    assert main([*args, "--out", str(again), "--quiet"]) == 0  # seeded: the same campaign
    replayed = [json.loads(line) for line in (again / "bugs.jsonl").read_text().splitlines()]
    assert [{**r, "wall_s": 0} for r in replayed] == [{**r, "wall_s": 0} for r in records]
    # a fresh game, started at the record's episode from its seed
    assert main(["replay", str(out / "bugs.jsonl")]) == 0
    cut = tmp_path / "cut.jsonl"
    # the last step not right from the fifth tile
    cut.write_text(json.dumps({**crash, "actions": crash["actions"][:-1] + [0]}) + "\n")
    assert main(["replay", str(cut)]) == 1


def test_a_telemetry_function_failing_mid_campaign_leaves_it_resumable(
    tmp_path, capsys, monkeypatch
):
    """The records found before the failure stay; once the function is fixed, --resume plays the
    campaign again from its start and ends with the uninterrupted campaign's records, none twice."""
    from tests.bridges import tiny_gym

    monkeypatch.setitem(tiny_gym.LATE_NAN, "broken", True)
    out, whole = tmp_path / "run", tmp_path / "whole"
    args = [
        "run",
        "random",
        "--game",
        GAME,
        "--telemetry",
        "tests.bridges.tiny_gym:telemetry_late_nan",
        "--game-arg",
        "num_cells=12",
        "--episodes",
        "20",
        "--envs",
        "2",
        "--quiet",
    ]
    assert main([*args, "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert (
        "returned position" in error
        and f"the bugs found before it are kept in {out / 'bugs.jsonl'}; "
        "fix it and continue with --resume"
        in error
    )
    monkeypatch.setitem(tiny_gym.LATE_NAN, "broken", False)  # fixed
    assert main([*args, "--out", str(out), "--resume"]) == 0
    assert main([*args, "--out", str(whole)]) == 0
    records = lambda run: [
        {**json.loads(line), "wall_s": 0} for line in (run / "bugs.jsonl").read_text().splitlines()
    ]
    assert records(out) == records(whole) and len(records(whole)) == 1


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("telemetry_bad_shape", "returned position of shape (3,), expected (2,)"),
        ("telemetry_nan", "returned frame_time_ms = nan: NaN or infinite"),
        ("telemetry_bad_cell", "returned cell 1000000000.0, not an integer in [0, 65536)"),
    ],
)
def test_a_bad_telemetry_function_is_refused_naming_the_field(tmp_path, capsys, function, message):
    with pytest.raises(
        TelemetryError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        make(GAME, telemetry=f"tests.bridges.tiny_gym:{function}")
    assert (
        main(
            [
                "run",
                "random",
                "--game",
                GAME,
                "--telemetry",
                f"tests.bridges.tiny_gym:{function}",
                "--out",
                str(tmp_path / "a"),
            ]
        )
        == 2
    )
    assert message in capsys.readouterr().err
    assert not (tmp_path / "a" / "bugs.jsonl").exists()


def test_signals_follow_the_telemetry_function(capsys, tmp_path):
    assert compatibility.missing("reline", GAME) == ("position",)
    assert compatibility.missing("reline", GAME, {"telemetry": TELEMETRY}) == ()
    assert main(["run", "reline", "--game", GAME, "--out", str(tmp_path / "r")]) == 2
    assert (
        "reline reads position, which gym:tests.bridges.tiny_gym:Tiny-v0 does not provide"
        in capsys.readouterr().err
    )
    assert (
        main(
            [
                "run",
                "random",
                "--game",
                "BlockMaze-v0",
                "--telemetry",
                TELEMETRY,
                "--out",
                str(tmp_path / "b"),
            ]
        )
        == 2
    )
    assert (
        "--telemetry maps a Gymnasium game's observations to telemetry; BlockMaze-v0 reports its "
        "own" in capsys.readouterr().err
    )


def test_frame_hash_tells_screens_apart():
    frame = np.zeros((80, 110, 3), np.uint8)
    moved = frame.copy()
    moved[10:20, 10:20] = 255  # one block of the 8 × 11 thumbnail
    assert frame_hash(frame, 65_536) != frame_hash(moved, 65_536)
    assert frame_hash(frame, 65_536) == frame_hash(frame + 3, 65_536)  # below one of the 8 levels


ROOM = "gym:tests.bridges.tiny_room:TinyRoom-v0"
ROOM_OPTIONS = {
    "telemetry": "tests.bridges.tiny_room:telemetry",
    "num_cells": tiny_room.NUM_CELLS,
    "action_names": tiny_room.ACTION_NAMES,
}


def test_objects_and_angle_come_from_a_declaring_telemetry_function():
    with make(ROOM, num_envs=2, seed=1, **ROOM_OPTIONS) as game:
        frames, info = game.reset(1)
        assert (
            game.action_names == tuple(tiny_room.ACTION_NAMES.split(","))
            and info["angle"].dtype == np.float32
        )
        assert len(info["objects"]) == 2 and any(info["objects"])
        for frame, seen in zip(frames, info["objects"]):
            for name, _, x, y, w, h in seen:  # each box is where the thing is drawn
                colour = next(c for n, _, _, c in tiny_room.THINGS if n == name)
                assert (frame[int(y + h / 2), int(x + w / 2)] == colour).all()
        _, _, _, _, after = game.step(np.array([1, 2]))  # turn left, turn right
        np.testing.assert_allclose((after["angle"] - info["angle"]) % 360, [10, 350])
    assert compatibility.missing("inspector", ROOM, ROOM_OPTIONS) == ()
    # provides nothing but position
    assert compatibility.missing("inspector", GAME, {"telemetry": TELEMETRY}) == ("objects",)


def test_random_with_object_tests_on_a_gymnasium_game(tmp_path):
    config = LevelExplorationConfig(
        game=ROOM,
        agent="random",
        episodes=4,
        num_envs=2,
        episode_steps=200,
        rollout_steps=50,
        game_kwargs=tuple(ROOM_OPTIONS.items()),
    )
    summary = run_level(config, tmp_path)
    # a game without a map: all its cells
    assert summary["walkable_cells"] == 144 and 0.05 < summary["coverage_walkable"] < 0.9
    assert summary["tested_succeeded"] >= 1 and {t["name"] for t in summary["tests"].values()} <= {
        n for n, *_ in tiny_room.THINGS
    }
    assert (tmp_path / "coverage.png").stat().st_size > 5000


@pytest.mark.slow
def test_inspector_on_a_gymnasium_game_from_the_command_line(tmp_path):
    args = [
        "run",
        "inspector",
        "--game",
        ROOM,
        "--telemetry",
        ROOM_OPTIONS["telemetry"],
        "--episodes",
        "5",
        "--quick",
        "--quiet",
        *[
            a
            for k in ("num_cells", "action_names")
            for a in ("--game-arg", f"{k}={ROOM_OPTIONS[k]}")
        ],
        "--game-arg",
        "max_steps_in_episode=100",
    ]
    assert main([*args, "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (
        summary["method"] == "inspector" and summary["ppo_updates"] >= 1 and summary["tested"] >= 1
    )
    assert (
        0 < summary["coverage_walkable"] < 1 and (tmp_path / "coverage.png").stat().st_size > 5000
    )


@pytest.mark.parametrize(
    ("telemetry", "options", "message"),
    [
        (
            "tests.bridges.tiny_gym:telemetry",
            {},
            "inspector reads objects, which gym:tests.bridges.tiny_room:TinyRoom-v0 does not "
            "provide",
        ),
        (
            "tests.bridges.tiny_room:telemetry",
            {"action_names": None},
            "this game has no MOVE_FORWARD, TURN_LEFT, TURN_RIGHT, MOVE_LEFT",
        ),
        (
            "tests.bridges.tiny_room:telemetry_bad_objects",
            {},
            "returned objects[0] = ('Barrel', 1, 0, 0, 10), expected (name, id, x, y, width, "
            "height)",
        ),
        (
            "tests.bridges.tiny_room:telemetry_without_objects",
            {},
            "declares objects (its provides) but returned none",
        ),
    ],
)
def test_inspector_on_a_game_without_what_its_walk_reads_is_refused(
    tmp_path, capsys, telemetry, options, message
):
    kwargs = {"num_cells": 144, "action_names": tiny_room.ACTION_NAMES, **options}
    game_args = [a for k, v in kwargs.items() if v is not None for a in ("--game-arg", f"{k}={v}")]
    assert (
        main(
            [
                "run",
                "inspector",
                "--game",
                ROOM,
                "--telemetry",
                telemetry,
                *game_args,
                "--out",
                str(tmp_path / "a"),
                "--quiet",
            ]
        )
        == 2
    )
    assert message in capsys.readouterr().err
    assert not (tmp_path / "a" / "summary.json").exists()


def test_a_pygame_drawn_game_runs_without_audio_or_display_errors(tmp_path):
    """CartPole draws with pygame, whose SDL would print ALSA's and XDG's errors on a machine with
    no sound card or display: the bridge picks SDL's dummy drivers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SDL_")}
    argv = "run random --game gym:CartPole-v1 --episodes 2 --quiet".split()
    run = subprocess.run(
        [sys.executable, "-m", "jgtest.cli", *argv, "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
