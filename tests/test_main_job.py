"""The main job (the README's first command, ``jgtest run all``): a short campaign of each method,
each in its own run directory with replayable records, ending in one report that opens in a real
headless browser (Debian's chromium through selenium) with no console errors, opening on what is
broken, and every section filled but the frame rate's (the job measures none); a screenshot is
taken. Slow: the job takes about 6 minutes alone (the report of a smaller run opens in the browser
in the default run: tests/report/test_html_report.py).

One test, on purpose: pytest-xdist would run a shared fixture once per worker."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jgtest.cli import main
from jgtest.main_job import BUDGETS, commands
from jgtest.records import read_bug_records
from jgtest.report.replay import replay
from tests.conftest import FAST_COMPILE
from tests.report.browser import check_report_in_browser

#: The report's sections the main job has nothing for, left off its page: RELINE's CartPole
#: Table 1 counts bug episodes, not frame times.
ABSENT_IN_THE_MAIN_JOB = {"fps"}


@pytest.mark.slow
def test_the_main_job_runs_each_method_and_ends_in_a_report_that_opens_in_a_browser(
    tmp_path, capsys
):
    out = tmp_path / "main"
    # as a user runs it: its own process, its programs optimised as XLA's level 1 (the other tests
    # compile at 0, tests/conftest.py)
    env = {
        **os.environ,
        "XLA_FLAGS": os.environ["XLA_FLAGS"].replace(
            FAST_COMPILE, "--xla_backend_optimization_level=1"
        ),
    }
    job = subprocess.run(
        [sys.executable, "-m", "jgtest.cli", "run", "all", "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    printed = job.stdout
    report = out / "report.html"
    # the job ends by saying where its report is
    assert printed.splitlines()[-1] == f"report: {report.resolve()}"
    dirs = {
        argv[1] if argv[0] == "run" else "plan": Path(argv[argv.index("--out") + 1])
        for _, argv in commands(out)
    }
    # Wuji: the six strategies compared, their bugs replay
    wuji = json.loads((dirs["wuji"] / "summary.json").read_text())
    assert (
        wuji["strategies"] == ["random", "ea_s", "ea_m", "drl", "ea_s+drl", "wuji"]
        and wuji["bugs_found"]["wuji"]["mean"] >= 1
    )
    assert replay(read_bug_records(dirs["wuji"] / "wuji" / "seed-0" / "bugs.jsonl")[-1]).reproduced
    # Wuji's seeds against each strategy's (Mann-Whitney, Holm, Cliff's delta)
    for rows in wuji["wuji_against_each"].values():
        assert [(r["a"], r["b"], r["n_a"]) for r in rows] == [
            ("wuji", s, 2) for s in wuji["strategies"][:-1]
        ] and all(0 <= r["p_holm"] <= 1 for r in rows)
    # RELINE's Table 1 on CartPole, as the paper ran it: RELINE finds a bug in far more of its
    # episodes than random does
    table = json.loads((dirs["reline"] / "table1.json").read_text())["table1"]
    assert (
        set(table) == {"reline", "rl-baseline", "random"}
        and table["reline"]["1"]["paper"]["mean"] == 965
    )
    assert table["reline"]["1"]["mean"] > 10 * max(table["random"]["1"]["mean"], 1)
    records = read_bug_records(dirs["reline"] / "bugs.jsonl")
    # replayed as the job played them: CartPole's pole amplifies the last bit XLA's level changes
    for index in (0, len(records) - 1):
        again = subprocess.run(
            [
                sys.executable,
                "-m",
                "jgtest.cli",
                "replay",
                str(dirs["reline"] / "bugs.jsonl"),
                "--index",
                str(index),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert again.returncode == 0, again.stdout + again.stderr[-2000:]
    # the park's random agent: the paper's numbers printed beside ours, texture records that replay
    assert "pathway coverage" in printed and "paper (PPGTA §VI)" in printed
    park = json.loads((dirs["random"] / "summary.json").read_text())
    assert park["method"] == "random" and park["episodes"] == 5 and park["ooi_tested"] > 0
    records = read_bug_records(dirs["random"] / "bugs.jsonl")
    assert records and all(r.kind == "texture" for r in records)
    assert main(["replay", str(dirs["random"] / "bugs.jsonl"), "--index", "0"]) == 0
    assert "reproduced" in capsys.readouterr().out
    # every record with a trace is shrunk, and the report shows the lengths
    from jgtest.report.shrink import can_shrink

    shrinkable = [
        r for path in out.rglob("bugs.jsonl") for r in read_bug_records(path) if can_shrink(r)
    ]
    assert shrinkable and all(r.trace_min for r in shrinkable)
    assert " → " in report.read_text() and "(not shrunk)" not in report.read_text()
    # the plans: every example passes on the normal level
    plans = json.loads((dirs["plan"] / "report.json").read_text())["plans"]
    assert len(plans) == 3 and all(run["passed"] for runs in plans.values() for run in runs)
    check_report_in_browser(
        report,
        tmp_path / "report.png",
        absent=ABSENT_IN_THE_MAIN_JOB,
        budgets=len(BUDGETS),
        min_images=7,
        verdicts=len(BUDGETS),  # a verdict for each campaign
    )


def test_a_resumed_main_job_continues_the_campaigns_it_started(tmp_path):
    """``jgtest run all --resume``: a campaign that wrote its config continues (``--resume``); the
    others start (``--overwrite``)."""
    (tmp_path / "reline").mkdir()
    (tmp_path / "reline" / "config.json").write_text("{}")
    flags = {
        argv[1] if argv[0] == "run" else "plan": argv for _, argv in commands(tmp_path, resume=True)
    }
    assert "--resume" in flags["reline"] and "--overwrite" not in flags["reline"]
    assert all(
        "--overwrite" in flags[name] and "--resume" not in flags[name]
        for name in ("wuji", "random")
    )
    assert all("--resume" not in argv for _, argv in commands(tmp_path))
