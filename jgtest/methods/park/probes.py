"""The park's calibration probes: scripted and random players held to PPGTA's figures (§V-C, §VI-A).

``ParkWorld-v0``'s free parameters (:mod:`jgtest.envs.park`) were set with probes playing
:mod:`jgtest.methods.park.inspector`'s campaign: random (held to the paper's random agent,
:data:`TARGETS`), the path follower (to PPGTA's), the walker (the bar of a learned explorer that
walks) and the demonstrator (what PPGTA's demonstrations show). :func:`probe_table` runs them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from jgtest.methods.park import inspector

#: PPGTA's figures each probe is held to (§VI-A, Fig. 7–8) and the calibration's tolerances.
TARGETS = {
    "random": {"ooi_tested_18": (9, 3), "ooi_tested_45": (17, 5)},
    "follower": {"ooi_tested_18_at_least": 192, "pathway_coverage_of_reachable_45_at_least": 0.90},
    "walker": {},
    "demonstrator": {},
}
#: The seeds each probe's mean is taken over (the random agent's count varies with its starts: 0 to
#: 13 by episode 18).
SEEDS = {
    "random": tuple(range(10)),
    "follower": (0, 1, 2),
    "walker": (0, 1, 2),
    "demonstrator": (0, 1, 2),
}


def probe_run(agent: str, seed: int, episodes: int = 45, out_dir: str | Path | None = None) -> dict:
    """One probe campaign's measures: objects tested after 18 and 45 episodes (or ``episodes``),
    pathway coverage (all pathway and the reachable one), successes and wall time."""
    config = inspector.InspectorConfig(agent=agent, episodes=episodes, seed=seed)
    with tempfile.TemporaryDirectory() as scratch:
        summary = inspector.run(config, out_dir or scratch)
    tested, reachable = (
        summary["curves"]["ooi_tested"],
        summary["curves"]["pathway_coverage_of_reachable"],
    )
    at = lambda curve, n: curve[min(n, episodes) - 1]
    return {
        "seed": seed,
        "episodes": episodes,
        "ooi_tested_18": int(at(tested, 18)),
        "ooi_tested_45": int(at(tested, 45)),
        "pathway_coverage_45": float(summary["pathway_coverage"]),
        "pathway_coverage_of_reachable_18": float(at(reachable, 18)),
        "pathway_coverage_of_reachable_45": float(at(reachable, 45)),
        "ooi_success": summary["ooi_success"],
        "ooi_unreachable": summary["ooi_unreachable"],
        "steps_on_pathway": summary["steps_on_pathway"],
        "wall_s": summary["wall_s"],
    }


def probe_table(seeds: dict[str, tuple[int, ...]] = SEEDS, episodes: int = 45, log=print) -> dict:
    """Each probe over its seeds: per-seed runs, the means, and whether the targets hold."""
    out = {}
    for agent, agent_seeds in seeds.items():
        runs = []
        for seed in agent_seeds:
            runs.append(probe_run(agent, seed, episodes))
            log(f"{agent} seed {seed}: {runs[-1]}")
        mean = {
            k: float(np.mean([r[k] for r in runs]))
            for k in runs[0]
            if k not in ("seed", "episodes")
        }
        out[agent] = {
            "runs": runs,
            "mean": mean,
            "targets": TARGETS[agent],
            "holds": holds(agent, mean),
        }
    return out


def holds(agent: str, mean: dict) -> dict[str, bool]:
    """Per target of :data:`TARGETS`, whether the probe's mean meets it."""
    t = TARGETS[agent]
    if not t:
        return {}
    if agent == "random":
        return {k: abs(mean[k] - centre) <= tolerance for k, (centre, tolerance) in t.items()}
    return {
        "ooi_tested_18_at_least": mean["ooi_tested_18"] >= t["ooi_tested_18_at_least"],
        "pathway_coverage_of_reachable_45_at_least": mean["pathway_coverage_of_reachable_45"]
        >= t["pathway_coverage_of_reachable_45_at_least"],
    }
