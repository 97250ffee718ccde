"""The toolkit page: the findings behind the games, bridges and core that no paper's page shows."""

from __future__ import annotations

from jgtest.report.reproductions.common import Page, Results, num, pct, provenance, section, table
from jgtest.report.reproductions.findings import load_findings

#: The env throughput results the page shows: the full run's.
THROUGHPUT = "env_throughput.json"
#: What each of the benchmark's checks holds the games to.
CHECKS = {
    "no_twin_slower_at_the_largest_batch": "no twin slower at 4,096 games than at 64",
    "pacmaze_million_steps": "PacMaze at least 1M steps/s at 4,096 games",
    "cartpole_telemetry_vs_gymnax": "CartPoleBugs with telemetry at least gymnax CartPole-v1",
    "telemetry_overhead": "telemetry at most 10% over the bare game",
}


def _check_line(name: str, check: dict) -> str:
    """One check of the throughput benchmark: what it asks, whether it holds, its figures."""
    figures = check["figures"]
    if name == "telemetry_overhead":
        worst = sorted(figures.items(), key=lambda item: -item[1])[:3]
        shown = "highest: " + ", ".join(f"{k} {pct(v)}" for k, v in worst)
    elif name == "cartpole_telemetry_vs_gymnax":
        shown = ", ".join(f"{b} games {v:.2f}×" for b, v in figures.items())
    elif name == "no_twin_slower_at_the_largest_batch":
        shown = "lowest 4,096 / 64: " + ", ".join(
            f"{g} {high / low:.2f}"
            for g, (low, high) in sorted(figures.items(), key=lambda item: item[1][1] / item[1][0])[
                :3
            ]
        )
    elif "_pixels_vs_" in name:
        shown = f"{figures:.2f}×"
    else:
        shown = num(figures)
    game, _, peer = name.partition("_pixels_vs_")
    what = CHECKS.get(name, f"{game}'s pixels per second at least those of {peer}")
    return f"- {'holds' if check['holds'] else '**fails**'}: {what} ({shown})"


def throughput_section(results: Results) -> str:
    """Every game's env steps/s with telemetry at each batch, beside the anchors, and the checks
    the games are held to (``benchmarks/env_throughput.py``); empty without its results file."""
    if THROUGHPUT not in results.names("env_throughput*.json"):
        return ""
    data = results[THROUGHPUT]
    rows = data["rows"]
    batches = sorted({r["batch"] for r in rows})
    games = sorted(
        {r["game"] for r in rows if r["consumes"] == "telemetry" and r["game"].endswith("-v0")}
    )
    anchors = sorted({r["game"] for r in rows if r["consumes"] == "all"})
    rate = {(r["game"], r["consumes"], r["batch"]): r["steps_per_s"] for r in rows}
    body = [
        [g, "telemetry" if g in games else "all"]
        + [num(rate.get((g, "telemetry", b), rate.get((g, "all", b)))) for b in batches]
        for g in games + anchors
    ]
    checks = "\n".join(_check_line(name, check) for name, check in data["checks"].items())
    return section(
        "Env steps per second",
        "Each game's steps per second under jit and vmap on the CPU cores, every output consumed "
        "(telemetry included; an anchor, a JAX game of the same kind, has none), at each number of "
        "games; Gymnasium's CartPole-v1 in a Python loop runs "
        f"{num(data['gymnasium_steps_per_s'])} steps/s on the same machine.",
        table(["game", "consumes"] + [f"{b:,} game{'s' if b > 1 else ''}" for b in batches], body),
        "The checks the games are held to:\n\n" + checks,
        provenance(
            THROUGHPUT,
            data,
            Seeds="fixed step keys and actions, drawn before the clock",
            Budget=f"{data['rounds']} rounds of about {data['seconds_per_round']} s a row, "
            "the median round",
        ),
    )


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
    body = "\n\n".join(part for part in (body, throughput_section(results)) if part)
    title = "The toolkit: measurements behind the games, bridges and core"
    return Page("toolkit", title, summary, body)
