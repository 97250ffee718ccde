"""A run directory loses nothing when two processes, a signal, a kill or a full disk meet it: one
writer at a time (the directory's lock), atomic writes, a clean stop on SIGINT and SIGTERM, and a
``verify`` that a stale or edited record cannot fool."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jgtest.cli import main
from jgtest.records import read_bug_records

CAMPAIGN = ["run", "random", "--game", "BlockMaze-v0", "--envs", "8", "--quiet"]
#: A campaign of 20 chunks, each checkpointed: long enough to be met while it runs.
LONG = [*CAMPAIGN, "--steps", "400", "--chunk", "20"]
#: What two runs of one campaign write differently: the clock.
TIMES = ("wall_s", "steps_per_s", "first_found_s")


def _jgtest(argv: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "jgtest.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _wait_for(path: Path, timeout_s: float = 240.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _written(directory: Path) -> dict:
    """What a campaign wrote, its times aside: every file's name (checkpoints' too), the config's
    bytes, the records and the summary."""
    summary = json.loads((directory / "summary.json").read_text())
    return {
        "files": sorted(
            str(p.relative_to(directory))
            for p in directory.rglob("*")
            if "checkpoints" not in p.parts or p.parent.name == "checkpoints"
        ),
        "config": (directory / "config.json").read_bytes(),
        "records": [
            dataclasses.replace(r, wall_s=0.0) for r in read_bug_records(directory / "bugs.jsonl")
        ],
        "summary": {k: v for k, v in summary.items() if k not in TIMES},
    }


def test_one_writer_per_run_directory(tmp_path, capsys):
    """Two campaigns started at once into one directory, then an --overwrite into the one running
    (held still with SIGSTOP, so that it is running whatever the machine's load): one runs, each
    other is refused, and the directory holds what the winner alone writes."""
    shared = tmp_path / "shared"
    first, second = (
        _jgtest([*LONG, "--seed", "0", "--out", str(shared)]),
        _jgtest([*LONG, "--seed", "1", "--out", str(shared)]),
    )
    _wait_for(shared / "config.json")
    winner_pid = int((shared / ".jgtest.lock").read_text())
    winner, loser = (first, second) if first.pid == winner_pid else (second, first)
    os.kill(winner_pid, signal.SIGSTOP)
    try:
        assert loser.wait(timeout=300) == 2
        refused = loser.communicate()[1].strip().splitlines()
        assert refused == [
            f"error: --out '{shared}' is in use by another jgtest process (pid {winner_pid}); wait "
            "for it to end, or choose another directory"
        ]
        # into the running campaign
        assert main([*LONG, "--seed", "2", "--out", str(shared), "--overwrite"]) == 2
        assert capsys.readouterr().err.strip() == refused[0]
    finally:
        os.kill(winner_pid, signal.SIGCONT)
    assert winner.wait(timeout=300) == 0, winner.communicate()[1]
    assert not (shared / ".jgtest.lock").exists()  # released when the winner ended
    alone = tmp_path / "alone"
    assert main([*LONG, "--seed", str(0 if winner is first else 1), "--out", str(alone)]) == 0
    assert _written(shared) == _written(alone)


def test_a_sigint_stops_at_a_checkpoint_and_resume_ends_as_an_uninterrupted_run(tmp_path):
    stopped, whole = tmp_path / "stopped", tmp_path / "whole"
    campaign = _jgtest([*LONG, "--out", str(stopped)])
    _wait_for(stopped / "checkpoints" / "3")
    campaign.send_signal(signal.SIGINT)
    code = campaign.wait(timeout=300)
    out, err = campaign.communicate()
    assert code == 130
    # XLA's own log lines aside
    lines = [line for line in err.strip().splitlines() if not re.match(r"[IWE]\d{4} ", line)]
    assert (
        len(lines) == 1
        and lines[0].startswith("interrupted at step ")
        and "Traceback" not in err + out
    )
    assert lines[0].endswith(f"continue with: jgtest {' '.join(LONG)} --out {stopped} --resume")
    step = int(lines[0].split()[3].rstrip(";"))
    # stopped early, its step on disk
    assert step < 20 and (stopped / "checkpoints" / str(step)).is_dir()
    assert main([*LONG, "--out", str(stopped), "--resume"]) == 0
    assert main([*LONG, "--out", str(whole)]) == 0
    assert _written(stopped)["records"] == _written(whole)["records"]
    assert _written(stopped)["summary"] == _written(whole)["summary"]


def test_a_sigterm_stops_at_the_next_checkpoint_with_status_143(tmp_path, monkeypatch, capsys):
    from jgtest.checkpoint import Checkpointer

    save = Checkpointer.save

    def save_then_terminate(self, step, state):
        save(self, step, state)
        if step == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-campaign: noted, acted on at step 3

    monkeypatch.setattr(Checkpointer, "save", save_then_terminate)
    handler = signal.getsignal(signal.SIGTERM)
    argv = [*CAMPAIGN, "--steps", "200", "--chunk", "20", "--out", str(tmp_path / "r")]
    assert main(argv) == 143
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"interrupted at step 3; continue with: jgtest {' '.join(argv)} --resume"]
    assert signal.getsignal(signal.SIGTERM) is handler  # the handlers are put back
    monkeypatch.undo()
    assert main([*argv, "--resume"]) == 0
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["env_steps"] == 8 * 200


def test_a_report_that_cannot_be_written_leaves_the_previous_one_whole(tmp_path):
    run = tmp_path / "run"
    assert main([*CAMPAIGN, "--steps", "100", "--out", str(run)]) == 0
    before = (run / "report.html").read_bytes()
    assert before.rstrip().endswith(b"</html>") and len(before) > 20 * 1024

    # files of 20 KiB at most
    small_files = (
        f"ulimit -f 20 && exec {shlex.quote(sys.executable)} -m jgtest.cli report "
        f"{shlex.quote(str(run))}"
    )
    report = subprocess.run(
        ["bash", "-c", small_files], capture_output=True, text=True, timeout=300
    )
    assert report.returncode == 2, report.stderr
    # XLA's own log lines (glog's "W1202 02:19:27.41 ..." prefix) aside, one line
    ours = [line for line in report.stderr.splitlines() if not re.match(r"[IWEF]\d{4} ", line)]
    assert len(ours) == 1 and "report.html: cannot write it (File too large; it needs " in ours[0]
    assert "the previous file is kept" in report.stderr
    assert (run / "report.html").read_bytes() == before
    # no temporary file left
    assert sorted(p.name for p in run.iterdir() if p.name.startswith(".")) == []


def test_a_full_disk_names_the_file_and_the_bytes(tmp_path, monkeypatch):
    from jgtest.errors import BadFile
    from jgtest.files import write_text

    target = tmp_path / "summary.json"
    target.write_text("{}")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)  # where a full disk shows once the bytes are buffered
    with pytest.raises(
        BadFile,
        match=r"summary.json: cannot write it \(No space left on device; it needs 5 bytes\); the "
        r"previous file is kept",
    ):
        write_text(target, "[1,2]")
    monkeypatch.undo()
    assert target.read_text() == "{}" and [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_read_only_run_directory_is_one_line(tmp_path, monkeypatch, capsys):
    """``--resume`` and ``jgtest report`` on a directory that cannot be written (a read-only file
    system)."""
    run = tmp_path / "run"
    assert main([*CAMPAIGN, "--steps", "100", "--out", str(run)]) == 0
    capsys.readouterr()
    opened = os.open

    def read_only(path, flags, *args, **kwargs):
        if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR) and str(run) in str(path):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return opened(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    assert main([*CAMPAIGN, "--steps", "100", "--out", str(run), "--resume"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: --out directory '{run}' cannot be written (Read-only file system); "
        "choose a writable directory"
    )
    assert main(["report", str(run)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: {run}/report.html: cannot write it (Read-only file system); "
        "the previous file is kept"
    )


def test_verify_falls_back_to_the_full_trace_and_refuses_a_forged_kind(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "400")  # the table's cells on one line each
    run = tmp_path / "run"
    assert main([*CAMPAIGN, "--steps", "100", "--out", str(run)]) == 0
    record = read_bug_records(run / "bugs.jsonl")[0]
    # a shrunk trace that no longer fires
    stale = dataclasses.replace(record, trace_min=record.actions[:1])
    (tmp_path / "stale.jsonl").write_text(stale.to_json() + "\n")
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "stale.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "still present (full trace)" in out and "1 still present, 0 changed, 0 fixed" in out
    forged = dataclasses.replace(record, kind="crash")
    (tmp_path / "forged.jsonl").write_text(forged.to_json() + "\n")
    for command in (
        ["verify", str(tmp_path / "forged.jsonl")],
        ["replay", str(tmp_path / "forged.jsonl")],
    ):
        assert main(command) == 2
        assert (
            f"says bug {record.bug_id} is a crash bug, but BlockMaze-v0's bug {record.bug_id} is a "
            "logical bug" in capsys.readouterr().err
        )


def test_verify_of_a_million_actions_stays_small(tmp_path):
    """A damaged record of 10**6 actions is refused by its game's episode length, within 500 MB."""
    record = {
        "kind": "logical",
        "game": "BlockMaze-v0",
        "bug_id": 3,
        "step": 10**6 - 1,
        "episode": 0,
        "seed": 0,
        "env_index": 0,
        "actions": [1] * 10**6,
    }
    (tmp_path / "long.jsonl").write_text(json.dumps(record) + "\n")
    measured = (  # in a process of its own, whose only child is the command: its peak memory alone
        "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], "
        "capture_output=True, text=True);"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "print(done.stderr)"
    )
    verify = subprocess.run(
        [
            sys.executable,
            "-c",
            measured,
            sys.executable,
            "-m",
            "jgtest.cli",
            "verify",
            str(tmp_path / "long.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    code, peak_kb = map(int, verify.stdout.split("\n")[0].split())
    assert (
        code == 2
        and "holds 1,000,000 actions, but an episode of BlockMaze-v0 ends by step" in verify.stdout
    )
    assert peak_kb / 1024 < 500, peak_kb / 1024


def test_a_plan_of_a_hundred_thousand_nodes_is_refused_at_once(tmp_path):
    from jgtest.errors import PlanError
    from jgtest.plans.model import MAX_PLAN_NODES, parse_plan

    huge = {"game": "Dungeon-v0", "nodes": [{"actor": "switch", "action": "interact"}] * 10**5}
    # the game's plan vocabulary imported before the clock starts
    parse_plan({**huge, "nodes": huge["nodes"][:1]})
    start = time.perf_counter()
    with pytest.raises(PlanError, match="nodes: 100,000 nodes, more than a plan may hold"):
        parse_plan(huge)
    assert time.perf_counter() - start < 0.1
    start = time.perf_counter()
    plan = parse_plan({**huge, "nodes": huge["nodes"][:MAX_PLAN_NODES]})
    # the largest plan parses at once
    assert len(plan.nodes) == MAX_PLAN_NODES and time.perf_counter() - start < 2.0


def test_verify_of_a_campaign_that_found_nothing_exits_0(tmp_path, capsys):
    (tmp_path / "bugs.jsonl").write_text("")
    assert main(["verify", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path}: no bug records; nothing to verify"


def test_the_report_says_when_the_records_and_the_summary_disagree(tmp_path):
    from jgtest.report.html import render_report

    run = tmp_path / "run"
    assert main([*CAMPAIGN, "--steps", "100", "--out", str(run)]) == 0
    found = json.loads((run / "summary.json").read_text())["bugs_found"]
    assert found > 0 and "The records and the summary disagree" not in render_report(run)
    # replaced by another file
    (run / "bugs.jsonl").write_text('<?xml version="1.0"?>\n<testsuites/>\n')
    with pytest.warns(UserWarning):
        page = render_report(run)
    assert (
        f"run: summary.json counts {found} bug(s), but bugs.jsonl holds records of 0 (2 line(s) "
        "not bug records)" in page
    )


def test_a_signal_after_a_loops_last_save_stops_when_the_loop_closes(tmp_path):
    """Held back for a save that never comes, the stop comes when the checkpointing loop closes; a
    checkpoint written once (``loop=False``) holds nothing back."""
    import numpy as np

    from jgtest.checkpoint import Checkpointer
    from jgtest.interrupts import Interrupted, stop_at_checkpoints

    with stop_at_checkpoints():
        with pytest.raises(Interrupted) as stopped:
            with Checkpointer(tmp_path / "loop", "f" * 64) as ckpt:
                ckpt.save(1, {"w": np.zeros(3)})
                os.kill(os.getpid(), signal.SIGTERM)  # after the last save: noted
                time.sleep(0.01)
        assert (
            stopped.value.signum == signal.SIGTERM
            and stopped.value.step is None
            and stopped.value.exit_status == 143
        )
        with pytest.raises(Interrupted):
            with Checkpointer(tmp_path / "once", "f" * 64, loop=False):
                os.kill(os.getpid(), signal.SIGINT)  # at once
                time.sleep(1.0)
