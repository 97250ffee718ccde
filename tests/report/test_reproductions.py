"""The reproduction pages (docs/reproductions) are what the committed results give, and their
figures come from those results."""

import json
import shutil
from pathlib import Path

import pytest

from jgtest.report import reproductions

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "reproductions"
RESULTS = ROOT / "benchmarks" / "results"


def test_the_committed_pages_match_the_results(tmp_path):
    written = {
        path.name: path.read_bytes() for path in reproductions.write_pages(tmp_path, RESULTS)
    }
    assert set(written) == {
        "index.md",
        "reline.md",
        "wuji.md",
        "ppgta.md",
        "explicit-plans.md",
        "toolkit.md",
    }
    stale = sorted(
        name
        for name, text in written.items()
        if not (PAGES / name).is_file() or (PAGES / name).read_bytes() != text
    )
    assert not stale, f"out of date: {stale}; run python -m jgtest.report.reproductions"
    assert reproductions.write_pages(tmp_path / "again", RESULTS) and all(
        (tmp_path / "again" / n).read_bytes() == t for n, t in written.items()
    )


def test_a_page_shows_the_figure_its_results_file_holds(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results, ignore=shutil.ignore_patterns("all_quick"))
    name = results / "reline_table1.json"
    data = json.loads(name.read_text())
    data["table1"]["reline"]["1"]["mean"] = (
        4321.0  # RELINE's CartPole episodes with at least one bug
    )
    name.write_text(json.dumps(data))

    pages = reproductions.render_pages(results)
    row = next(
        line for line in pages["reline.md"].splitlines() if line.startswith("| RELINE | 1 |")
    )
    assert row.startswith("| RELINE | 1 | 4,321 / ")
    assert "CartPole RELINE 4,321 (paper 965)" in pages["index.md"]
    assert reproductions.stale_pages(PAGES, results) == ["index.md", "reline.md"]
    assert reproductions.main(["--check", "--out", str(PAGES), "--results", str(results)]) == 1


def test_the_toolkit_page_shows_each_games_steps_and_the_checks(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results, ignore=shutil.ignore_patterns("all_quick"))
    name = results / "env_throughput.json"
    data = json.loads(name.read_text())
    row = next(
        r
        for r in data["rows"]
        if (r["game"], r["consumes"], r["batch"]) == ("PacMaze-v0", "telemetry", 4096)
    )
    row["steps_per_s"] = 1234567.0
    data["checks"]["pacmaze_million_steps"] = {"figures": 1234567.0, "holds": True}
    data["checks"]["telemetry_overhead"] = {"figures": {"PacMaze-v0 @ 64": 0.25}, "holds": False}
    name.write_text(json.dumps(data))

    page = reproductions.render_pages(results)["toolkit.md"]
    line = next(line for line in page.splitlines() if line.startswith("| PacMaze-v0 |"))
    assert line.endswith("| 1,234,567 |")
    assert "- holds: PacMaze at least 1M steps/s at 4,096 games (1,234,567)" in page
    assert (
        "- **fails**: telemetry at most 10% over the bare game (highest: PacMaze-v0 @ 64 25.0%)"
        in page
    )
    assert reproductions.stale_pages(PAGES, results) == ["toolkit.md"]


def _results_without_findings(tmp_path: Path) -> Path:
    """A copy of the committed results, without their findings files."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results, ignore=shutil.ignore_patterns("all_quick", "findings_*.json"))
    return results


def _finding(paper: str, module: str, topic: str, kind: str = "measurement", **keys) -> dict:
    entry = {
        "paper": paper,
        "module": module,
        "topic": topic,
        "kind": kind,
        "text": f"{topic}: 12.5% of 40 steps.",
    }
    return {**entry, "command": None, "results_file": None, **keys}


def test_findings_close_their_papers_page(tmp_path):
    results = _results_without_findings(tmp_path)
    before = reproductions.render_pages(results)
    assert "toolkit.md" in before and "none recorded yet" in before["index.md"]
    assert (
        "Measurements behind the code" not in before["wuji.md"]
        and "## Tried and not kept" not in before["ppgta.md"]
    )
    findings = [
        _finding(
            "wuji",
            "jgtest.envs.nsh_arena",
            "The boss's heal",
            "calibration",
            command="`python benchmarks/nsh_probes.py --seed 0`",
            results_file="benchmarks/results/nsh_probes.json",
        ),
        _finding(
            "wuji", "jgtest.envs.combat", "Combat's crash", command="python benchmarks/combat.py"
        ),
        _finding(
            "wuji",
            "jgtest.envs.combat",
            "A bigger arena",
            "tried_and_not_kept",
            results_file="arena.json",
        ),
        _finding("ppgta", "jgtest.methods.park.models", "DAgger", "tried_and_not_kept"),
        _finding("toolkit", "jgtest.rollout", "Replay's compile"),
    ]
    (results / "findings_test.json").write_text(
        json.dumps({"description": "test", "findings": findings})
    )
    pages = reproductions.render_pages(results)

    assert (
        pages["reline.md"] == before["reline.md"]
        and pages["explicit-plans.md"] == before["explicit-plans.md"]
    )
    wuji = pages["wuji.md"]
    tried, measured = (
        wuji.index("## Tried and not kept"),
        wuji.index("## Measurements behind the code"),
    )
    assert wuji.startswith(before["wuji.md"].rstrip("\n")) and tried < measured
    assert (
        wuji.index(
            "- **A bigger arena** (`jgtest.envs.combat`): A bigger arena: 12.5% of "
            "40 steps. Command not recorded; "
            "results in `benchmarks/results/arena.json`."
        )
        < measured
    )
    combat, nsh = wuji.index("### `jgtest.envs.combat`"), wuji.index("### `jgtest.envs.nsh_arena`")
    assert (
        measured
        < combat
        < wuji.index(
            "- **Combat's crash**: Combat's crash: 12.5% of 40 steps. Measured by "
            "`python benchmarks/combat.py`."
        )
        < nsh
    )
    assert (
        wuji.index(
            "- **The boss's heal** (calibration): The boss's heal: 12.5% of 40 steps. Measured by "
            "`python benchmarks/nsh_probes.py --seed 0`; results in "
            "`benchmarks/results/nsh_probes.json`."
        )
        > nsh
    )
    assert "A bigger arena" not in wuji[measured:]

    ppgta = pages["ppgta.md"]
    assert (
        ppgta.startswith(before["ppgta.md"].rstrip("\n"))
        and "Measurements behind the code" not in ppgta
    )
    assert ppgta.endswith(
        "## Tried and not kept\n\n- **DAgger** (`jgtest.methods.park.models`): "
        "DAgger: 12.5% of 40 steps. Command not recorded.\n"
    )

    toolkit = pages["toolkit.md"]
    assert (
        toolkit.splitlines()[2] == "# The toolkit: measurements behind the games, bridges and core"
    )
    assert (
        "### `jgtest.rollout`\n\n- **Replay's compile**: Replay's compile: "
        "12.5% of 40 steps. Command not recorded." in toolkit
    )
    assert (
        "- [The toolkit](toolkit.md): 1 measurement from 1 module behind the games"
        in pages["index.md"]
    )
    assert reproductions.render_pages(results) == pages  # deterministic


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": None}, "missing required key 'kind'"),
        ({"paper": "doom"}, "unknown paper 'doom'"),
        ({"kind": "guess"}, "unknown kind 'guess'"),
        ({"results": "x.json"}, "unknown key 'results'"),
    ],
)
def test_a_bad_finding_names_its_file_and_entry(tmp_path, change, message):
    results = tmp_path / "results"
    results.mkdir()
    entry = {**_finding("wuji", "jgtest.envs.combat", "Good"), **change}
    entry = {k: v for k, v in entry.items() if v is not None or k in ("command", "results_file")}
    (results / "findings_bad.json").write_text(
        json.dumps({"findings": [_finding("wuji", "jgtest.envs.combat", "Fine"), entry]})
    )
    with pytest.raises(ValueError, match=f"findings_bad.json: finding 1 \\('Good'\\): {message}"):
        reproductions.render_pages(results)
