"""The jgtest CLI: the random campaign, replay, bad input, and a kill mid-run."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jgtest.cli import main
from jgtest.records import read_bug_records
from jgtest.report.replay import replay


@pytest.fixture(scope="module")
def maze_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert (
        main(
            [
                "run",
                "random",
                "--game",
                "BlockMaze-v0",
                "--out",
                str(out),
                "--envs",
                "64",
                "--steps",
                "400",
                "--quiet",
            ]
        )
        == 0
    )
    return out


def test_campaign_writes_records_and_summary(maze_run):
    summary = json.loads((maze_run / "summary.json").read_text())
    for key in ("bugs_found", "bugs_total", "state_coverage", "episodes", "wall_s"):
        assert key in summary
    records = read_bug_records(maze_run / "bugs.jsonl")
    assert summary["bugs_total"] == 10
    assert summary["bugs_found"] == len(records) == len({r.bug_id for r in records}) > 0
    assert summary["episodes"] >= 64 * 400 // 200  # episodes last at most 200 steps
    assert 0 < summary["state_coverage"] <= 256
    assert json.loads((maze_run / "config.json").read_text())["game"] == "BlockMaze-v0"


def test_every_record_replays(maze_run):
    for record in read_bug_records(maze_run / "bugs.jsonl"):
        result = replay(record)
        assert result.reproduced, result.describe()
        assert result.fired_at_steps[0] == record.step  # first firing of the episode


def test_a_tampered_trace_does_not_reproduce(maze_run, tmp_path):
    record = read_bug_records(maze_run / "bugs.jsonl")[0]
    from dataclasses import replace

    # other keys, but BlockMaze is deterministic
    bad = replace(record, episode=record.episode + 1000)
    moved = replace(record, bug_id=(record.bug_id + 1) % 10)
    assert replay(bad).reproduced  # the maze has no randomness: same actions, same bug
    assert not replay(moved).reproduced


def test_replay_cli_exit_codes(maze_run, capsys):
    assert main(["replay", str(maze_run / "bugs.jsonl"), "--index", "0"]) == 0
    assert "reproduced" in capsys.readouterr().out
    # the others: tests/cli/test_bad_invocations.py
    assert main(["replay", str(maze_run / "bugs.jsonl"), "--index", "99"]) == 2
    assert "out of range" in capsys.readouterr().err


def test_existing_campaign_is_not_overwritten_silently(maze_run, capsys):
    assert main(["run", "random", "--out", str(maze_run)]) == 2
    assert "already holds a campaign" in capsys.readouterr().err


def test_killed_campaign_keeps_every_record_written(tmp_path):
    out = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "jgtest.cli",
        "run",
        "random",
        "--game",
        "BlockMaze-v0",
        "--out",
        str(out),
        "--envs",
        "8",
        "--steps",
        "10000000",
        "--chunk",
        "50",
        "--quiet",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            path = out / "bugs.jsonl"
            if path.exists() and path.read_text().count("\n") >= 2:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the campaign wrote no records in 120 s")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    records = read_bug_records(out / "bugs.jsonl")
    assert len(records) >= 2
    assert not (out / "summary.json").exists()  # it really was killed mid-run
    for record in records:
        assert replay(record).reproduced


class _Killed(Exception):
    pass


def test_a_stopped_campaign_resumes_to_the_uninterrupted_result(tmp_path):
    """The random campaign is checkpointed after every chunk; ``--resume`` ends where a whole run
    ends."""
    argv = [
        "run",
        "random",
        "--game",
        "BlockMaze-v0",
        "--envs",
        "16",
        "--steps",
        "240",
        "--chunk",
        "60",
        "--quiet",
        "--out",
    ]
    assert main(argv + [str(tmp_path / "whole")]) == 0
    from jgtest.methods import random_testing

    def stop_after_two_chunks(done, total, bugs):
        if done == 2 * 16 * 60:
            raise _Killed

    config = random_testing.RandomCampaignConfig(
        game="BlockMaze-v0", num_envs=16, steps_per_env=240, chunk_steps=60
    )
    (tmp_path / "killed").mkdir()
    with pytest.raises(_Killed):
        random_testing.run(config, tmp_path / "killed", progress=stop_after_two_chunks)
    assert main(argv + [str(tmp_path / "killed")]) == 2  # refused without --resume
    assert main(argv + [str(tmp_path / "killed"), "--resume"]) == 0
    whole, resumed = (
        json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "killed")
    )
    for field in ("bugs_found", "bugs_by_kind", "state_coverage", "episodes", "env_steps"):
        assert resumed[field] == whole[field], field
    strip = lambda d: [
        (r.bug_id, r.episode, r.step, r.env_index, r.actions)
        for r in read_bug_records(tmp_path / d / "bugs.jsonl")
    ]
    assert strip("killed") == strip("whole") and len(strip("whole")) > 0


#: The games whose command-line campaign the default run plays (the quickest to compile); the
#: others' run with ``-m slow``.
QUICK_GAMES = ("BlockMaze-v0", "CartPoleBugs-v0", "Dungeon-v0", "PacMaze-v0")


@pytest.mark.parametrize(
    "game",
    [
        g if g in QUICK_GAMES else pytest.param(g, marks=pytest.mark.slow)
        for g in __import__("jgtest").registered_games()
    ],
)
def test_every_game_runs_a_campaign_whose_records_replay(game, tmp_path):
    from jgtest.methods.random_testing import RandomCampaignConfig, run

    summary = run(
        RandomCampaignConfig(game=game, num_envs=16, steps_per_env=120, chunk_steps=60), tmp_path
    )
    env, _ = __import__("jgtest").make(game)
    assert summary["bugs_total"] == env.num_bugs and summary["env_steps"] == 16 * 120
    assert 0 < summary["state_coverage"] <= env.num_cells
    records = read_bug_records(tmp_path / "bugs.jsonl")
    assert len(records) == summary["bugs_found"]
    for record in records:
        assert record.kind == env.bug_kinds[record.bug_id]
        assert replay(record).reproduced


def test_wuji_cli_runs_replays_and_refuses_a_second_run_without_resume(tmp_path, capsys):
    out = tmp_path / "wuji"
    argv = [
        "run",
        "wuji",
        "--game",
        "BlockMaze-v0",
        "--strategy",
        "ea_m",
        "--population",
        "4",
        "--generations",
        "1",
        "--evaluation",  # untrained greedy policies on the maze repeat one move: no bug
        "sampled",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main([*argv, "--tensorboard", str(tmp_path / "tb")]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["strategies"] == ["ea_m"] and summary["bugs_found"]["ea_m"]["per_seed"][0] >= 1
    lineage = summary["lineage"]["ea_m"]  # EA alone: parents and untrained children survive
    assert lineage["generation"] == [1] and lineage["survivors"]["trained"] == [0.0]
    assert lineage["survivors"]["parent"][0] + lineage["survivors"]["child"][0] == 4
    assert len(lineage["stored"][0]) == len(lineage["fresh"][0]) == 2
    assert (out / "bugs_over_time.png").stat().st_size > 0 and (
        out / "population.png"
    ).stat().st_size > 0
    assert main(["replay", str(out / "ea_m" / "seed-0" / "bugs.jsonl"), "--index", "-1"]) == 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    found = events.Scalars("ea_m/seed-0/bugs_found")
    assert found[-1].step == 1 and found[-1].value == summary["bugs_found"]["ea_m"]["per_seed"][0]
    assert main(argv) == 2
    assert "already holds a campaign (ea_m/); pass --resume" in capsys.readouterr().err
    assert main(argv + ["--resume"]) == 0  # nothing left to run: ends where it ended
    assert json.loads((out / "summary.json").read_text())["bugs_found"] == summary["bugs_found"]


def test_the_train_command_offers_every_registered_algorithm():
    from jgtest.agents import ALGORITHMS
    from jgtest.cli import train

    # named in the CLI so that --help needs no JAX
    assert sorted(train.ALGORITHMS) == sorted(ALGORITHMS)


def test_a_methods_help_lists_its_options_and_the_shared_ones_only(capsys):
    for method, own, foreign in (
        ("wuji", "--population", "--eval-episodes"),
        ("reline", "--eval-episodes", "--population"),
        ("inspector", "--explorer-from", "--strategy"),
        ("random", "--envs", "--threshold-episodes"),
    ):
        with pytest.raises(SystemExit):
            main(["run", method, "--help"])
        text = capsys.readouterr().out
        assert own in text and foreign not in text
        assert all(
            flag in text
            for flag in (
                "--game",
                "--out",
                "--seed",
                "--resume",
                "--overwrite",
                "--quiet",
                "--game-arg",
            )
        )


def test_the_games_catalogue_is_up_to_date_and_counts_parkworlds_texture_bugs():
    from jgtest.cli.games import CATALOGUE, catalogue

    built = catalogue()
    assert json.loads(CATALOGUE.read_text()) == built, "run: python -m jgtest.cli.games"
    park = next(g for g in built if g["name"] == "ParkWorld-v0")
    assert park["kinds"] == ["texture"] and park["bugs"] > 100  # half of its 247 objects


def test_listing_the_games_loads_no_jax():
    listing = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from jgtest.cli import main; main(['games']); "
            "sys.exit('jax' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.returncode == 0, listing.stderr
    assert "BlockMaze-v0       actions=4   bugs=10  kinds=logical" in listing.stdout
