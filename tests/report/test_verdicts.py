"""The report's verdicts against the papers: reproduced, not reproduced, or not comparable."""

from jgtest.report.verdicts import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    campaign_verdict,
)


def _table1(reline: float, baseline: float, random: float) -> dict:
    row = lambda mean, paper: {"mean": mean, "median": mean, "sd": 0.0, "paper": paper}
    paper = {"reline": 965, "rl-baseline": 905, "random": 0}
    ours = {"reline": reline, "rl-baseline": baseline, "random": random}
    return {a: {"1": row(ours[a], {"mean": paper[a]})} for a in ours}


def test_reline_is_reproduced_where_it_leads_as_the_paper_does():
    summary = {"eval_episodes": 1000, "table1": _table1(40.0, 9.0, 0.0)}
    assert campaign_verdict(summary)[2:] == (
        REPRODUCED,
        "RELINE is ahead of rl-baseline and random at n = 1, as in the paper",
    )
    behind = {"eval_episodes": 1000, "table1": _table1(5.0, 9.0, 0.0)}
    assert campaign_verdict(behind)[2] == NOT_REPRODUCED
    short = {"eval_episodes": 100, "table1": _table1(40.0, 9.0, 0.0)}
    assert campaign_verdict(short)[2:] == (
        NOT_COMPARABLE,
        "100 evaluation episodes a model; the paper counts out of 1,000",
    )


def test_the_parks_random_agent_is_judged_at_the_papers_episodes():
    curve = lambda n: {"episode": list(range(1, n + 1)), "ooi_tested": list(range(1, n + 1))}
    summary = {"method": "random", "game": "ParkWorld-v0", "ooi_tested": 5}
    five = campaign_verdict({**summary, "episodes": 5, "curves": curve(5)})
    assert five[2:] == (NOT_COMPARABLE, "5 episodes; the paper counts at 18 and 45")
    # 18 objects by episode 18 (the paper's 9 ± 3) and 45 by 45 (17 ± 5): too many
    full = campaign_verdict({**summary, "episodes": 45, "curves": curve(45)})
    assert full[2] == NOT_REPRODUCED and "18 by episode 18; 45 by episode 45" in full[3]


def test_plans_are_comparable_only_on_a_broken_level():
    run = lambda passed, failure="": {"passed": passed, "failure": failure}
    normal = {"plans": {"plans": {"a.json": [run(True)]}, "variant": "normal"}}
    assert campaign_verdict(normal)[2] == NOT_COMPARABLE
    broken = {"plans": {"plans": {"a.json": [run(False, "node 2: press switch")]}, "variant": "x"}}
    assert campaign_verdict(broken)[2] == REPRODUCED
    assert campaign_verdict({"method": "reline", "low_fps": {}}) is None  # no paper figure to judge


def test_a_wuji_run_of_some_strategies_is_judged_on_the_claims_they_make():
    stat = lambda m: {"mean": m, "sd": 0.0, "per_seed": [m] * 4}
    summary = {"game": "BlockMaze-v0", "seeds": 4, "strategies": ["ea_m"]}
    summary |= {"bugs_found": {"ea_m": stat(1.0)}, "state_coverage": {"ea_m": stat(9.0)}}
    assert campaign_verdict(summary) is None  # no claim of the paper is about EA_m alone
    three = ["random", "ea_s", "drl"]
    summary |= {
        "strategies": three,
        "bugs_found": {"random": stat(3.0), "ea_s": stat(1.0), "drl": stat(2.0)},
        "state_coverage": {s: stat(9.0) for s in three},
    }
    ours, _, verdict, why = campaign_verdict(summary)
    assert verdict == REPRODUCED and "random finds more bugs than EA_s and DRL" in ours
