"""A campaign's run directory survives faults and hostile names: a refused resume changes nothing,
torn or damaged record lines lose no bug, a damaged checkpoint falls back to the one before, the
report's commands paste safely into a shell, and a step budget is played exactly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import markupsafe
import pytest

from jgtest.cli import main
from jgtest.methods import random_testing
from jgtest.records import read_bug_records
from jgtest.report.replay import replay
from jgtest.run_dir import unlock_run_dir

ARGV = [
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
CONFIG = random_testing.RandomCampaignConfig(
    game="BlockMaze-v0", num_envs=16, steps_per_env=240, chunk_steps=60
)


class _Killed(Exception):
    pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``whole``: the campaign run to its end; ``killed``: the same campaign stopped after two of
    its four chunks."""
    root = tmp_path_factory.mktemp("runs")
    assert main(ARGV + [str(root / "whole")]) == 0

    def stop_after_two_chunks(done, total, bugs):
        if done == 2 * 16 * 60:
            raise _Killed

    (root / "killed").mkdir()
    with pytest.raises(_Killed):
        random_testing.run(CONFIG, root / "killed", progress=stop_after_two_chunks)
    # as the killed process's end would: its copies hold no lock file
    unlock_run_dir(root / "killed")
    return root


def _copy(runs: Path, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(runs / name, tmp_path / name))


def _snapshot(directory: Path) -> dict:
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _bugs(directory: Path) -> list:
    return sorted(
        (r.bug_id, r.episode, r.step, r.env_index, r.actions)
        for r in read_bug_records(directory / "bugs.jsonl")
    )


def _summary(directory: Path) -> dict:
    summary = json.loads((directory / "summary.json").read_text())
    return {
        k: summary[k]
        for k in ("bugs_found", "bugs_by_kind", "state_coverage", "episodes", "env_steps")
    }


def test_a_refused_resume_leaves_the_run_byte_for_byte(runs, tmp_path, capsys):
    killed = _copy(runs, "killed", tmp_path)
    before = _snapshot(killed)
    assert (
        main([*ARGV[:3], "CombatArena-v0", *ARGV[4:], str(killed), "--seed", "4", "--resume"]) == 2
    )
    assert (
        "holds another campaign (game 'BlockMaze-v0' there, 'CombatArena-v0' here"
        in capsys.readouterr().err
    )
    assert _snapshot(killed) == before
    (killed / "checkpoints" / "jgtest_config.json").write_text(
        json.dumps({"config_fingerprint": "0" * 64, "format": 2})
    )
    before = _snapshot(killed)  # the same config.json, checkpoints of another config
    assert main(ARGV + [str(killed), "--resume"]) == 2
    assert "written for a different config" in capsys.readouterr().err
    assert _snapshot(killed) == before


def test_torn_and_damaged_record_lines_lose_no_bug_on_resume(runs, tmp_path):
    """The last record torn mid-line, another line overwritten: the checkpoint still counts both
    bugs as found, so the resumed campaign writes both again (re-derived from the checkpoint)."""
    killed = _copy(runs, "killed", tmp_path)
    lines = (killed / "bugs.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) >= 3
    (killed / "bugs.jsonl").write_bytes(
        lines[0] + b"\x00 damaged \xff\n" + b"".join(lines[2:-1]) + lines[-1][: len(lines[-1]) // 2]
    )
    with pytest.warns(UserWarning) as caught:
        assert main(ARGV + [str(killed), "--resume"]) == 0
    messages = " | ".join(str(w.message) for w in caught)
    assert "truncating a torn last line" in messages and "bugs.jsonl:2: skipping a line" in messages
    assert messages.count("writing it again from the checkpoint") == 2
    assert _summary(killed) == _summary(runs / "whole")
    # every bug, with the very trace the whole run recorded
    assert _bugs(killed) == _bugs(runs / "whole")
    records = read_bug_records(killed / "bugs.jsonl")
    assert len(records) == _summary(killed)["bugs_found"] and all(
        replay(r).reproduced for r in records[-2:]
    )


def test_a_damaged_latest_checkpoint_resumes_from_the_one_before(runs, tmp_path):
    killed = _copy(runs, "killed", tmp_path)
    (killed / "checkpoints" / "2" / "default" / "_METADATA").write_bytes(b"\x00garbage")
    with pytest.warns(UserWarning, match="step 2"):
        assert main(ARGV + [str(killed), "--resume"]) == 0
    assert _summary(killed) == _summary(runs / "whole") and _bugs(killed) == _bugs(runs / "whole")


def test_the_reports_replay_command_is_safe_to_paste_into_a_shell(tmp_path):
    hostile = tmp_path / "x; touch INJECTED; $(touch SUBST) `touch TICK` 'q' \"dq\" dir"
    assert (
        main(
            [
                "run",
                "random",
                "--game",
                "BlockMaze-v0",
                "--envs",
                "8",
                "--steps",
                "60",
                "--quiet",
                "--out",
                str(hostile),
            ]
        )
        == 0
    )
    page = (hostile / "report.html").read_text()
    from jgtest.records import read_bug_records, replay_command

    command = replay_command(read_bug_records(hostile / "bugs.jsonl")[0], hostile / "bugs.jsonl", 0)
    assert str(markupsafe.escape(command)) in page
    before = sorted(p.name for p in tmp_path.rglob("*"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["sh", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and result.stdout.startswith("reproduced"), result.stderr[-2000:]
    # nothing created: no INJECTED, SUBST or TICK
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_budget_the_default_chunk_does_not_divide_is_played_exactly(tmp_path):
    assert (
        main(
            [
                "run",
                "random",
                "--game",
                "BlockMaze-v0",
                "--envs",
                "8",
                "--steps",
                "250",
                "--quiet",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["env_steps"] == 8 * 250
    # the default chunk: the largest divisor up to a tenth of the steps, so the bar moves 10 times
    assert json.loads((tmp_path / "r" / "config.json").read_text())["chunk_steps"] == 25
