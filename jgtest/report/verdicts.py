"""The report's opening table: each campaign's headline figure beside its paper's, and whether the
paper's result is reproduced, not reproduced, or not comparable at this budget, with the reason
(:func:`verdict_table`).

The claims are the reproduction pages' own (:mod:`jgtest.report.reproductions`): Wuji's orderings
(:data:`~jgtest.report.reproductions.wuji.WUJI_MAZE_CLAIMS`, ``WUJI_COMBAT_CLAIMS``,
:func:`~jgtest.report.reproductions.wuji.claim_rows`), RELINE's lead in Table 1
(:func:`~jgtest.report.reproductions.reline.leads_at`), the park's probe bands and PPGTA's ordering.

* chosen: a Wuji comparison whose seeds are too few for any test to reach significance is not
  comparable, because its means then cannot tell the orderings the paper claims apart;
* chosen: RELINE's Table 1 counts episodes out of the paper's 1,000 (§4.1), so another number of
  evaluation episodes is not comparable;
* chosen: the park's figures are read at 18 and 45 episodes (PPGTA §VI-A), so a shorter campaign is
  not comparable.
"""

from __future__ import annotations

import math

from jgtest.report.reproductions.reline import leads_at
from jgtest.report.reproductions.wuji import WUJI_COMBAT_CLAIMS, WUJI_MAZE_CLAIMS, claim_rows

REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE = (
    "reproduced",
    "not reproduced",
    "not comparable at this budget",
)
#: RELINE Table 1's evaluation episodes per model (§4.1).
RELINE_EPISODES = 1000
#: The random agent's objects tested on the park, the paper's (PPGTA §VI-A) and the band the park
#: was calibrated to (``benchmarks/park_probes.py``): (episodes, paper, tolerance).
PARK_RANDOM = ((18, 9, 3), (45, 17, 5))
#: The Mann-Whitney significance level of the comparisons.
ALPHA = 0.05


def smallest_p(seeds: int) -> float:
    """The smallest two-sided Mann-Whitney p of two groups of ``seeds``: ``2 / C(2n, n)``."""
    return 2 / math.comb(2 * seeds, seeds)


def wuji_verdict(summary: dict) -> tuple[str, str, str, str] | None:
    """Wuji's claims on the comparison's game against its means (the claims whose strategies all
    ran; ``None`` when none did)."""
    ran = set(summary["strategies"])
    claims = [
        claim
        for claim in (
            WUJI_MAZE_CLAIMS if summary.get("game") == "BlockMaze-v0" else WUJI_COMBAT_CLAIMS
        )
        if set(claim[3]) | set(claim[4]) <= ran
    ]
    if not claims:
        return None
    rows = claim_rows(summary, claims)
    held = [row[0] for row in rows if row[3] == "yes"]
    ours = f"{len(held)} of the {len(rows)} claims hold on the means" + (
        f" ({'; '.join(held)})" if held else ""
    )
    theirs = "; ".join(f"{claim} ({where})" for claim, where, *_ in claims)
    seeds = int(summary.get("seeds") or 0)
    if seeds < 1 or smallest_p(seeds) >= ALPHA:
        why = (
            f"{seeds} seed(s) a strategy: the smallest Mann-Whitney p is "
            f"{smallest_p(max(seeds, 1)):.2g}, so no ordering can be told apart"
        )
        return ours, theirs, NOT_COMPARABLE, why
    failed = [row[0] for row in rows if row[3] != "yes"]
    if failed:
        return ours, theirs, NOT_REPRODUCED, "does not hold: " + "; ".join(failed)
    return ours, theirs, REPRODUCED, "every claim holds on the means"


def reline_verdict(summary: dict) -> tuple[str, str, str, str]:
    """RELINE ahead of rl-baseline where the paper's Table 1 has it ahead, and of random."""
    table = summary["table1"]
    first = min(table["reline"], key=int)
    ours = f"episodes with at least {first} bug(s), means: " + ", ".join(
        f"{agent} {table[agent][first]['mean']:.1f}" for agent in table
    )
    papers = {a: table[a][first].get("paper") for a in table}
    theirs = ", ".join(f"{a} {p['mean']:g}" for a, p in papers.items() if p is not None) or "—"
    episodes = int(summary.get("eval_episodes") or 0)
    if episodes != RELINE_EPISODES:
        why = (
            f"{episodes:,} evaluation episodes a model; the paper counts out of {RELINE_EPISODES:,}"
        )
        return ours, theirs, NOT_COMPARABLE, why
    with_paper = {a: {n: e for n, e in by_n.items() if e.get("paper")} for a, by_n in table.items()}
    paper_leads = set(leads_at(with_paper, lambda e: e["paper"]["mean"]))
    ours_leads = set(leads_at(table, lambda e: e["mean"]))
    above_random = {
        n for n in table["reline"] if table["reline"][n]["mean"] > table["random"][n]["mean"]
    }
    missing = sorted(paper_leads - (ours_leads & above_random), key=int)
    if missing:
        return ours, theirs, NOT_REPRODUCED, f"RELINE is not ahead at n = {', '.join(missing)}"
    at = ", ".join(sorted(paper_leads, key=int))
    why = f"RELINE is ahead of rl-baseline and random at n = {at}, as in the paper"
    return ours, theirs, REPRODUCED, why


def park_random_verdict(summary: dict) -> tuple[str, str, str, str]:
    """The random agent's objects tested on the park against the paper's at 18 and 45 episodes."""
    episodes = int(summary.get("episodes") or 0)
    ours = f"{summary.get('ooi_tested', 0)} objects tested in {episodes} episodes"
    theirs = ", ".join(f"{paper} by episode {at}" for at, paper, _ in PARK_RANDOM)
    curves = summary.get("curves", {})
    reached = [(at, paper, tol) for at, paper, tol in PARK_RANDOM if at <= episodes]
    if not reached or "ooi_tested" not in curves:
        counted = " and ".join(str(at) for at, *_ in PARK_RANDOM)
        return ours, theirs, NOT_COMPARABLE, f"{episodes} episodes; the paper counts at {counted}"
    tested = dict(zip(curves["episode"], curves["ooi_tested"]))
    off = [
        f"{tested[at]} by episode {at}"
        for at, paper, tol in reached
        if abs(tested[at] - paper) > tol
    ]
    if off:
        return ours, theirs, NOT_REPRODUCED, "outside the paper's ± band: " + "; ".join(off)
    return ours, theirs, REPRODUCED, "within the band the park was calibrated to"


def plans_verdict(report: dict) -> tuple[str, str, str, str]:
    """The plan agent failing a broken level's test and naming the action and state that failed
    (a plan suite's ``report.json``)."""
    runs = [run for by_plan in report["plans"].values() for run in by_plan]
    passed = sum(bool(run["passed"]) for run in runs)
    variant = report.get("variant", "normal")
    ours = f"{passed} of {len(runs)} plan runs pass on the {variant} level"
    theirs = "the plan agent fails a broken level's test and names the action and state"
    if variant == "normal":
        return (
            ours,
            theirs,
            NOT_COMPARABLE,
            "only the normal level ran; the claim is on a broken one",
        )
    named = [run for run in runs if not run["passed"] and run.get("failure")]
    if named:
        return ours, theirs, REPRODUCED, f"{len(named)} failing run(s) name what failed"
    return ours, theirs, NOT_REPRODUCED, "no run on the broken level failed with a named check"


def campaign_verdict(summary: dict) -> tuple[str, str, str, str] | None:
    """``(ours, the paper's, verdict, why)`` for a campaign's summary, or ``None`` where no paper
    claims a figure for it."""
    if isinstance(summary.get("strategies"), list) and isinstance(summary.get("bugs_found"), dict):
        return wuji_verdict(summary)
    if isinstance(summary.get("table1"), dict):
        return reline_verdict(summary)
    if summary.get("method") == "random" and summary.get("game") == "ParkWorld-v0":
        return park_random_verdict(summary)
    if isinstance(summary.get("plans"), dict) and "plans" in summary["plans"]:
        return plans_verdict(summary["plans"])
    return None


def verdict_table(campaigns, budgets: dict[str, tuple[str, str]]) -> dict:
    """A row per campaign a paper has a figure for: its budget beside its paper's (``budgets``,
    by campaign name; ``—`` without), the headline figures and the verdict with its reason."""
    rows = []
    for campaign in campaigns:
        judged = campaign_verdict(campaign.summary)
        if judged is None:
            continue
        ours, theirs, verdict, why = judged
        budget, paper_budget = budgets.get(campaign.name, ("—", "—"))
        rows.append([campaign.name, budget, paper_budget, ours, theirs, verdict, why])
    return {
        "header": [
            "campaign",
            "budget",
            "the paper's budget",
            "ours",
            "the paper's",
            "verdict",
            "why",
        ],
        "rows": rows,
    }
