"""Every Atari game through envpool (ale:GAME): cells from the annotated RAM position or a frame
hash, unknown names refused with the known ones, and a random campaign from the command line."""

import json

import numpy as np
import pytest

from envs_bridge import make
from envs_bridge.atari import RAM_PLAYER, cells_from, known_games
from jgtest.cli import main
from jgtest.methods import compatibility


def test_pong_reads_its_position_from_the_ram():
    with make("ale:Pong", num_envs=2, seed=1, max_steps_in_episode=200) as game:
        frames, info = game.reset(1)
        cells = set()
        for _ in range(60):
            frames, reward, terminated, truncated, info = game.step(
                np.random.default_rng(0).integers(0, game.num_actions, 2)
            )
            tel, ram = info["telemetry"], info["ram"]
            # AtariARI: player_x 46, player_y 51
            np.testing.assert_array_equal(tel.position, ram[:, [46, 51]])
            np.testing.assert_array_equal(
                tel.cell, (ram[:, 51].astype(int) // 8) * 32 + ram[:, 46] // 8
            )
            cells |= set(tel.cell.tolist())
        assert frames.shape == (2, 84, 84, 1) and game.num_cells == 1024 and len(cells) > 1
        assert (tel.frame_time_ms > 0).all() and game.bug_kinds == ()


def test_a_game_without_an_annotation_hashes_its_frames():
    assert cells_from("Enduro") == "frame hash" and cells_from("MontezumaRevenge") == "ram"
    assert compatibility.missing("reline", "ale:Enduro") == ("position",)
    with make("ale:Enduro", num_envs=1, seed=0) as game:
        game.reset(0)
        assert game.num_cells == 65_536
        _, _, _, _, info = game.step(np.zeros(1, np.int32))
        assert (info["telemetry"].position == 0).all()


def test_unknown_names_list_the_known_ones():
    assert (
        len(known_games()) > 100
        and set(RAM_PLAYER) <= set(known_games())
        and "Ant" not in known_games()
    )
    with pytest.raises(
        ValueError, match="unknown ALE game 'Pongg'; envpool ships: Adventure, AirRaid"
    ):
        make("ale:Pongg")


def test_random_campaign_on_an_atari_game(tmp_path):
    out = tmp_path / "pong"
    assert (
        main(
            [
                "run",
                "random",
                "--game",
                "ale:Pong",
                "--episodes",
                "4",
                "--envs",
                "2",
                "--game-arg",
                "max_steps_in_episode=150",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["episodes"] == 4
        and summary["env_steps"] == 600
        and 1 < summary["state_coverage"] <= 1024
    )
