"""What PPGTA's PPO phase adds to its path-following imitation: the explorer at three learning rates
on one seed's models.

    python benchmarks/ppgta_explorer_variants.py --models runs/models-0 --seed 0 \\
        [--variants ppgta imitation-only purejaxrl-lr] --json
        benchmarks/results/ppgta_explorer_variants_s0.json

PPGTA's explorer starts as a copy of the path-following imitation policy and PPO trains it on
``α·r^p + (1 − α)·r^e`` through the campaign (§IV-C, §V-D); the paper gives no learning rate. Each
variant plays the same 45 episodes of 2,000 steps (the campaign's starts for ``--seed``) with the
same trained models (``MODELS``, what ``jgtest run ppgta --seed S --ppgta-models MODELS`` trains;
trained there first when missing):

* ``ppgta``: the campaign as :class:`jgtest.methods.park.ppgta.PPGTAConfig` sets it, PPO at 2.5e-5
  (:data:`jgtest.methods.park.ppgta.PPGTA_PPO`, the rate at which RL fine-tunes a policy pre-trained
  by imitation);
* ``imitation-only``: PPO's learning rate 0, so the explorer stays the imitation policy (``r^p`` is
  0 throughout): what the imitation alone covers;
* ``purejaxrl-lr``: PPO at PureJaxRL's Atari learning rate, 2.5e-4 (for networks trained from
  scratch; the comparison's setting).

Variants already in ``--json`` for the same seed's models are kept. It prints and writes, per
variant, the reachable and the whole pathway covered, objects tested after 18 and 45 episodes, the
success rate under each JS threshold rule and the wall time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402
from ppgta_compare import success_by_rule  # noqa: E402

from jgtest.methods.park import ppgta  # noqa: E402

#: Each variant's PPO learning rate (module docstring).
VARIANTS = {"ppgta": ppgta.PPGTA_PPO.learning_rate, "imitation-only": 0.0, "purejaxrl-lr": 2.5e-4}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        type=Path,
        required=True,
        metavar="DIR",
        help="the seed's PPGTA models (trained there when missing)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="*", choices=tuple(VARIANTS), default=list(VARIANTS))
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("runs/ppgta-variants"),
        help="where the variants' runs go (OUT/VARIANT-sSEED)",
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)

    from jgtest.methods.park.console import models_config, models_for

    settings = models_config({}, quick=False, seed=args.seed)
    models = models_for(settings, args.models)
    base = ppgta.PPGTAConfig(seed=args.seed, models=settings)
    rows = {}
    for name in args.variants:
        config = dataclasses.replace(
            base, hparams=dataclasses.replace(base.hparams, learning_rate=VARIANTS[name])
        )
        start = time.perf_counter()
        summary = ppgta.run_with_models(config, models, args.out / f"{name}-s{args.seed}")
        at = summary["at_paper_episodes"]
        rows[name] = {
            "pathway_coverage_of_reachable": summary["pathway_coverage_of_reachable"],
            "pathway_coverage": summary["pathway_coverage"],
            "ooi_tested_18": at["ooi_tested_18"],
            "ooi_tested_45": at["ooi_tested_45"],
            "test_success_rate": summary["test_success_rate"],
            "test_success_rate_by_rule": success_by_rule(
                summary, models.metrics["circle"]["js_thresholds"]
            ),
            "learning_rate": VARIANTS[name],
            "preference": config.preference,
            "ppo_updates": config.rounds * config.episode_steps // config.rollout_steps,
            "wall_s": round(time.perf_counter() - start, 1),
        }
        r = rows[name]
        print(
            f"{name:18s} reachable {r['pathway_coverage_of_reachable']:.1%}  all "
            f"{r['pathway_coverage']:.1%}  tested {r['ooi_tested_18']} / {r['ooi_tested_45']}"
            f"  success {r['test_success_rate']:.1%}  updates {r['ppo_updates']}  "
            f"{r['wall_s']:.0f} s",
            flush=True,
        )
    models_meta = json.loads((args.models / "models.json").read_text())
    earlier = (
        json.loads(args.json.read_text()) if args.json is not None and args.json.exists() else {}
    )
    if (
        earlier.get("seeds") == [args.seed]
        and earlier.get("js_thresholds") == models.metrics["circle"]["js_thresholds"]
    ):
        # the same seed's models: keep the variants not re-run
        rows = {**{k: v for k, v in earlier["variants"].items() if k not in rows}, **rows}
    write_json(
        args.json,
        {
            "benchmark": "ppgta_explorer_variants",
            "command": "python benchmarks/ppgta_explorer_variants.py --models MODELS "
            f"--seed {args.seed}",
            "seeds": [args.seed],
            "episodes": base.episodes,
            "episode_steps": base.episode_steps,
            "num_envs": base.num_envs,
            "models_wall_s": models_meta["metrics"].get("wall_s"),
            "js_thresholds": models.metrics["circle"]["js_thresholds"],
            "imitation_labels": models.config.imitation_labels,
            "variants": rows,
            "wall_s": {name: row["wall_s"] for name, row in rows.items()},
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
