"""Inspector against the random agent exploring a real Doom level, over seeds: coverage of the
walkable area and things tested (PPGTA's comparison, §VI-A, on ``vizdoom:freedoom2/MAP01``).

    python benchmarks/level_explorers.py --episodes 20 --episode-steps 1000 --seeds 0 1 2 \\
        --json benchmarks/results/level_explorers_freedoom2_map01.json

Each seed runs both agents (:mod:`jgtest.methods.park.level_campaign`) over the same episode starts
(the campaign's seed): Inspector learning as it goes, the random agent, both with the 360° walk.
Printed and written: per seed and agent, the coverage of the walkable area and the things tested
after the last episode, their means, whether Inspector covered more than random on every seed,
and the wall time of each campaign. The paper's figures on its park are beside them for scale
(Inspector 16% of the pathway after 45 episodes; random's coverage is not given, its objects
tested 17 after 45).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
).strip()

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

from jgtest.methods.park.level_campaign import LevelExplorationConfig, run  # noqa: E402

#: PPGTA's Fig. 7 and 8 on its park (§VI-A), for scale.
PAPER = {"inspector_coverage_45": 0.16, "inspector_tested_45": 40, "random_tested_45": 17}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="vizdoom:freedoom2/MAP01")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--episode-steps", type=int, default=1000)
    parser.add_argument("--num-envs", type=int, default=5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    runs = {"inspector": [], "random": []}
    for seed in args.seeds:
        for agent in runs:
            config = LevelExplorationConfig(
                game=args.game,
                agent=agent,
                episodes=args.episodes,
                num_envs=args.num_envs,
                episode_steps=args.episode_steps,
                seed=seed,
            )
            with tempfile.TemporaryDirectory() as out:
                summary = run(config, out)
            runs[agent].append(
                {
                    k: summary[k]
                    for k in (
                        "seed",
                        "coverage_walkable",
                        "tested",
                        "tested_succeeded",
                        "ppo_updates",
                        "wall_s",
                    )
                }
                | {
                    "coverage_curve": summary["curves"]["coverage_walkable"],
                    "tested_curve": summary["curves"]["tested"],
                }
            )
            row = runs[agent][-1]
            print(
                f"seed {seed} {agent:10s} coverage {row['coverage_walkable']:6.1%}  tested "
                f"{row['tested']:3d} "
                f"({row['tested_succeeded']} walks completed)  {row['wall_s']:.0f} s",
                flush=True,
            )
    means = {
        agent: {
            "coverage_walkable": statistics.mean(r["coverage_walkable"] for r in rows),
            "tested": statistics.mean(r["tested"] for r in rows),
        }
        for agent, rows in runs.items()
    }
    beats = all(
        i["coverage_walkable"] > r["coverage_walkable"]
        for i, r in zip(runs["inspector"], runs["random"])
    )
    print(f"{'agent':12s}{'coverage (mean)':>18s}{'tested (mean)':>16s}")
    for agent, m in means.items():
        print(f"{agent:12s}{m['coverage_walkable']:>18.1%}{m['tested']:>16.1f}")
    print(f"Inspector covers more than random on every seed: {beats}")
    command = (
        f"python benchmarks/level_explorers.py --game {args.game} --episodes {args.episodes} "
        f"--episode-steps {args.episode_steps} "
        f"--num-envs {args.num_envs} --seeds {' '.join(map(str, args.seeds))}"
    )
    write_json(
        args.json,
        {
            "command": command,
            "game": args.game,
            "episodes": args.episodes,
            "episode_steps": args.episode_steps,
            "num_envs": args.num_envs,
            "seeds": args.seeds,
            "runs": runs,
            "means": means,
            "inspector_beats_random_on_coverage_every_seed": beats,
            "paper_park": PAPER,
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
