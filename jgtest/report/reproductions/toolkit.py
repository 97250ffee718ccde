"""The toolkit page: the findings behind the games, bridges and core that no paper's page shows."""

from __future__ import annotations

from jgtest.report.reproductions.common import Page, Results
from jgtest.report.reproductions.findings import load_findings


def toolkit_page(results: Results) -> Page:
    findings = [f for f in load_findings(results) if f.paper == "toolkit"]
    modules = len({f.module for f in findings})
    intro = (
        "The calibrations, probes and runs that shaped the games, the bridges and the core (the "
        "parts every method shares), kept in `benchmarks/results/findings_*.json` rather than in "
        "the modules' docstrings; the papers' pages show those behind each method."
    )
    if findings:
        summary = (
            f"{len(findings)} measurement{'s' if len(findings) != 1 else ''} from {modules} "
            f"module{'s' if modules != 1 else ''} behind the games, bridges and core, each with "
            "the command that measures it where one was recorded."
        )
    else:
        summary = "the measurements behind the games, bridges and core; none recorded yet."
    body = intro if findings else f"{intro} No findings file holds any yet."
    title = "The toolkit: measurements behind the games, bridges and core"
    return Page("toolkit", title, summary, body)
