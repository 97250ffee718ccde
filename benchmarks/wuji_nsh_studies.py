"""Two studies of Wuji on NSHArena-v0 beside its 10-seed comparison, which runs first::

    jgtest run wuji --game NSHArena-v0 --compare --seeds 10 --budget-steps 10000000 \\
        --out runs/nsh_compare
    python benchmarks/wuji_nsh_studies.py ablation --compare runs/nsh_compare \\
        --runs runs/nsh_ablation --json benchmarks/results/wuji_nsh_ablation_10seeds_10Msteps.json
    python benchmarks/wuji_nsh_studies.py wallclock --compare runs/nsh_compare \\
        --runs runs/nsh_wallclock --json benchmarks/results/wuji_nsh_wallclock_10seeds.json

``ablation``: Wuji under the defaults (the authors' code) with one part of the method
(:data:`jgtest.methods.wuji.PARTS`: evaluation, operators, selection pool, A2C) switched back to
ours at a time (:func:`jgtest.methods.wuji.preset`), the comparison's env-step budget and seeds;
each variant's seeds against the defaults', DRL's and DRL ×30's from the comparison (Mann-Whitney U
with Holm's correction over those three pairs, Cliff's δ).

``wallclock``: equal wall-clock, each strategy with its natural parallelism: Wuji's population
trained side by side, DRL as the authors' one learner in one game (``drl`` with a population of
one) and DRL ×30. The budget is Wuji's median seconds a run in the comparison (robust to a run
that other work slowed; ``--budget-s`` sets another); Wuji's seeds against each DRL's, as above.
Wall-clock figures hold for this machine only: run each process on one core (``taskset -c N``),
as the comparison's were, so that two lanes side by side do not slow each other.

Runs resume (a killed study continues; a finished run is read, not played). ``--only`` runs some
variants or strategies of a study (one lane of two, one per core) and writes nothing;
``--json`` assembles the study once all its runs are there. ``--quick``: a hundredth of the
budget on 2 seeds, for a look at the pipeline.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
).strip()

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

from jgtest.files import read_json  # noqa: E402
from jgtest.methods import wuji  # noqa: E402
from jgtest.methods.wuji.campaign import summarize  # noqa: E402

GAME = "NSHArena-v0"
#: The strategies of the comparison each study measures against.
DRL = ("drl", "drl_30")
#: The wall-clock study's runs: name, strategy, population (``None``: the default).
WALLCLOCK_RUNS = (("wuji", "wuji", None), ("drl_1game", "drl", 1), ("drl_30", "drl_30", None))
#: What each ablation variant switches back to ours.
SWITCHED_BACK = {
    "evaluation": "sampled evaluation (the training policy with its action floor)",
    "operators": "our operators (a cut anywhere at 0.9, 10% of the weights mutated, σ 0.1)",
    "selection_pool": "the paper's selection pool P∪P′∪Q",
    "a2c": "our A2C (8 games × 5-step returns, lr 1e-3, entropy 0.01, early stop)",
}


def run_summaries(campaign: Path, strategy: str, seeds: range) -> list[dict]:
    """The run summaries of ``strategy``'s ``seeds`` in a campaign's directory."""
    runs = [campaign / strategy / f"seed-{k}" / "summary.json" for k in seeds]
    missing = [str(p.parent) for p in runs if not p.exists()]
    if missing:
        raise SystemExit(f"error: these runs have not finished: {', '.join(missing)}")
    return [read_json(p) for p in runs]


def play(config: wuji.WujiConfig, out: Path, seeds: int) -> None:
    """Runs (or resumes, or reads) ``config``'s seeds in ``out/STRATEGY/seed-S``."""
    print(f"{out}: {config.strategy}, {seeds} seeds", flush=True)
    wuji.run(config, out, (config.strategy,), seeds, resume=True)


def study_fields(summary: dict, name: str) -> dict:
    """What a study keeps of one group of its summary."""
    keep = ("bugs_found", "state_coverage", "cells_covered", "env_steps", "wall_s")
    return {
        **{field: summary[field][name] for field in keep},
        **({"lineage": summary["lineage"][name]} if name in summary["lineage"] else {}),
    }


def ablation(args, base: wuji.WujiConfig, seeds: range) -> dict | None:
    for part in args.only or wuji.PARTS:
        play(wuji.preset(base, "ours", (part,)), args.runs / part, len(seeds))
    if args.json is None:
        return None
    compared = {"defaults": run_summaries(args.compare, "wuji", seeds)} | {
        s: run_summaries(args.compare, s, seeds) for s in DRL
    }
    variants = {}
    for part in wuji.PARTS:
        summary = summarize(
            base, {"wuji": run_summaries(args.runs / part, "wuji", seeds), **compared}
        )
        variants[part] = {
            "switched_back": SWITCHED_BACK[part],
            **study_fields(summary, "wuji"),
            "against": summary["wuji_against_each"],
        }
    defaults = summarize(base, {"wuji": compared["defaults"], **{s: compared[s] for s in DRL}})
    return {
        "study": "ablation",
        "parts": list(wuji.PARTS),
        "variants": variants,
        "defaults": {**study_fields(defaults, "wuji"), "against": defaults["wuji_against_each"]},
        "drl": {s: study_fields(defaults, s) for s in DRL},
        "budget_steps": base.budget_steps,
    }


def wallclock(args, base: wuji.WujiConfig, seeds: range) -> dict | None:
    walls = [run["wall_s"] for run in run_summaries(args.compare, "wuji", seeds)]
    budget_s = args.budget_s or round(statistics.median(walls), 1)
    timed = dataclasses.replace(base, budget_s=budget_s, budget_steps=None)
    configs = {
        name: dataclasses.replace(
            timed, strategy=strategy, population=population or timed.population
        )
        for name, strategy, population in WALLCLOCK_RUNS
    }
    for name in args.only or configs:
        play(configs[name], args.runs / name, len(seeds))
    if args.json is None:
        return None
    summary = summarize(
        timed,
        {name: run_summaries(args.runs / name, configs[name].strategy, seeds) for name in configs},
    )
    keep = ("bugs_found", "state_coverage", "cells_covered", "env_steps", "wall_s", "by_time")
    return {
        "study": "wallclock",
        "budget_s": budget_s,
        "budget_from": "Wuji's median seconds a run in the comparison"
        if args.budget_s is None
        else "--budget-s",
        "strategies": list(configs),
        "populations": {name: configs[name].population for name in configs},
        **{field: summary[field] for field in keep},
        "wuji_against_each": summary["wuji_against_each"],
        "bugs_total": summary["bugs_total"],
    }


STUDIES = {"ablation": ablation, "wallclock": wallclock}


def main(argv=None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", choices=tuple(STUDIES))
    parser.add_argument("--compare", type=Path, required=True, help="the comparison's --out")
    parser.add_argument("--runs", type=Path, required=True, help="the study's run directory")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget-steps", type=int, default=10_000_000)
    parser.add_argument("--budget-s", type=float, help="wallclock: seconds a run")
    parser.add_argument("--only", type=lambda s: s.split(","), help="names to run, comma-separated")
    parser.add_argument("--quick", action="store_true", help="a hundredth of the budget, 2 seeds")
    parser.add_argument("--json", type=Path, help="assemble the study here")
    args = parser.parse_args(argv)
    seeds, budget = (2, args.budget_steps // 100) if args.quick else (args.seeds, args.budget_steps)
    base = wuji.WujiConfig(game=GAME, generations=None, budget_steps=budget)
    names = wuji.PARTS if args.study == "ablation" else [n for n, *_ in WALLCLOCK_RUNS]
    unknown = [n for n in args.only or () if n not in names]
    if unknown:
        parser.error(f"--only: {', '.join(unknown)} not among {', '.join(names)}")
    result = STUDIES[args.study](args, base, range(seeds))
    if result is not None:
        result |= {
            "command": "python benchmarks/wuji_nsh_studies.py " + " ".join(sys.argv[1:]),
            "game": GAME,
            "seeds": seeds,
            "quick": args.quick,
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
        }
        write_json(args.json, result)
        print(json.dumps({k: v for k, v in result.items() if k != "variants"}, indent=1)[:2000])
    return result


if __name__ == "__main__":
    main()
