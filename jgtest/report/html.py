"""The HTML report (``jgtest report DIR``): one self-contained page for a run directory, one
campaign or several (a comparison, the main job), rendered with Jinja2
(``templates/report.html.j2``).

chosen: images inlined as ``data:`` URIs, no script or remote resource, because the page must open
anywhere offline.
A section of :data:`SECTIONS` appears only where the run has something for it; what is broken and
the configuration always do.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
import os
import shlex
import warnings
from pathlib import Path

from jgtest.errors import BadFile
from jgtest.files import read_json, write_text
from jgtest.records import read_bug_records
from jgtest.report.broken import broken_section
from jgtest.report.verdicts import smallest_p, verdict_table

#: ``(id, heading)`` of the page's sections, in order.
SECTIONS = (
    ("verdicts", "Against the papers: reproduced or not"),
    ("broken", "What is broken"),
    ("config", "Configuration"),
    ("bugs", "Bugs by kind"),
    ("coverage", "Coverage"),
    ("bugs-over-time", "Bugs over time"),
    ("pareto", "Pareto front"),
    ("fps", "Frame rate: render times and low-FPS points"),
    ("maps", "Bird's-eye maps"),
    ("plans", "Plan validations"),
    ("comparison", "Comparison"),
    ("papers", "The papers' numbers beside ours"),
)
#: Which section a campaign's plot belongs to, by the start of its file name.
FIGURE_SECTIONS = {
    "coverage": "coverage",
    "bugs_over_time": "bugs-over-time",
    "ooi_tested": "bugs-over-time",
    "population": "pareto",
    "render_times": "fps",
    "low_fps_points": "fps",
    "sections": "fps",
    "traces": "maps",
    "tests": "maps",
}
#: The Wuji paper's ordering of its strategies on bugs found and state coverage (§V, SPEC §5).
WUJI_PAPER_ORDER = ("random", "ea_s", "ea_m", "drl", "ea_s+drl", "wuji")
#: Bug records listed on the page at most (the kinds table counts them all).
MAX_RECORDS = 200


@dataclasses.dataclass
class Campaign:
    """One directory of the run holding a ``summary.json`` (or a plan ``report.json``)."""

    name: str
    path: Path
    summary: dict
    config: dict


def find_campaigns(run_dir: Path) -> list[Campaign]:
    """Every campaign under ``run_dir`` (itself included), parents before children."""
    found = []
    for directory in sorted(
        {p.parent for p in run_dir.rglob("summary.json")}
        | {p.parent for p in run_dir.rglob("report.json")}
    ):
        summary = _read_json(directory / "summary.json") or {}
        plans = _read_json(directory / "report.json")
        if plans and "plans" in plans:
            summary = {**summary, "plans": plans}
        config = _read_json(directory / "config.json") or {
            k: v for k, v in summary.items() if not isinstance(v, (dict, list))
        }
        name = str(directory.relative_to(run_dir)) if directory != run_dir else run_dir.name
        found.append(Campaign(name=name, path=directory, summary=summary, config=config))
    return found


def record_mismatches(campaigns: list[Campaign]) -> list[str]:
    """Where a campaign's ``bugs.jsonl`` and its ``summary.json`` disagree: the distinct bugs among
    the records against the summary's ``bugs_found`` (where it counts them as one number). A
    mismatch means the records were replaced, cut or edited after the campaign; the report says so
    above its rows."""
    notes = []
    for campaign in campaigns:
        counted = campaign.summary.get("bugs_found")
        if not isinstance(counted, int) or isinstance(counted, bool):
            continue
        path = campaign.path / "bugs.jsonl"
        with warnings.catch_warnings(record=True) as skipped:
            warnings.simplefilter("always")
            held = (
                len({r.bug_id for r in read_bug_records(path) if r.bug_id >= 0})
                if path.is_file()
                else None
            )  # a farm's crash records count apart
        damaged = f" ({len(skipped)} line(s) not bug records)" if skipped else ""
        if held is None:
            notes.append(
                f"{campaign.name}: summary.json counts {counted} bug(s), but there is no bugs.jsonl"
            )
        elif held != counted:
            notes.append(
                f"{campaign.name}: summary.json counts {counted} bug(s), but bugs.jsonl "
                f"holds records of {held}{damaged}"
            )
    return notes


def _read_json(path: Path) -> dict | None:
    """The JSON object in ``path``, or ``None`` where there is no such file.

    Raises:
      BadFile: the file is not UTF-8 JSON (:func:`jgtest.files.read_json`), or holds something other
        than an object.
    """
    if not path.exists():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        raise BadFile(
            f"{path}: holds a JSON {type(data).__name__}, not the object jgtest writes there"
        )
    return data


def _figure(path: Path, run_dir: Path) -> dict:
    uri = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    return {"uri": uri, "caption": str(path.relative_to(run_dir))}


def _figures(run_dir: Path) -> dict[str, list[dict]]:
    """The run's PNG plots by section (:data:`FIGURE_SECTIONS`); a PNG of no known name is left
    out."""
    by_section: dict[str, list[dict]] = {}
    for path in sorted(run_dir.rglob("*.png")):
        section = next(
            (s for prefix, s in FIGURE_SECTIONS.items() if path.stem.startswith(prefix)), None
        )
        if section is not None:
            by_section.setdefault(section, []).append(_figure(path, run_dir))
    return by_section


def _budget_rows(run_dir: Path) -> list[dict]:
    """``budgets.json``'s rows (the main job's: each campaign's budget beside its paper's, its
    run directory ``dir``); none without it."""
    return (_read_json(run_dir / "budgets.json") or {}).get("budgets", [])


def _budgets(run_dir: Path) -> dict:
    """:func:`_budget_rows` as a table."""
    rows = _budget_rows(run_dir)
    return {
        "header": ["campaign", "budget here", "the paper's"],
        "rows": [[r["campaign"], r["ours"], r["paper"]] for r in rows],
    }


def _bugs(run_dir: Path) -> dict:
    from jgtest.records import replay_command

    kinds: dict[tuple[str, str], set] = {}
    counts: dict[tuple[str, str], int] = {}
    records = []
    total = 0
    for path in sorted(run_dir.rglob("bugs.jsonl")):
        where = str(path.parent.relative_to(run_dir)) or "."
        for index, record in enumerate(read_bug_records(path)):
            total += 1
            key = (where, record.kind)
            counts[key] = counts.get(key, 0) + 1
            kinds.setdefault(key, set()).add(record.bug_id)
            if len(records) < MAX_RECORDS:
                records.append(
                    [
                        where,
                        record.kind,
                        record.bug_id,
                        record.episode,
                        record.step,
                        replay_command(record, path, index),
                    ]
                )
    return {
        "total": total,
        "shown": len(records),
        "kinds": {
            "header": ["campaign", "kind", "records", "distinct bugs"],
            "rows": [[w, k, counts[(w, k)], len(ids)] for (w, k), ids in sorted(kinds.items())],
        }
        if kinds
        else None,
        "records": {
            "header": ["campaign", "kind", "bug", "episode", "step", "reproduce"],
            "rows": records,
        },
    }


def _unfinished_hint(run_dir: Path) -> str:
    """What to do with a run directory holding no finished campaign: resume the one a
    ``config.json`` says was started there (stopped or killed before its summary), or run one."""
    started = sorted(run_dir.rglob("config.json"))
    if not started:
        return f"run one with `{shlex.join(['jgtest', 'run', 'METHOD', '--out', str(run_dir)])}`"
    config = _read_json(started[0]) or {}
    method = "all" if started[0].parent != run_dir else str(config.get("method", "METHOD"))
    command = [
        "jgtest",
        "run",
        method,
        *(["--game", str(config["game"])] if "game" in config and method != "all" else []),
        "--seed",
        str(config.get("seed", 0)),
        "--out",
        str(run_dir),
        "--resume",
    ]
    return (
        "a campaign was started there but has not finished (stopped or "
        f"killed?): continue it with `{shlex.join(command)}` and the options it was started with"
    )


def _scalars(summary: dict, words: tuple[str, ...]) -> list[tuple[str, object]]:
    """``(dotted key, number)`` for every number in ``summary`` whose key holds one of ``words``."""
    out = []

    def walk(value, key):
        if isinstance(value, dict):
            for k, v in value.items():
                if k not in ("paper", "curves", "per_seed"):
                    walk(v, f"{key}.{k}" if key else k)
        elif (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and any(w in key for w in words)
        ):
            out.append((key, value))

    walk(summary, "")
    return out


def wuji_versus_columns(summary: dict) -> tuple[list[str], dict[str, list[str]]]:
    """The columns of a Wuji comparison's table that test Wuji against each strategy
    (``summary["wuji_against_each"]``, :func:`jgtest.methods.wuji.run`): their headers, and per
    strategy its cells, ``"+0.42 (0.031)"`` = Cliff's delta of Wuji's seeds against its and the
    Holm-corrected Mann-Whitney p (blank for Wuji itself; no columns without the comparison)."""
    against = summary.get("wuji_against_each", {})
    measures = [m for m in ("bugs_found", "state_coverage") if m in against]
    header = [
        f"Wuji vs it, {'bugs' if m == 'bugs_found' else 'states'}: Cliff's δ (Holm p)"
        for m in measures
    ]
    cell = lambda m, name: next(
        (f"{r['cliffs_delta']:+.2f} ({r['p_holm']:.2g})" for r in against[m] if r["b"] == name), ""
    )
    return header, {
        name: [cell(m, name) for m in measures] for name in summary.get("strategies", ())
    }


def too_few_seeds_note(seeds: int, alpha: float = 0.05) -> str:
    """Why no test can reach significance with ``seeds`` seeds a group, or ``""``: the smallest
    two-sided Mann-Whitney p of two groups of ``n`` is ``2 / C(2n, n)``, all of one above all of the
    other."""
    if seeds < 1:
        return ""
    smallest = smallest_p(seeds)
    if smallest < alpha:
        return ""
    return (
        f"With {seeds} seed(s) a strategy no difference can be significant: the smallest "
        f"two-sided Mann-Whitney p is {smallest:.2g}, above {alpha:g}. Cliff's δ, the effect "
        "size, still says how far apart the seeds are (±1: every seed of one above every seed "
        "of the other)."
    )


def _metric_table(campaigns: list[Campaign], words: tuple[str, ...]) -> dict:
    rows = [[c.name, key, value] for c in campaigns for key, value in _scalars(c.summary, words)]
    return {"header": ["campaign", "measure", "value"], "rows": rows}


def _comparisons(campaigns: list[Campaign]) -> list[dict]:
    """A table per campaign that compared strategies (Wuji) or agents (PPGTA, RELINE)."""
    tables = []
    for c in campaigns:
        s = c.summary
        if isinstance(s.get("bugs_found"), dict) and isinstance(s.get("strategies"), list):
            versus_header, versus = wuji_versus_columns(s)
            rows = [
                [
                    name,
                    s["bugs_found"][name]["mean"],
                    s["bugs_found"][name]["sd"],
                    s["state_coverage"][name]["mean"],
                    s["state_coverage"][name]["sd"],
                    *versus[name],
                ]
                for name in s["strategies"]
            ]
            tables.append(
                {
                    "title": f"{c.name}: {s.get('game')} (bugs of {s.get('bugs_total')}, "
                    f"{s.get('seeds')} seeds)",
                    "note": too_few_seeds_note(int(s.get("seeds") or 0)) if versus_header else "",
                    "header": [
                        "strategy",
                        "bugs found (mean)",
                        "sd",
                        "state coverage (mean)",
                        "sd",
                        *versus_header,
                    ],
                    "rows": rows,
                }
            )
        elif isinstance(s.get("agents"), dict):
            measures = sorted(
                {
                    k
                    for a in s["agents"].values()
                    for k, v in a.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)
                }
            )
            rows = [[name] + [a.get(m, "") for m in measures] for name, a in s["agents"].items()]
            tables.append(
                {
                    "title": f"{c.name}: {s.get('game')}",
                    "header": ["agent", *measures],
                    "rows": rows,
                }
            )
        elif isinstance(s.get("table1"), dict):
            rows = [
                [
                    agent,
                    n,
                    row["mean"],
                    row["median"],
                    row["sd"],
                    "—" if row.get("paper") is None else row["paper"]["mean"],
                ]
                for agent, by_n in s["table1"].items()
                for n, row in by_n.items()
            ]
            tables.append(
                {
                    "title": f"{c.name}: {s.get('game')}, RELINE's Table 1 (episodes of "
                    f"{s.get('eval_episodes')} with at least n bugs, over the models)",
                    "header": ["agent", "n", "mean", "median", "sd", "paper's mean"],
                    "rows": rows,
                }
            )
        elif isinstance(s.get("low_fps"), dict) and len(s["low_fps"]) > 1:
            measures = sorted({k for a in s["low_fps"].values() for k in a})
            rows = [[name] + [a.get(m, "") for m in measures] for name, a in s["low_fps"].items()]
            tables.append(
                {
                    "title": f"{c.name}: {s.get('game')}, low-FPS points",
                    "header": ["agent", *measures],
                    "rows": rows,
                }
            )
    return tables


def _papers(campaigns: list[Campaign]) -> dict:
    """Every ``paper`` entry beside the numbers it sits with; Wuji's ordering beside ours."""
    rows = []

    def walk(value, key, name):
        if isinstance(value, dict):
            if "paper" in value:
                ours = {
                    k: v
                    for k, v in value.items()
                    if k != "paper" and not isinstance(v, (dict, list))
                }
                rows.append(
                    [
                        name,
                        key or "summary",
                        json.dumps(ours) if ours else "(see the comparison table)",
                        json.dumps(value["paper"]),
                    ]
                )
            for k, v in value.items():
                if k != "paper":
                    walk(v, f"{key}.{k}" if key else k, name)

    for c in campaigns:
        walk(c.summary, "", c.name)
        s = c.summary
        if isinstance(s.get("bugs_found"), dict) and set(s.get("strategies", ())) >= set(
            WUJI_PAPER_ORDER
        ):
            for measure in ("bugs_found", "state_coverage"):
                ours = sorted(WUJI_PAPER_ORDER, key=lambda name: s[measure][name]["mean"])
                rows.append(
                    [
                        c.name,
                        f"ordering by {measure} (lowest first)",
                        " < ".join(ours),
                        " < ".join(WUJI_PAPER_ORDER),
                    ]
                )
    return {"header": ["campaign", "measure", "ours", "paper"], "rows": rows}


def _plans(campaigns: list[Campaign]) -> dict:
    rows = []
    for c in campaigns:
        report = c.summary.get("plans")
        if report:
            for plan, runs in report["plans"].items():
                failures = [r["failure"] for r in runs if not r["passed"]]
                rows.append(
                    [
                        c.name,
                        Path(plan).name,
                        report.get("variant", ""),
                        f"{len(runs) - len(failures)}/{len(runs)}",
                        failures[0] if failures else "",
                    ]
                )
    return {"header": ["campaign", "plan", "variant", "passed", "first failure"], "rows": rows}


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_report(run_dir: str | os.PathLike) -> str:
    """The report page for ``run_dir`` as an HTML string. Its sections (:data:`SECTIONS`): what is
    broken (:mod:`jgtest.report.broken`); each campaign's configuration (its ``config.json``, else
    its summary's settings) after its budget beside its paper's (``budgets.json``); bugs by kind,
    each record with its ``jgtest replay`` command; coverage figures and plots; bugs over time; the
    Pareto front (Wuji's final populations); frame rate (render times, RELINE's low-FPS points);
    bird's-eye maps (PPGTA, Inspector); plan validations (Explicit Plans' ``report.json``); the
    comparison table when several strategies or agents ran; and the papers' numbers beside ours
    (every ``paper`` entry a summary carries and, for Wuji comparisons, the paper's ordering of the
    strategies). A section the run has nothing for is left out.
    """
    import jinja2

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadFile(
            f"no run directory {run_dir}"
            if not run_dir.exists()
            else f"{run_dir} is a file, not a run directory"
        )
    campaigns = find_campaigns(run_dir)
    if not campaigns:
        raise BadFile(
            f"{run_dir}: no finished campaign in it (no summary.json or plan "
            f"report.json); {_unfinished_hint(run_dir)}"
        )
    figures = _figures(run_dir)
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("jgtest.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["cell"] = _cell
    budgets = {r["dir"]: (r["ours"], r["paper"]) for r in _budget_rows(run_dir) if "dir" in r}
    content = {
        "verdicts": verdict_table(campaigns, budgets),
        "broken": broken_section(run_dir),
        "budgets": _budgets(run_dir),
        "bugs": _bugs(run_dir),
        "coverage": {
            "table": _metric_table(campaigns, ("coverage",)),
            "figures": figures.get("coverage", []),
        },
        "over_time": figures.get("bugs-over-time", []),
        "pareto": figures.get("pareto", []),
        "fps": {
            "table": _metric_table(campaigns, ("fps", "threshold", "_ms")),
            "figures": figures.get("fps", []),
        },
        "maps": figures.get("maps", []),
        "plans": _plans(campaigns),
        "comparison": _comparisons(campaigns),
        "papers": _papers(campaigns),
    }
    has = {
        "verdicts": bool(content["verdicts"]["rows"]),
        "broken": True,
        "config": True,
        "bugs": bool(content["bugs"]["kinds"]),
        "coverage": bool(content["coverage"]["table"]["rows"] or content["coverage"]["figures"]),
        "bugs-over-time": bool(content["over_time"]),
        "pareto": bool(content["pareto"]),
        "fps": bool(content["fps"]["table"]["rows"] or content["fps"]["figures"]),
        "maps": bool(content["maps"]),
        "plans": bool(content["plans"]["rows"]),
        "comparison": bool(content["comparison"]),
        "papers": bool(content["papers"]["rows"]),
    }
    return environment.get_template("report.html.j2").render(
        title=campaigns[0].summary.get("method", run_dir.name)
        if len(campaigns) == 1
        else run_dir.name,
        run_dir=str(run_dir),
        written=datetime.datetime.now().isoformat(timespec="seconds"),
        sections=SECTIONS,
        shown=[section for section, _ in SECTIONS if has[section]],
        headings=dict(SECTIONS),
        campaigns=campaigns,
        mismatches=record_mismatches(campaigns),
        **content,
    )


def write_report(run_dir: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Writes :func:`render_report`'s page to ``out`` (default ``run_dir/report.html``) and returns
    its path.

    Raises:
      BadFile: the run directory holds no finished campaign, or the page cannot be written (a
        read-only directory, a full disk); a page already there is kept whole.
    """
    out = Path(run_dir) / "report.html" if out is None else Path(out)
    write_text(
        out, render_report(run_dir)
    )  # atomic: a kill or a full disk leaves the previous page whole
    return out
