"""The Wuji page (Zheng et al., ASE 2019): the paper's claims (§V-B, §V-C) against our comparisons
on NSHArena, CombatArena, Block Maze and ViZDoom."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from jgtest.report.reproductions.common import (
    Page,
    Results,
    bold_best,
    label,
    listing,
    named,
    num,
    provenance,
    pvalue,
    section,
    signed,
    steps_label,
    table,
)

#: The claims of Wuji's evaluation (§V-B bugs, Fig. 4-5; §V-C states, Table V) as (claim, section,
#: metric, strategies said to be ahead, strategies said to be behind). Its figures are plots and
#: tables whose orderings the text states; a claim holds on ours when every strategy said to be
#: ahead has a higher mean.
WUJI_COMBAT_CLAIMS = (
    (
        "random finds the fewest bugs on the combat games",
        "§V-B",
        "bugs_found",
        ("ea_s", "ea_m", "drl", "ea_s+drl", "wuji"),
        ("random",),
    ),
    ("EA_m finds more bugs than EA_s", "§V-B", "bugs_found", ("ea_m",), ("ea_s",)),
    (
        "the strategies that train with DRL find more bugs than those that do not",
        "§V-B",
        "bugs_found",
        ("drl", "ea_s+drl", "wuji"),
        ("random", "ea_s", "ea_m"),
    ),
    (
        "Wuji finds the most bugs",
        "§V-B, Table III",
        "bugs_found",
        ("wuji",),
        ("random", "ea_s", "ea_m", "drl", "ea_s+drl"),
    ),
    (
        "Wuji covers the most states",
        "§V-C, Table V",
        "state_coverage",
        ("wuji",),
        ("random", "ea_s", "ea_m", "drl", "ea_s+drl"),
    ),
    (
        "random covers the fewest states on the large games",
        "§V-C",
        "state_coverage",
        ("ea_s", "ea_m", "drl", "ea_s+drl", "wuji"),
        ("random",),
    ),
)
WUJI_MAZE_CLAIMS = (
    (
        "on the small maze random finds more bugs than EA_s and DRL",
        "§V-B",
        "bugs_found",
        ("random",),
        ("ea_s", "drl"),
    ),
    (
        "Wuji covers the most states in each game",
        "§V-C, Table V",
        "state_coverage",
        ("wuji",),
        ("random", "ea_s", "ea_m", "drl", "ea_s+drl"),
    ),
)


def claim_rows(
    summary: dict, claims: Sequence[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]]
) -> list[list[str]]:
    """Each claim against our means: the strategies said to be ahead, those said to be behind, and
    whether it holds."""
    rows = []
    for claim, where, metric, ahead, behind in claims:
        digits = 1 if metric == "bugs_found" else 0
        means = {s: summary[metric][s]["mean"] for s in ahead + behind}
        low, high = min(means[s] for s in ahead), max(means[s] for s in behind)
        holds = "yes" if low > high else ("tied" if low == high else "no")
        ours = " against ".join(
            named({s: num(means[s], digits) for s in group}) for group in (ahead, behind)
        )
        rows.append([claim, where, f"{'bugs' if digits else 'states'}: {ours}", holds])
    return rows


def claims_section(title: str, summary: dict, claims: Sequence, intro: str) -> str:
    """The paper's claims on one game, our means and whether each holds, with a sentence counting
    those that do."""
    rows = claim_rows(summary, claims)
    held = [r[0] for r in rows if r[3] == "yes"]
    tally = (
        f"{len(held)} of the {len(rows)} claims {'holds' if len(held) == 1 else 'hold'} on ours"
        + (f" ({listing(held, '; ')})." if held else ".")
    )
    return section(
        title,
        f"{intro} {tally}",
        table(
            [
                "the paper",
                "section",
                f"ours, {summary['game']}, means of {summary['seeds']} seeds",
                "holds",
            ],
            rows,
        ),
    )


def progress_table(summary: dict, checkpoints: str, column: Callable[[str], str]) -> str:
    """Bugs and states per strategy at each checkpoint of the budget (``by_steps`` or ``by_time``),
    the best of each column in bold."""
    marks, strategies = sorted(summary[checkpoints], key=float), summary["strategies"]
    columns = [
        bold_best(
            [summary[checkpoints][m][s][metric]["mean"] for s in strategies],
            lambda v, d=digits: num(v, d),
        )
        for metric, digits in (("bugs_found", 1), ("state_coverage", 0))
        for m in marks
    ]
    columns.append(
        [num(summary[checkpoints][marks[-1]][s]["bugs_found"]["sd"], 1) for s in strategies]
    )
    columns.append(bold_best([summary["cells_covered"][s]["mean"] for s in strategies], num))
    columns.append([num(summary["env_steps"][s]["mean"]) for s in strategies])
    header = [
        "strategy",
        *[f"bugs, {column(m)}" for m in marks],
        *[f"states, {column(m)}" for m in marks],
        f"sd of bugs, {column(marks[-1])}",
        "cells covered",
        "env steps",
    ]
    return table(header, [[label(s), *[c[i] for c in columns]] for i, s in enumerate(strategies)])


def against_table(tests: dict) -> str:
    """Wuji's seeds against each other strategy's: Cliff's delta and Holm-corrected Mann-Whitney p,
    on bugs and on states."""
    rows = [
        [
            label(b["b"]),
            signed(b["cliffs_delta"]),
            pvalue(b["p_holm"]),
            signed(s["cliffs_delta"]),
            pvalue(s["p_holm"]),
        ]
        for b, s in zip(tests["bugs_found"], tests["state_coverage"])
    ]
    return table(
        ["Wuji against", "bugs: Cliff's δ", "bugs: Holm p", "states: Cliff's δ", "states: Holm p"],
        rows,
    )


def comparison_section(
    title: str,
    text: str,
    data: dict,
    name: str,
    *tables: str,
    checkpoints: str = "by_steps",
    column: Callable[[str], str] = steps_label,
) -> str:
    """A comparison's section: ``text``, its :func:`progress_table`, the ``tables`` given, Wuji's
    seeds against each other strategy's (:func:`against_table`) and the results file ``name``."""
    return section(
        title,
        text,
        progress_table(data, checkpoints, column),
        *tables,
        against_table(data["wuji_against_each"]),
        provenance(name, data),
    )


def mean_sd(values: Sequence[float], digits: int) -> str:
    """The mean of per-seed values and their (population) sd, as the summaries give them:
    "7.27 (1.49)"."""
    return f"{num(statistics.mean(values), digits)} ({num(statistics.pstdev(values), digits)})"


def bugs_states(bugs: dict, states: dict) -> str:
    """Each strategy's mean bugs / states: "random 4.7 / 96,967, EA_s 5.4 / 99,360"."""
    return named({s: f"{num(bugs[s]['mean'], 1)} / {num(states[s]['mean'])}" for s in bugs})


def wuji_combat_sections(results: Results) -> list[str]:
    name, name30 = (
        "wuji_combat_compare_10seeds_1.5Msteps.json",
        "wuji_combat_2strategies_30seeds_1.5Msteps.json",
    )
    combat, thirty = results[name], results[name30]
    whole = bugs_states(combat["bugs_found"], combat["state_coverage"])
    rows30 = [
        [
            label(s),
            str(len(v["bugs_found"])),
            mean_sd(v["bugs_found"], 2),
            mean_sd(v["state_coverage"], 0),
            mean_sd(v["cells_covered"], 0),
        ]
        for s, v in thirty["per_seed"].items()
    ]
    bugs30, states30 = (
        thirty["wuji_against_each"]["bugs_found"][0],
        thirty["wuji_against_each"]["state_coverage"][0],
    )
    return [
        claims_section(
            "CombatArena against the paper's claims, earlier protocol",
            combat,
            WUJI_COMBAT_CLAIMS,
            "The paper's combat games (L10, NSH) are commercial; ours is "
            "CombatArena-v0, a player with skills and buffs against a boss, "
            f"with {combat['bugs_total']} injected bugs, most of them reached only "
            f"by fighting well. Whole runs, {steps_label(combat['budget_steps'])} env steps each.",
        ),
        comparison_section(
            f"CombatArena, {combat['seeds']} seeds, "
            f"{steps_label(combat['budget_steps'])} env steps, earlier protocol",
            f"Bugs found (of {combat['bugs_total']}) and distinct states covered, "
            "means at each quarter of the budget; the budget's "
            "column counts steps up to it, the best of each column in bold. A "
            "run's last generation goes a little past the budget: "
            f"the whole runs found (bugs / states) {whole}. Below, Wuji's seeds "
            "against each other strategy's.",
            combat,
            name,
        ),
        section(
            f"CombatArena, {len(thirty['per_seed']['wuji']['bugs_found'])} seeds of "
            "EA_s+DRL and Wuji, earlier protocol",
            "The ten seeds above and more of the two strategies. Wuji against "
            f"EA_s+DRL: bugs Cliff's δ {signed(bugs30['cliffs_delta'])} "
            f"(p {pvalue(bugs30['p_holm'])}), states δ "
            f"{signed(states30['cliffs_delta'])} (p {pvalue(states30['p_holm'])}).",
            table(
                [
                    "strategy",
                    "seeds",
                    "bugs, mean (sd)",
                    "states, mean (sd)",
                    "cells covered, mean (sd)",
                ],
                rows30,
            ),
            provenance(name30, thirty, Code=thirty["code"]),
        ),
    ]


def wuji_maze_sections(results: Results) -> list[str]:
    name = "wuji_blockmaze_compare_10seeds_5s.json"
    maze = results[name]
    return [
        claims_section(
            "Block Maze against the paper's claims, earlier protocol",
            maze,
            WUJI_MAZE_CLAIMS,
            "The paper's small game, its bugs and gold re-drawn per run. The paper "
            "found random competitive there, its small state "
            "space letting random play cover it (§V-B), and Wuji covering the most "
            "states in every game (§V-C).",
        ),
        comparison_section(
            f"Block Maze, {maze['seeds']} seeds, {maze['budget_s']:g} s, earlier protocol",
            "Means at each quarter and half of the wall-clock budget and at its "
            "end, the best of each column in bold. Under a "
            "wall-clock budget the strategies play different numbers of steps "
            "(last column), and the figures move a little with "
            "the machine's load. Below, Wuji's seeds against each other strategy's.",
            maze,
            name,
            checkpoints="by_time",
            column=lambda m: f"{float(m):g} s",
        ),
    ]


#: NSHArena-v0's comparison under the defaults (the authors' code): every strategy, 10 seeds; then
#: Wuji and the two strategies that found the most bugs in it, 30 seeds; the ablation and the
#: equal wall-clock study (``benchmarks/wuji_nsh_studies.py``).
NSH_COMPARE, NSH_THIRTY, NSH_ABLATION, NSH_WALLCLOCK = (
    "wuji_nsh_compare_10seeds_10Msteps.json",
    "wuji_nsh_3strategies_30seeds_10Msteps.json",
    "wuji_nsh_ablation_10seeds_10Msteps.json",
    "wuji_nsh_wallclock_10seeds.json",
)
#: The same two comparisons under our settings, before the authors' defaults.
NSH_COMPARE_OURS, NSH_THIRTY_OURS = (
    "wuji_nsh_compare_10seeds_10Msteps_ours.json",
    "wuji_nsh_3strategies_30seeds_10Msteps_ours.json",
)


def verdict(test: dict) -> str:
    """One of Wuji's comparisons in words: ahead, behind or level (Holm-corrected p under 0.05
    or not), with Cliff's δ and the p."""
    if test["p_holm"] < 0.05:
        words = "ahead" if test["cliffs_delta"] > 0 else "behind"
    else:
        words = "level"
    return f"{words} (δ {signed(test['cliffs_delta'])}, p {pvalue(test['p_holm'])})"


def verdict_rows(tests: dict, against: Sequence[str]) -> list[str]:
    """Wuji's verdict on bugs and on states against each of ``against``."""
    by = {m: {t["b"]: t for t in tests[m]} for m in ("bugs_found", "state_coverage")}
    return [verdict(by[m][b]) for b in against for m in ("bugs_found", "state_coverage")]


def ahead_of_drl_section(results: Results) -> str:
    """Whether Wuji is ahead of DRL and DRL ×30 in each comparison on NSHArena."""
    compare, thirty, wall = results[NSH_COMPARE], results[NSH_THIRTY], results[NSH_WALLCLOCK]
    drl_wall = [s for s in wall["strategies"] if s != "wuji"]
    rows = [
        [
            f"equal env steps ({steps_label(compare['budget_steps'])}), {compare['seeds']} seeds",
            *verdict_rows(compare["wuji_against_each"], ("drl", "drl_30")),
        ],
        [
            f"equal env steps ({steps_label(thirty['budget_steps'])}), {thirty['seeds']} seeds",
            *verdict_rows(thirty["wuji_against_each"], ("drl", "drl_30")),
        ],
        [
            f"equal wall-clock ({num(wall['budget_s'])} s), {wall['seeds']} seeds",
            *verdict_rows(wall["wuji_against_each"], drl_wall),
        ],
    ]
    return section(
        "Is Wuji ahead of DRL on NSHArena?",
        "Wuji's seeds against DRL's and DRL ×30's under each budget: ahead or behind where "
        "the Holm-corrected Mann–Whitney p is under 0.05, level otherwise, with Cliff's δ "
        "(positive where Wuji tends higher). Under equal wall-clock DRL is the authors' learner "
        "in one game, and Wuji and the two DRLs alone ran.",
        table(
            [
                "budget",
                "against DRL: bugs",
                "against DRL: states",
                "against DRL ×30: bugs",
                "against DRL ×30: states",
            ],
            rows,
        ),
    )


def lineage_section(data: dict, name: str) -> str:
    """Where Wuji's survivors came from, generation by generation, and its front's stored scores
    beside a re-score on fresh seeds."""
    lineage = data["lineage"]["wuji"]
    survivors = lineage["survivors"]
    trained = survivors["trained"]
    rows = [
        [
            str(g),
            *(num(survivors[o][i], 1) for o in ("parent", "trained", "child")),
            *(
                "—" if pair is None else f"{num(pair[0], 1)} / {num(pair[1], 2)}"
                for pair in (lineage["stored"][i], lineage["fresh"][i])
            ),
        ]
        for i, g in enumerate(lineage["generation"])
    ]
    stored = [pair for pair in lineage["stored"] if pair is not None]
    fresh = [pair for pair in lineage["fresh"] if pair is not None]
    return section(
        "Wuji's lineages on NSHArena",
        f"Per generation, means over the seeds that reached it: of Wuji's "
        f"{num(sum(survivors[o][0] for o in survivors))} survivors, how many are parents kept, "
        "trained children and untrained children (never selected under the authors' pool "
        "P∪Q, which does not evaluate them), and the front's mean scores (ES / RS) as "
        "stored beside a re-score of the same policies on seeds never played. Trained children "
        f"are {num(statistics.mean(trained), 1)} of the survivors a generation on average; over "
        "the generations the front's stored ES and RS average "
        f"{num(statistics.mean(p[0] for p in stored), 1)} and "
        f"{num(statistics.mean(p[1] for p in stored), 2)}, their fresh re-scores "
        f"{num(statistics.mean(p[0] for p in fresh), 1)} and "
        f"{num(statistics.mean(p[1] for p in fresh), 2)}.",
        table(
            [
                "generation",
                "parents kept",
                "trained children",
                "untrained children",
                "front, stored",
                "front, fresh seeds",
            ],
            rows,
        ),
        provenance(name, data),
    )


def ablation_section(results: Results) -> str:
    """The defaults with one part switched back to ours at a time."""
    data = results[NSH_ABLATION]

    def row(what: str, entry: dict, against: Sequence[str]) -> list[str]:
        tests = {t["b"]: t for t in entry["against"]["bugs_found"]}
        return [
            what,
            mean_sd(entry["bugs_found"]["per_seed"], 1),
            num(entry["state_coverage"]["mean"]),
            *(verdict(tests[b]) if b in tests else "—" for b in against),
        ]

    against = ("defaults", "drl", "drl_30")
    rows = [row("none: the defaults", data["defaults"], against)] + [
        row(entry["switched_back"], entry, against) for entry in data["variants"].values()
    ]
    return section(
        f"NSHArena: one part of the defaults switched back at a time, {data['seeds']} seeds",
        "Wuji under the defaults (the authors' code), and with one part switched back to ours, "
        f"{steps_label(data['budget_steps'])} env steps a run: bugs found (mean, sd) and states "
        "covered; each variant's seeds against the defaults', DRL's and DRL ×30's from the "
        "comparison (Holm over those three pairs): ahead or behind where p is under 0.05.",
        table(
            [
                "switched back",
                "bugs",
                "states",
                "against the defaults",
                "against DRL",
                "against DRL ×30",
            ],
            rows,
        ),
        provenance(NSH_ABLATION, data),
    )


def wallclock_section(results: Results) -> str:
    """Wuji, DRL in one game and DRL ×30 with equal wall-clock."""
    data = results[NSH_WALLCLOCK]
    tests = {t["b"]: t for t in data["wuji_against_each"]["bugs_found"]}
    states = {t["b"]: t for t in data["wuji_against_each"]["state_coverage"]}
    rows = [
        [
            label(s),
            str(data["populations"][s]),
            num(data["env_steps"][s]["mean"]),
            mean_sd(data["bugs_found"][s]["per_seed"], 1),
            num(data["state_coverage"][s]["mean"]),
            "—" if s == "wuji" else verdict(tests[s]),
            "—" if s == "wuji" else verdict(states[s]),
        ]
        for s in data["strategies"]
    ]
    others = [s for s in data["strategies"] if s != "wuji"]

    def holds(metric: str) -> str:
        best = all(data[metric]["wuji"]["mean"] > data[metric][s]["mean"] for s in others)
        return "holds" if best else "does not hold"

    claims = "; ".join(
        f"{claim}: {holds(metric)}"
        for claim, metric in (
            ("Wuji finds the most bugs", "bugs_found"),
            ("Wuji covers the most states", "state_coverage"),
        )
    )
    return section(
        f"NSHArena with equal wall-clock, {num(data['budget_s'])} s a run",
        f"Each run gets {num(data['budget_s'])} s on one CPU core of this machine "
        f"({data['budget_from']}), each strategy with its natural parallelism: Wuji's "
        "population trained side by side, DRL as the authors' one learner in one game, and "
        "DRL ×30. Env steps played, bugs found (mean, sd), states covered, and Wuji's seeds "
        "against each DRL's. Of the paper's six claims, two can be read with Wuji and the DRLs "
        f"alone, on the means: {claims}.",
        table(
            [
                "strategy",
                "population",
                "env steps",
                "bugs",
                "states",
                "Wuji against it: bugs",
                "Wuji against it: states",
            ],
            rows,
        ),
        provenance(NSH_WALLCLOCK, data),
    )


def reach_class_table(summary: dict) -> str:
    """Bugs of each reach class found by each strategy at each checkpoint of the budget (means), the
    best of each column in bold."""
    by_class, strategies = summary["by_reach_class"], summary["strategies"]
    marks = sorted(by_class, key=int)
    classes = list(by_class[marks[-1]][strategies[0]])
    columns = [
        bold_best([by_class[m][s][c]["mean"] for s in strategies], lambda v: num(v, 1))
        for c in classes
        for m in marks
    ]
    return table(
        ["strategy", *[f"{c}, {steps_label(m)}" for c in classes for m in marks]],
        [[label(s), *[col[i] for col in columns]] for i, s in enumerate(strategies)],
    )


def first_found_table(summary: dict) -> str:
    """Each bug: its kind and reach class (where the game has them), in how many seeds each strategy
    found it and the median env step at which it did, and the strategies that reach it first (the
    lowest median first-found step, a seed that never found it counting as never; ties all named:
    strategies that start from the same policies find the early bugs at the same step)."""
    strategies, steps, kinds = (
        summary["strategies"],
        summary["first_found_step"],
        summary["bug_kinds"],
    )
    rows = []
    for bug, (kind, reach) in enumerate(
        zip(kinds, summary.get("reach_classes", ["–"] * len(kinds)))
    ):
        cells, medians = [], {}
        for s in strategies:
            found = [run[bug] for run in steps[s] if run[bug] is not None]
            medians[s] = statistics.median([*found, *[float("inf")] * (len(steps[s]) - len(found))])
            cells.append(
                f"{len(found)}/{len(steps[s])}"
                + (f", {steps_label(int(statistics.median(found)))}" if found else "")
            )
        best = min(medians.values())
        first = (
            listing(label(s) for s in strategies if medians[s] == best)
            if best != float("inf")
            else "none in most seeds"
        )
        rows.append([str(bug), kind, reach, *cells, first])
    return table(["bug", "kind", "reach", *[label(s) for s in strategies], "first there"], rows)


def wuji_nsh_sections(results: Results) -> list[str]:
    nsh, thirty = results[NSH_COMPARE], results[NSH_THIRTY]
    per_run = {s: nsh["wall_s"][s] / nsh["seeds"] for s in nsh["strategies"]}
    others = [s for s in thirty["strategies"] if s != "wuji"]
    tests = {t["b"]: t for t in thirty["wuji_against_each"]["bugs_found"]}
    states = {t["b"]: t for t in thirty["wuji_against_each"]["state_coverage"]}
    rows30 = [
        [
            label(s),
            num(thirty["bugs_found"][s]["mean"], 2),
            num(thirty["bugs_found"][s]["sd"], 2),
            num(thirty["state_coverage"][s]["mean"]),
            num(thirty["wall_s"][s] / thirty["seeds"]),
        ]
        for s in thirty["strategies"]
    ]
    return [
        claims_section(
            "NSHArena against the paper's claims",
            nsh,
            WUJI_COMBAT_CLAIMS,
            "NSHArena-v0 is our NSH-sized combat scenario: three floors, 19 "
            "actions with setup → follow-up combos, five timed buffs, "
            f"a boss with three phases and {nsh['bugs_total']} bugs fixed where "
            "they were injected, a third near the start, a third on the "
            "damage path and a third off it, both gated on the boss's phase (its "
            "calibration with probe policies, fixed before any "
            "strategy ran, is in jgtest/envs/nsh_arena.py). Whole runs of "
            f"{steps_label(nsh['budget_steps'])} env steps, every game "
            "counted and the results cut at the budget; DRL is one learner, DRL "
            "×30 thirty learners side by side (the paper does not "
            "say how it ran DRL; the claims read DRL as one learner). Every strategy runs the "
            "defaults, the authors' code: greedy evaluation, crossover between layers without "
            "mutation, selection over P∪Q and their A2C (whole-episode returns, 10k steps a "
            "child, one game a learner). ES is the paper's Eq. ES, faithfully: the distinct "
            "states of a policy's runs, which grow with the episode's length, so a policy that "
            "never fights and roams the ledges scores a higher ES than one that fights to win.",
        ),
        comparison_section(
            f"NSHArena, {nsh['seeds']} seeds, {steps_label(nsh['budget_steps'])} env steps",
            "Bugs found and distinct states covered, means at each quarter of the "
            "budget, the best of each column in bold; then the "
            "bugs of each reach class found by a quarter, half and all of the "
            "budget; then each bug: in how many seeds each strategy "
            "found it and the median env step of its first finding, and which "
            "strategy gets there first. Time a run took on 2 CPU "
            "cores (seconds, mean of the seeds): "
            f"{named({s: num(v) for s, v in per_run.items()})}. Below the tables, "
            "Wuji's seeds against each other strategy's.",
            nsh,
            NSH_COMPARE,
            reach_class_table(nsh),
            first_found_table(nsh),
        ),
        section(
            f"NSHArena, {thirty['seeds']} seeds of Wuji and the two that found the "
            "most bugs in ten",
            f"Wuji against {listing(label(s) for s in others)}, bugs found "
            "(Holm-corrected Mann–Whitney p over the two pairs, Cliff's δ "
            "positive where Wuji tends higher): "
            + "; ".join(
                f"{label(s)} δ {signed(tests[s]['cliffs_delta'])} (p "
                f"{pvalue(tests[s]['p_holm'])}), "
                f"states δ {signed(states[s]['cliffs_delta'])} (p {pvalue(states[s]['p_holm'])})"
                for s in others
            )
            + ".",
            table(["strategy", "bugs, mean", "bugs, sd", "states, mean", "s a run"], rows30),
            reach_class_table(thirty),
            provenance(NSH_THIRTY, thirty),
        ),
        lineage_section(nsh, NSH_COMPARE),
        ablation_section(results),
        wallclock_section(results),
        ahead_of_drl_section(results),
    ]


#: CombatArena-v0 and Block Maze rerun under the fair protocol (every strategy, equal env steps,
#: results cut at the budget).
COMBAT_FAIR, MAZE_FAIR = (
    "wuji_combat_7strategies_10seeds_1.5Msteps.json",
    "wuji_blockmaze_7strategies_10seeds_1Msteps.json",
)


def wuji_fair_rerun_sections(results: Results) -> list[str]:
    sections = []
    for name, claims, what in (
        (
            COMBAT_FAIR,
            WUJI_COMBAT_CLAIMS,
            "the L10-sized arena, at the budget of the earlier comparison below",
        ),
        (
            MAZE_FAIR,
            WUJI_MAZE_CLAIMS,
            "a tenth of NSHArena's budget, as the paper gave Block Maze 1 hour "
            "against 10 for each combat game",
        ),
    ):
        data = results[name]
        held = [r[0] for r in claim_rows(data, claims) if r[3] == "yes"]
        sections.append(
            comparison_section(
                f"{data['game'].removesuffix('-v0')} under the same protocol, "
                f"{data['seeds']} seeds, {steps_label(data['budget_steps'])} env steps",
                "All seven strategies with equal env steps and results cut at the "
                f"budget, as on NSHArena: {what}. Of the paper's claims "
                f"on this game, {len(held)} of {len(claims)} hold"
                + (f" ({listing(held, '; ')})." if held else ".")
                + " Means at each quarter "
                "of the budget, the best of each column in bold; then each bug: in how "
                "many seeds each strategy found it, the median env "
                "step of its first finding and which strategy gets there first; below, "
                "Wuji's seeds against each other strategy's.",
                data,
                name,
                first_found_table(data),
            )
        )
    return sections


#: Wuji on a real engine: ViZDoom's ``deadly_corridor`` scenario, its games on the host
#: (:mod:`jgtest.methods.wuji.host`).
DOOM_CORRIDOR = "wuji_vizdoom_deadly_corridor_3strategies_3seeds_30ksteps.json"


def wuji_doom_sections(results: Results) -> list[str]:
    data = results[DOOM_CORRIDOR]
    per_run = {s: data["wall_s"][s] / data["seeds"] for s in data["strategies"]}
    cells = named({label(s): num(v["mean"], 1) for s, v in data["cells_covered"].items()})
    return [
        comparison_section(
            f"A real engine: ViZDoom's deadly corridor, {data['seeds']} seeds, "
            f"{steps_label(data['budget_steps'])} env steps",
            "Not a game of the paper: the method on the real Doom engine through "
            "the ViZDoom bridge. The scenario is a corridor "
            "with six monsters on the hardest skill and a vest at its end; seven "
            "buttons; the engine's reward is the progress towards "
            "the vest, −100 at death. The policies read the game variables "
            "(position, angle, health, ammunition, kills, items, each "
            "scaled to its range) and Wuji's states are those cut into 10 "
            "intervals; the bugs are the bridge's oracles (a crash, "
            "stuck, Doom's two assertions). A population of 8 on 3 games each (24 "
            "engines). Means at each quarter of the budget, the "
            "best of each column in bold. The level's 64-unit cells each "
            f"strategy's games entered (means): {cells}: Wuji's "
            "policies, pulled by the winning score, walk further down the "
            "corridor; EA_m's and random's games stay near the start "
            "and cover more states there. Time a run took on 2 CPU cores (seconds, "
            "mean of the seeds): "
            f"{named({s: num(v) for s, v in per_run.items()})}. Below, Wuji's seeds "
            "against each other strategy's.",
            data,
            DOOM_CORRIDOR,
        )
    ]


NSH_PROBES = "nsh_probes.json"
#: NSHArena-v0's bugs where they were designed (:class:`jgtest.envs.nsh_arena.NSHArena`).
NSH_DESIGNED = (
    ("near the start (0-6)", range(0, 7)),
    ("on the damage path (7-13)", range(7, 14)),
    ("designed off it (14-20)", range(14, 21)),
)
#: The scripted probes (:mod:`jgtest.methods.wuji.probes`) in words.
PROBE_WORDS = {
    "random": "random",
    "fighter": "the scripted fighter",
    "fighter30": "the fighter, 30% random actions",
    "retreating_fighter": "the fighter that retreats to a ledge to heal",
    "retreating_fighter30": "the retreating fighter, 30% random actions",
}


def nsh_probe_section(results: Results) -> str:
    data = results[NSH_PROBES]
    rows = []
    for name, row in data["probes"].items():
        found = [step >= 0 for step in row["first_found"]]
        seed = name.removeprefix("a2c_seed")
        words = PROBE_WORDS.get(name, f"plain A2C (a drl run, the authors' A2C), seed {seed}")
        rows.append(
            [words, *(f"{sum(found[b] for b in bugs)} of {len(bugs)}" for _, bugs in NSH_DESIGNED)]
        )
    classes = data["derived_reach_classes"]
    counts = {c: str(classes.count(c)) for c in ("start", "path", "off")}
    return section(
        "The probes behind NSHArena-v0's reach classes",
        f"Each probe plays {steps_label(data['budget_steps'])} env steps: the scripted ones on "
        "1,000 games (run seed 0), plain A2C as a drl run. The bugs each reaches, by where they "
        "were designed. A bug is in class start if random reaches it, path if another probe does, "
        f"off if none does: {named(counts)}. These are the game's classes (a test checks), so the "
        "bugs designed off the damage path, all gated on the boss's phase, count on the path.",
        table(["probe", *(words for words, _ in NSH_DESIGNED)], rows),
        provenance(
            NSH_PROBES,
            data,
            Seeds=f"the scripted probes run seed {data['scripted_probes']['run_seed']}, plain "
            f"A2C seeds {listing(data['a2c_probe']['seeds'])}",
        ),
    )


def by_steps_listing(data: dict) -> str:
    """The seeds, then bugs / states of each strategy at each checkpoint of a ``by_steps`` table."""
    marks = sorted(data["by_steps"], key=int)
    seeds = {len(v["bugs_found"]["per_seed"]) for v in data["by_steps"][marks[-1]].values()}
    at = []
    for mark in marks:
        by_strategy = data["by_steps"][mark]
        bugs, states = (
            {s: v[metric] for s, v in by_strategy.items()}
            for metric in ("bugs_found", "state_coverage")
        )
        at.append(f"at {steps_label(mark)} steps {bugs_states(bugs, states)}")
    return f"{listing(seeds)} seeds, bugs / states " + "; ".join(at)


def wuji_page(results: Results) -> Page:
    combat, nsh = results["wuji_combat_compare_10seeds_1.5Msteps.json"], results[NSH_COMPARE]
    intro = (
        "Wuji (Zheng et al., ASE 2019) tests games by evolving a population of "
        "policies with NSGA-II on two objectives, winning "
        "and exploring, and fine-tuning each generation's children with A2C. "
        "The paper compares it with random play and with its "
        "parts (EA_s: evolution on winning alone; EA_m: evolution on both "
        "objectives; DRL; EA_s+DRL) on Block Maze and two "
        "commercial combat games, each strategy run 10 times, for 1 hour on "
        "Block Maze and 10 hours on each combat game (§V-A), "
        "by bugs found (§V-B) and states covered (§V-C). Its figures are plots "
        "and tables whose orderings its text states: "
        "those orderings are the paper's column below. Our twins are "
        "BlockMaze-v0, CombatArena-v0 (L10's size) and NSHArena-v0 "
        "(NSH's); each run gets a budget of env steps (every evaluation game, "
        "A2C rollout and random game counts) in place of the paper's hours."
    )
    early, arena = (
        "wuji_combat_3strategies_10seeds_3Msteps.json",
        "wuji_combat_4strategies_10seeds_6Msteps.json",
    )
    variants = [
        *(
            (
                f"Under our settings, before the authors' defaults ({words}): "
                f"{by_steps_listing(results[name])}",
                name,
            )
            for words, name in (
                ("the 10-seed comparison", NSH_COMPARE_OURS),
                ("Wuji and the two best, 30 seeds", NSH_THIRTY_OURS),
            )
        ),
        (
            "Before the layer-order crossover and PyTorch's batch-norm momentum "
            "(weights crossed in the order of their names, each child "
            "keeping its first parent's batch-norm statistics, Flax's default "
            f"batch-norm momentum): {by_steps_listing(results[early])}",
            early,
        ),
        (
            "An earlier arena and search (no death crash, no phase-locked boss, "
            "DRL as independent learners, NSGA-II's crowded-comparison "
            f"tournament): {by_steps_listing(results[arena])}",
            arena,
        ),
    ]
    earlier = (
        "The sections marked earlier protocol come from the code before the "
        "protocol above: a run's last generation went past the "
        "budget by up to a generation, each policy was scored on m = 4 runs, "
        "and DRL ran only as one learner."
    )
    body = "\n\n".join(
        [
            intro,
            nsh_probe_section(results),
            *wuji_nsh_sections(results),
            *wuji_fair_rerun_sections(results),
            earlier,
            *wuji_combat_sections(results),
            *wuji_maze_sections(results),
            *wuji_doom_sections(results),
        ]
    )
    most = [
        claim_rows(data, [c for c in WUJI_COMBAT_CLAIMS if c[0] == "Wuji finds the most bugs"])[0][
            3
        ]
        for data in (nsh, combat)
    ]
    summary = (
        "; ".join(
            f"{data['game'].removesuffix('-v0')}, bugs found of "
            f"{data['bugs_total']} in {steps_label(data['budget_steps'])} env "
            f"steps, {data['seeds']} seeds: "
            f"{named({s: num(v['mean'], 1) for s, v in data['bugs_found'].items()})}"
            for data in (nsh, combat)
        )
        + ". The paper's Wuji finds the most bugs (§V-B), here: "
        f"{listing('holds' if m == 'yes' else 'not reproduced' for m in most)}."
    )
    return Page(
        "wuji", "Wuji: evolutionary multi-objective search with DRL", summary, body, tuple(variants)
    )
