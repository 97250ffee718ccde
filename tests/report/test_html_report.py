"""The HTML report: sections from a run directory's files, escaping, errors, and the page in a real
browser."""

import json
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from jgtest.analysis import compare_groups
from jgtest.errors import BadFile
from jgtest.records import BugRecord, BugRecordWriter
from jgtest.report.html import SECTIONS, WUJI_PAPER_ORDER, render_report, write_report
from tests.report.browser import check_report_in_browser


def _png(path: Path) -> None:
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [0, 1])
    fig.savefig(path)


@pytest.fixture()
def wuji_like_run(tmp_path):
    """A comparison's run directory, as ``jgtest run wuji --compare`` lays it out."""
    run = tmp_path / "run"
    seed_dir = run / "wuji" / "seed-0"
    seed_dir.mkdir(parents=True)
    means = {name: float(i) for i, name in enumerate(WUJI_PAPER_ORDER)}
    stat = lambda m: {"mean": m, "sd": 0.5, "per_seed": [m, m]}
    summary = {
        "method": "wuji",
        "game": "BlockMaze-v0",
        "seeds": 2,
        "bugs_total": 10,
        "strategies": list(WUJI_PAPER_ORDER),
        "bugs_found": {k: stat(v) for k, v in means.items()},
        "state_coverage": {k: stat(10 - v) for k, v in means.items()},
    }
    summary["wuji_against_each"] = {
        m: compare_groups({k: summary[m][k]["per_seed"] for k in WUJI_PAPER_ORDER}, against="wuji")
        for m in ("bugs_found", "state_coverage")
    }
    (run / "summary.json").write_text(json.dumps(summary))
    (seed_dir / "config.json").write_text(
        json.dumps({"strategy": "wuji", "note": "<script>alert(1)</script>"})
    )
    (seed_dir / "summary.json").write_text(json.dumps({"bugs_found": 2, "state_coverage": 17}))
    with BugRecordWriter(seed_dir / "bugs.jsonl") as writer:
        for bug in (3, 5, 3):
            writer.write(
                BugRecord(
                    kind="logical",
                    game="BlockMaze-v0",
                    bug_id=bug,
                    step=4,
                    episode=0,
                    seed=0,
                    env_index=0,
                    actions=(0, 1, 2, 3, 0),
                )
            )
    for name in ("bugs_over_time", "coverage", "population"):
        _png(run / f"{name}.png")
    return run


def test_the_report_shows_the_sections_the_run_fills_and_no_empty_ones(wuji_like_run):
    page = render_report(wuji_like_run)
    empty = {"fps", "maps", "plans"}  # a Wuji comparison draws no frame times, maps or plans
    # it opens on the verdict: two seeds a strategy cannot tell the paper's orderings apart
    assert page.index('<section id="verdicts">') < page.index('<section id="broken">')
    assert "<td>not comparable at this budget</td><td>2 seed(s) a strategy" in page
    for section, _ in SECTIONS:
        assert (f'<section id="{section}">' in page) == (section not in empty)
        assert (f'href="#{section}"' in page) == (section not in empty)
    # the three plots and a view of each distinct bug, inlined
    assert page.count("data:image/png;base64,") == 3 + 2
    # what is broken first, configs collapsed
    assert page.index('<section id="broken">') < page.index('<section id="config">')
    assert "<details>" in page and '<details class="bugs" open>' in page
    assert "2 distinct bug(s) from 3 record(s)" in page and "<td>5 (not shrunk)</td>" in page
    # counted per game and kind, then grouped
    assert "<tr><th>game</th><th>logical</th><th>all</th></tr>" in page
    assert '<td>BlockMaze-v0</td><td class="num">2</td><td class="num">2</td>' in page
    assert "BlockMaze-v0 · logical: 2 distinct bugs from 3 record(s)" in page
    assert 'src="http' not in page and "<script" not in page  # self-contained, no scripts
    assert "\\u003cscript\\u003ealert(1)" in page  # config values are escaped
    # bugs by kind: 3 records of 2 distinct bugs, each with its replay command
    assert '<td>logical</td><td class="num">3</td><td class="num">2</td>' in page
    assert (
        page.count("jgtest replay ") == 3 + 2
        and f"{wuji_like_run}/wuji/seed-0/bugs.jsonl --index 2" in page
    )
    # the comparison and the paper's ordering next to ours (the same ordering here, by construction)
    assert '<td>ea_s+drl</td><td class="num">4</td>' in page
    # Wuji's seeds against each strategy's: Cliff's delta (Holm-corrected Mann-Whitney p), + where
    # Wuji is higher
    against = {
        r["b"]: r
        for r in json.loads((wuji_like_run / "summary.json").read_text())["wuji_against_each"][
            "bugs_found"
        ]
    }
    assert against["ea_s+drl"]["cliffs_delta"] == 1.0 and "Wuji vs it, bugs: Cliff" in page
    # at 2 seeds a strategy, no Mann-Whitney test can reach 0.05: the page says so
    assert "With 2 seed(s) a strategy no difference can be significant" in page
    # bugs: Wuji above; states: below
    assert f"<td>+1.00 ({against['ea_s+drl']['p_holm']:.2g})</td><td>-1.00 (" in page
    ordering = " &lt; ".join(WUJI_PAPER_ORDER)
    assert (
        f"<td>ordering by bugs_found (lowest first)</td><td>{ordering}</td><td>{ordering}</td>"
        in page
    )
    assert (
        "<td>ordering by state_coverage (lowest first)</td>"
        f"<td>{' &lt; '.join(reversed(WUJI_PAPER_ORDER))}</td>" in page
    )
    assert write_report(wuji_like_run) == wuji_like_run / "report.html"


def test_a_missing_or_empty_run_directory_is_a_clear_error(tmp_path):
    with pytest.raises(BadFile, match="no run directory"):
        render_report(tmp_path / "nowhere")
    with pytest.raises(
        BadFile, match="no finished campaign in it.*run one with `jgtest run METHOD --out"
    ):
        render_report(tmp_path)
    (tmp_path / "config.json").write_text('{"method": "wuji", "game": "CombatArena-v0", "seed": 7}')
    with pytest.raises(
        BadFile,
        match="continue it with `jgtest run wuji --game CombatArena-v0 --seed 7 --out .* --resume`",
    ):
        render_report(tmp_path)  # a campaign killed before its summary


def test_the_report_opens_in_a_browser_on_what_is_broken(wuji_like_run, tmp_path):
    # Chromium loads the page with no console errors; it opens on the distinct bugs, each with a
    # drawn view and its replay command; every image decodes. (The main job's page, every campaign's
    # sections filled: tests/test_main_job.py.)
    absent = {"fps", "maps", "plans"}
    check_report_in_browser(
        write_report(wuji_like_run),
        tmp_path / "report.png",
        absent=absent,
        min_images=5,
        verdicts=1,
    )


def test_a_reline_table_1_is_compared_agent_by_agent(tmp_path):
    run = tmp_path / "reline"
    run.mkdir()
    row = lambda mean, paper: {"mean": mean, "median": mean, "sd": 1.0, "paper": paper}
    table1 = {
        agent: {"1": row(mean, {"mean": ref, "median": ref, "sd": 0.0}), "2": row(mean / 2, None)}
        for agent, mean, ref in (("reline", 37.6, 102), ("rl-baseline", 8.8, 5), ("random", 0, 0))
    }
    summary = {"method": "reline", "game": "CartPoleBugs-v0", "eval_episodes": 1000}
    (run / "summary.json").write_text(json.dumps({**summary, "table1": table1}))
    page = render_report(run)
    start = page.index('<section id="comparison">')
    comparison = page[start : page.index("</section>", start)]
    assert "RELINE&#39;s Table 1" in comparison
    assert '<td>rl-baseline</td><td>1</td><td class="num">8.8</td>' in comparison
    assert comparison.count("<td>reline</td>") == 2 and "<td>—</td>" in comparison  # none at n=2
