"""PPGTA, Inspector and the random agent side by side (PPGTA §VI-A, Fig. 7–9): each agent's measures
beside the paper's, one row per agent, and the comparison's ``summary.json``."""

from __future__ import annotations

#: The agents of the comparison, in the paper's order.
AGENTS = ("ppgta", "inspector", "random")


def rows(summary: dict, agent: str, episodes: int) -> list[tuple[str, str, str]]:
    """The table's rows for one agent: ``(measure, ours, paper)``."""
    paper = summary["paper"].get(agent, {})
    at = summary["at_paper_episodes"]
    fmt_paper = lambda key, f: f(paper[key]) if key in paper else "—"
    out = [
        (
            "pathway coverage",
            f"{summary['pathway_coverage']:.1%}",
            fmt_paper("pathway_coverage_45", lambda v: f"{v:.0%} after 45"),
        ),
        (
            "OOIs tested after 18 episodes",
            str(at["ooi_tested_18"]) if episodes >= 18 else "—",
            fmt_paper("ooi_tested_18", str),
        ),
        (
            "OOIs tested after 45 episodes",
            str(at["ooi_tested_45"]) if episodes >= 45 else "—",
            fmt_paper("ooi_tested_45", str),
        ),
        (
            "OOIs tested (this run)",
            f"{summary['ooi_tested']} of {summary['ooi_total']} ({summary['ooi_success']} "
            "succeeded)",
            f"of {summary['paper']['ooi_total']}",
        ),
        (
            "test success rate (of all OOIs)",
            f"{summary['test_success_rate']:.1%}",
            fmt_paper("test_success_rate", lambda v: f"{v:.0%}"),
        ),
        ("unreachable OOIs (flood fill)", str(summary["ooi_unreachable"]), "—"),
        (
            "texture bugs found",
            f"{summary['texture_bugs_found']} of {summary['texture_bugs_total']}",
            "—",
        ),
    ]
    if "steps_on_pathway" in summary:  # a summary written before it was measured has none
        out.append(
            (
                "steps on a pathway (tests' too)",
                f"{summary['steps_on_pathway']:.0%}",
                "— (beyond the paper)",
            )
        )
    if "texture_oracle" in summary:
        o = summary["texture_oracle"]
        out.append(
            (
                "texture oracle precision / recall (tested OOIs)",
                f"{o['precision']:.2f} / {o['recall']:.2f}",
                "— (beyond the paper)",
            )
        )
    return out


def comparison_table(summaries: dict, episodes: int):
    """One row per agent, ours then the paper's in brackets (PPGTA §VI-A, Fig. 7–9)."""
    from rich.table import Table

    table = Table(
        title=f"PPGTA, Inspector and random over the same {episodes} episodes and starts "
        "(paper in brackets)"
    )
    for column in (
        "agent",
        "pathway coverage",
        "OOIs tested after 18",
        "after 45",
        "test success rate",
        "texture bugs found",
    ):
        table.add_column(column, justify="right")
    for agent, s in summaries.items():
        paper = s["paper"].get(agent, {})
        at = s["at_paper_episodes"]
        cell = lambda ours, key, f=str, paper=paper: (
            f"{ours} ({f(paper[key]) if key in paper else '—'})"
        )
        table.add_row(
            agent,
            cell(f"{s['pathway_coverage']:.1%}", "pathway_coverage_45", lambda v: f"{v:.0%}"),
            cell(at["ooi_tested_18"] if episodes >= 18 else "—", "ooi_tested_18"),
            cell(at["ooi_tested_45"] if episodes >= 45 else "—", "ooi_tested_45"),
            cell(f"{s['test_success_rate']:.1%}", "test_success_rate", lambda v: f"{v:.0%}"),
            f"{s['texture_bugs_found']} of {s['texture_bugs_total']}",
        )
    return table


def compare(summaries: dict, models) -> dict:
    """The comparison's ``summary.json``: per agent the headline numbers and curves, the paper's,
    and the models' metrics."""
    keys = (
        "pathway_coverage",
        "steps_on_pathway",
        "ooi_tested",
        "ooi_total",
        "ooi_success",
        "test_success_rate",
        "texture_bugs_found",
        "texture_oracle",
        "at_paper_episodes",
        "curves",
        "wall_s",
    )
    first = next(iter(summaries.values()))
    return {
        "game": "ParkWorld-v0",
        "episodes": first["episodes"],
        "episode_steps": first["episode_steps"],
        "agents": {a: {k: s[k] for k in keys if k in s} for a, s in summaries.items()},
        "paper": first["paper"],
        "models": {
            k: (
                v
                if isinstance(v := models.metrics[k], list)
                else {m: x for m, x in v.items() if m != "history"}
            )
            for k in ("detector", "oracle", "path", "circle", "path_closed_loop")
            if models is not None and k in models.metrics
        },
    }
