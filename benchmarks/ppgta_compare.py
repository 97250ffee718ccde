"""PPGTA against Inspector and random over seeds (PPGTA §VI-A–B, Fig. 7–9): the paper's numbers
beside ours.

    python benchmarks/ppgta_compare.py --runs runs/compare_s0 runs/compare_s1 runs/compare_s2 \\
        --models runs/models_s0 [runs/models_s1 runs/models_s2] \\
        [--learned-detector runs/ppgta_learned_s0] --json benchmarks/results/ppgta_compare_45.json

Each run directory is what ``jgtest run compare-explorers --game ParkWorld-v0 --seed S --models-seed
M --ppgta-models MODELS --out DIR`` writes (45 episodes of 2,000 steps per agent, the same starts
for the three). ``--models`` names one models directory for all runs (the paper trains its models
once, §V-B; the campaign seeds then vary the starts and the learning) or one per run (each trained
with its run's seed, so that the seeds vary the whole pipeline). Without ``--runs`` the script runs
seeds 0–2 into ``runs/ppgta-compare/seed-S`` first, on one set of models trained with seed 0 in
``runs/ppgta-compare/models`` (``--models-per-seed``: one set a seed, ``models-S``; ``--quick``: 10
episodes, the small models). It prints, per agent, the mean and each seed's pathway coverage (all of
it and the reachable part), OOIs tested after 18 and 45 episodes, test success rate (successful
tests over all OOIs) and texture bugs found with the oracle's precision and recall, and the paper's;
the JSON adds the budget, the seeds, each run's models' metrics, the models' training time (each set
counted once), how PPGTA was trained and how Inspector's PPO and novelty learned, the comparison's
wall time and, with ``--learned-detector``, a PPGTA run whose tests start from the learned detector.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

AGENTS = ("ppgta", "inspector", "random")
MEASURES = (
    "pathway_coverage",
    "pathway_coverage_of_reachable",
    "ooi_tested_18",
    "ooi_tested_45",
    "test_success_rate",
    "texture_bugs_found",
    "wall_s",
)
COMMAND = (
    "jgtest run compare-explorers --game ParkWorld-v0 --seed S --models-seed M "
    "--ppgta-models MODELS --out DIR"
)
LEARNED_COMMAND = (
    "jgtest run ppgta --detector learned --game ParkWorld-v0 --ppgta-models MODELS --out DIR"
)


def _measures(summary: dict) -> dict:
    at = summary["at_paper_episodes"]
    return {
        "pathway_coverage": summary["pathway_coverage"],
        "pathway_coverage_of_reachable": summary["pathway_coverage_of_reachable"],
        "ooi_tested_18": at["ooi_tested_18"],
        "ooi_tested_45": at["ooi_tested_45"],
        "test_success_rate": summary["test_success_rate"],
        "texture_bugs_found": summary["texture_bugs_found"],
        "wall_s": summary["wall_s"],
        "steps_on_pathway": summary.get("steps_on_pathway"),
        "oracle_precision": summary.get("texture_oracle", {}).get("precision"),
        "oracle_recall": summary.get("texture_oracle", {}).get("recall"),
    }


def success_by_rule(summary: dict, thresholds: dict) -> dict:
    """The run's test success rate (successful tests over all objects) under each JS threshold rule
    (:func:`jgtest.agents.imitation.js_threshold`), from each tested object's JS divergence."""
    js = [v for v in summary["test_js"] if v is not None]
    return {
        rule: sum(v < threshold for v in js) / summary["ooi_total"]
        for rule, threshold in thresholds.items()
    }


def ppo_schedule(config: dict) -> dict:
    """A campaign's PPO updates and the steps each learns from, from its ``config.json``."""
    steps_per_update = config["num_envs"] * config["rollout_steps"]
    return {
        "updates": config["episodes"] * config["episode_steps"] // steps_per_update,
        "steps_per_update": steps_per_update,
    }


def training(config: dict) -> dict:
    """How the runs' PPGTA was trained, from its ``config.json``: the models' settings and PPO's."""
    keep = (
        "k",
        "policy",
        "freeze_encoder",
        "js_rule",
        "imitation_epochs",
        "imitation_warmup",
        "path_patience",
        "circle_patience",
        "imitation_batch",
        "path_trajectories",
        "path_steps",
        "circle_trajectories",
        "circle_steps",
        "inverse_epochs",
        "imitation_labels",
    )
    # a config written before r^p's reading was an option used the per-step one
    return {
        "models": {k: config["models"][k] for k in keep if k in config["models"]},
        "ppo": {
            **config["hparams"],
            **ppo_schedule(config),
            "fine_tune_fe": config["fine_tune_fe"],
            "preference": config.get("preference", "step"),
        },
    }


def inspector_training(config: dict) -> dict:
    """How the runs' Inspector learned, from its ``config.json``: PPO's settings and updates, its
    RND and the predictor's steps a rollout."""
    return {
        "ppo": {**config["hparams"], **ppo_schedule(config)},
        "rnd": config["rnd"],
        "rnd_updates": config["rnd_updates"],
    }


def aggregate(runs: list[Path], learned: Path | None = None, models_dirs: list[Path] = ()) -> dict:
    """The runs' measures per agent (each seed's and the mean), the budget, each run's models'
    metrics, with ``models_dirs`` (one for all runs or one per run) their training time, each set
    counted once, and with ``learned`` a PPGTA run with the learned detector."""
    per_agent = {a: {} for a in AGENTS}
    paper, models = None, []
    seeds = []
    for run in runs:
        comparison = json.loads((run / "summary.json").read_text())
        paper = comparison["paper"]
        models.append(comparison.get("models"))
        for agent in AGENTS:
            summary = json.loads((run / agent / "summary.json").read_text())
            for key, value in _measures(summary).items():
                per_agent[agent].setdefault(key, []).append(value)
            if "test_js" in summary and models[-1]:
                for rule, rate in success_by_rule(
                    summary, models[-1]["circle"]["js_thresholds"]
                ).items():
                    per_agent[agent].setdefault(f"test_success_rate_{rule}", []).append(rate)
        config = json.loads((run / agent / "config.json").read_text())
        seeds.append(config["seed"])
        ppgta_config = json.loads((run / "ppgta" / "config.json").read_text())
        inspector_config = json.loads((run / "inspector" / "config.json").read_text())
    mean = lambda values: sum(values) / len(values) if None not in values else None
    result = {
        "game": "ParkWorld-v0",
        "runs": [str(r) for r in runs],
        "command": COMMAND,
        "seeds": seeds,
        "episodes": summary["episodes"],
        "episode_steps": summary["episode_steps"],
        "ooi_total": summary["ooi_total"],
        "ooi_unreachable": summary["ooi_unreachable"],
        "park_size": config["size"],
        "agents": {
            a: {"per_seed": m, "mean": {k: mean(v) for k, v in m.items()}}
            for a, m in per_agent.items()
        },
        # the seeds' campaigns, per agent
        "wall_s": {agent: round(sum(m["wall_s"]), 1) for agent, m in per_agent.items()},
        "paper": paper,
        "models_per_seed": models,
        "ppgta_training": training(ppgta_config),
        "inspector_training": inspector_training(inspector_config),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    if models_dirs:
        sets = list(dict.fromkeys(d.resolve() for d in models_dirs))
        trained = [json.loads((d / "models.json").read_text())["metrics"]["wall_s"] for d in sets]
        label = "models (one set for all seeds)" if len(sets) == 1 else f"models ({len(sets)} sets)"
        result["wall_s"] = {label: round(sum(trained), 1), **result["wall_s"]}
        result["models_shared"] = len(sets) == 1 and len(runs) > 1
    if learned is not None:
        summary = json.loads((learned / "summary.json").read_text())
        seed = json.loads((learned / "config.json").read_text())["seed"]
        result["ppgta_learned_detector"] = {
            "command": LEARNED_COMMAND,
            "seed": seed,
            **_measures(summary),
            "texture_oracle": summary.get("texture_oracle"),
        }
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs",
        nargs="*",
        type=Path,
        help="compare-explorers run directories to aggregate (default: run seeds 0-2)",
    )
    parser.add_argument(
        "--learned-detector",
        type=Path,
        default=None,
        metavar="DIR",
        help="a PPGTA run with the learned detector to add (what `jgtest run ppgta --detector "
        "learned` writes)",
    )
    parser.add_argument(
        "--models",
        nargs="*",
        type=Path,
        default=[],
        metavar="DIR",
        help="the runs' PPGTA models: one directory for all, or one per run in the runs' order "
        "(their training time is recorded)",
    )
    parser.add_argument(
        "--models-per-seed",
        action="store_true",
        help="when running: one set of models a seed, trained with it (default: one set, seed 0)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="when running: 10 episodes and the small models"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument(
        "--note",
        default=None,
        help="a note kept with the results (e.g. what else ran on the machine)",
    )
    args = parser.parse_args(argv)
    runs, models = args.runs, args.models
    if runs and len(models) > 1 and len(models) != len(runs):
        parser.error(
            f"--models takes one directory for all runs or one per run: {len(runs)} runs, "
            f"{len(models)} models"
        )
    if not runs:
        from jgtest.cli import main as jgtest

        root = Path("runs/ppgta-compare")
        runs = [root / f"seed-{s}" for s in range(3)]
        models = (
            [root / f"models-{s}" for s in range(3)]
            if args.models_per_seed
            else [root / "models"] * 3
        )
        for seed, (run, where) in enumerate(zip(runs, models)):
            if not (run / "summary.json").exists():
                quick = ["--quick"] if args.quick else []
                jgtest(
                    [
                        "run",
                        "compare-explorers",
                        "--game",
                        "ParkWorld-v0",
                        "--seed",
                        str(seed),
                        "--models-seed",
                        str(seed if args.models_per_seed else 0),
                        "--ppgta-models",
                        str(where),
                        "--out",
                        str(run),
                        "--quiet",
                        "--overwrite",
                        *quick,
                    ]
                )
    result = aggregate(runs, args.learned_detector, models)
    if args.note:
        result["note"] = args.note
    paper = result["paper"]
    columns = (
        ("pathway_coverage_of_reachable", "pathway_coverage_45", ".1%"),
        ("ooi_tested_18", "ooi_tested_18", ".1f"),
        ("ooi_tested_45", "ooi_tested_45", ".1f"),
        ("test_success_rate", "test_success_rate", ".1%"),
    )
    print(
        f"{'agent':10s}"
        + "".join(f"{name:>20s}" for name, _, _ in columns)
        + f"{'texture bugs found':>20s}"
    )
    for agent, data in result["agents"].items():
        ours, theirs = data["mean"], paper.get(agent, {})
        cells = [
            f"{format(ours[k], f)} ({format(theirs[pk], f) if pk in theirs else '—'})"
            for k, pk, f in columns
        ]
        print(
            f"{agent:10s}"
            + "".join(f"{c:>20s}" for c in cells)
            + f"{ours['texture_bugs_found']:>20.1f}"
        )
    print("(ours: mean over seeds; paper's in brackets, one run)")
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
