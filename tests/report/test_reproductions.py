"""The reproduction pages (docs/reproductions) are what the committed results give, and their figures come from those results."""

import json
import shutil
from pathlib import Path

from jgtest.report import reproductions

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "reproductions"
RESULTS = ROOT / "benchmarks" / "results"


def test_the_committed_pages_match_the_results(tmp_path):
    written = {path.name: path.read_bytes() for path in reproductions.write_pages(tmp_path, RESULTS)}
    assert set(written) == {"index.md", "reline.md", "wuji.md", "ppgta.md", "explicit-plans.md"}
    stale = sorted(name for name, text in written.items() if not (PAGES / name).is_file() or (PAGES / name).read_bytes() != text)
    assert not stale, f"out of date: {stale}; run python -m jgtest.report.reproductions"
    assert reproductions.write_pages(tmp_path / "again", RESULTS) and all((tmp_path / "again" / n).read_bytes() == t for n, t in written.items())


def test_a_page_shows_the_figure_its_results_file_holds(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results, ignore=shutil.ignore_patterns("all_quick"))
    name = results / "reline_table1.json"
    data = json.loads(name.read_text())
    data["table1"]["reline"]["1"]["mean"] = 4321.0  # RELINE's CartPole episodes with at least one bug
    name.write_text(json.dumps(data))

    pages = reproductions.render_pages(results)
    row = next(line for line in pages["reline.md"].splitlines() if line.startswith("| RELINE | 1 |"))
    assert row.startswith("| RELINE | 1 | 4,321 / ")
    assert "CartPole RELINE 4,321 (paper 965)" in pages["index.md"]
    assert reproductions.stale_pages(PAGES, results) == ["index.md", "reline.md"]
    assert reproductions.main(["--check", "--out", str(PAGES), "--results", str(results)]) == 1
