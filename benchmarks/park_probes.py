"""ParkWorld-v0's calibration probes against PPGTA's numbers (:mod:`jgtest.methods.park.probes`).

    python benchmarks/park_probes.py --json benchmarks/results/park_probes.json

The random agent over seeds 0–9, the scripted path follower, the walker and the demonstrator over
seeds 0–2, each a 45-episode campaign of 2,000 steps (5 games a round, the learned agents' starts);
per seed and as means: objects tested after 18 and 45 episodes, pathway coverage (all pathway and
the reachable one) and wall time, beside the targets (the paper's random agent: 9 and 17; the
follower must reach PPGTA's 192 objects by episode 18 and 90% of the reachable pathway; the walker
and the demonstrator have none). ``--quick``: one seed each, 10 episodes.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
).strip()

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import parse_args, write_json  # noqa: E402

from jgtest.methods.park import probes  # noqa: E402


def main(argv=None) -> dict:
    args = parse_args(__doc__, argv)
    seeds, episodes = (
        ({agent: (0,) for agent in probes.SEEDS}, 10) if args.quick else (probes.SEEDS, 45)
    )
    start = time.perf_counter()
    table = probes.probe_table(seeds, episodes)
    for agent, row in table.items():
        mean = row["mean"]
        print(
            f"{agent:12s} tested after 18: {mean['ooi_tested_18']:6.1f}  after 45: "
            f"{mean['ooi_tested_45']:6.1f}  "
            f"coverage of reachable pathway at 45: {mean['pathway_coverage_of_reachable_45']:.1%}  "
            f"targets: {row['holds']}"
        )
    result = {
        "benchmark": "park_probes",
        "command": "python benchmarks/park_probes.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "episodes": episodes,
        "episode_steps": 2000,
        "seeds": {k: list(v) for k, v in seeds.items()},
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "wall_s": round(time.perf_counter() - start, 1),
        "paper": {
            "random": {"ooi_tested_18": 9, "ooi_tested_45": 17},
            "ppgta": {"pathway_coverage_45": 0.80, "ooi_tested_18": 192},
        },
        "probes": table,
    }
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
