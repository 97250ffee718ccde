"""The Explicit Plans page: what the article describes, where jgtest has it, and plan executions per
second."""

from __future__ import annotations

from jgtest.report.reproductions.common import Page, Results, num, pct, provenance, section, table

#: What the article describes, and where jgtest has it. The article reports no figures.
EXPLICIT_PLANS_ELEMENTS = (
    (
        "a plan: nodes (an actor or location, an optional action) and rules "
        "(preconditions, priority, action)",
        "JSON plans checked against a schema, `examples/plans/dungeon/`",
    ),
    (
        "action validation: a callback before the action, one bound to an "
        "event after it, a timeout",
        "`jgtest.plans.dungeon.CHECKS`, every action validated where the game defines it",
    ),
    (
        "Video 1: a switch moved out of reach fails the level's test on one action",
        "`jgtest plan run examples/plans/dungeon/complete_level.json --variant "
        "switch_out_of_reach`",
    ),
    (
        "plan creation: manual editing, recording a play-through, text to plan with spaCy",
        "`jgtest plan record`, `jgtest plan from-text`",
    ),
    (
        "a reinforcement-learning navigator following the plan",
        "`jgtest plan train-navigator`, `jgtest plan run PLAN --navigator learned`",
    ),
)


def explicit_plans_page(results: Results) -> Page:
    name = "plan_executions_quick.json"
    data = results[name]
    rows = [
        [
            str(r["plans"]),
            str(r["seeds"]),
            num(r["executions"]),
            num(r["compile_and_run_s"], 2),
            num(r["run_s"], 2),
            num(r["executions_per_s"], 1),
            pct(r["passed_share"]),
        ]
        for r in data["rows"]
    ]
    largest = max(data["rows"], key=lambda r: r["executions"])
    speedup = largest["executions_per_s"] / data["one_per_call_executions_per_s"]
    intro = (
        "The Explicit Plans article (Eidos Sherbrooke's Automated Game Testing "
        "team) separates a functional test's reproduction steps, "
        "an explicit plan of nodes and rules followed by an agent, from the "
        "validation of each game mechanic, bound to the game's "
        "events. It shows the method on a small dungeon level (Fig. 9) and in "
        "videos, and reports no figures: the table below maps "
        "what it describes to jgtest, on Dungeon-v0, the article's level as an on-device game."
    )
    throughput = section(
        "Plan executions per second",
        "Plans × seeds executed in one jitted call on Dungeon-v0 (the share of "
        "executions whose plan passed in the last column), "
        f"against one execution per call: {num(largest['executions'])} "
        f"executions in one call run at {num(largest['executions_per_s'], 1)} "
        f"executions/s, {speedup:.1f}× one execution per call "
        f"({num(data['one_per_call_executions_per_s'], 1)}/s).",
        table(
            [
                "plans",
                "seeds",
                "executions",
                "compile and run (s)",
                "run (s)",
                "executions/s",
                "passed",
            ],
            rows,
        ),
        provenance(name, data, Seeds="as in the table", Budget="the executions in the table"),
    )
    body = "\n\n".join(
        [
            intro,
            section(
                "The article and jgtest",
                table(["the article", "in jgtest"], [list(e) for e in EXPLICIT_PLANS_ELEMENTS]),
            ),
            throughput,
        ]
    )
    summary = (
        f"the article reports no figures; {num(largest['executions'])} plan "
        f"executions in one jitted call at {num(largest['executions_per_s'], 1)}/s, "
        f"{speedup:.1f}× one execution per call."
    )
    return Page(
        "explicit-plans",
        "Explicit Plans: functional tests as plans, with action validation",
        summary,
        body,
    )
