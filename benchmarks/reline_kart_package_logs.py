"""The frame times RELINE's replication package logged on the real SuperTuxKart, per agent: the
figures the kart twin's render field is fitted to (RELINE §4, Table 2).

    python benchmarks/reline_kart_package_logs.py --package PATH/TO/rlgameauthors \\
        --json benchmarks/results/reline_kart_package_logs.json

``PATH/TO/rlgameauthors`` is a checkout of the package (``github.com/rlgameauthors/rlgameauthors``):
its ``SuperTuxKart/FPS_info_{RELINE,RL-baseline,Random}.xlsx`` hold each agent's 1,000 counted
episodes, one column of frame times (ms) an episode, and ``300episodes_RL-baseline_agent.xlsx``
the 300 calibration episodes ``t_b`` is measured on. For each log: its episodes and steps, the
frame times' mean, sd and quantiles, the share of steps above the package's ``t`` and each
agent's share over the random agent's, how frame times move along an episode (the mean by tenth
of the episode's steps) and across the episodes (the mean by tenth of the episodes: the load's
drift).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from jgtest.methods.reline.kart_probes import frame_figures

#: The logs, by agent, under the package's ``SuperTuxKart/``.
LOGS = {
    "reline": "FPS_info_RELINE.xlsx",
    "rl-baseline": "FPS_info_RL-baseline.xlsx",
    "random": "FPS_info_Random.xlsx",
    "calibration": "300episodes_RL-baseline_agent.xlsx",
}
#: The package's threshold ``t`` for a low-FPS point (ms).
PACKAGE_THRESHOLD_MS = 18.36
#: Low-FPS points the paper reports per agent (Table 2: RELINE, rl-baseline, random).
PAPER_POINTS = {"reline": 173, "rl-baseline": 33, "random": 90}


def read_log(path: Path) -> np.ndarray:
    """``float[steps, episodes]`` frame times (ms), NaN past an episode's end."""
    import pandas as pd

    return pd.read_excel(path).to_numpy(dtype=float)


def by_tenths(values: list[np.ndarray]) -> list[float]:
    """The mean of each tenth of the concatenated ``values`` (in order), ms."""
    return [round(float(np.mean(part)), 3) for part in np.array_split(np.concatenate(values), 10)]


def summary(times: np.ndarray) -> dict:
    """One log's figures (module docstring), the kart probes' own
    (:func:`jgtest.methods.reline.kart_probes.frame_figures`) with the log's episode lengths and
    drift across episodes."""
    episodes = [col[~np.isnan(col)] for col in times.T]
    lengths = np.array([len(e) for e in episodes])
    figures = frame_figures(np.nan_to_num(times.T), ~np.isnan(times.T), PACKAGE_THRESHOLD_MS)
    return {
        "episodes": len(episodes),
        "steps": figures["steps"],
        "steps_per_episode": {
            "mean": round(float(lengths.mean()), 1),
            "min": int(lengths.min()),
            "max": int(lengths.max()),
        },
        "frame_ms": figures["frame_ms"],
        "share_above_package_t": figures["share_above_t"],
        "mean_by_tenth_of_episode": figures["mean_by_tenth_of_episode"],
        "mean_by_tenth_of_episodes": by_tenths(episodes),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, required=True, help="a checkout of the package")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    folder = args.package / "SuperTuxKart"
    missing = [name for name in LOGS.values() if not (folder / name).exists()]
    if missing:
        raise SystemExit(
            f"{folder}: no {', '.join(missing)} (is --package the package's checkout?)"
        )
    start = time.perf_counter()
    logs = {agent: summary(read_log(folder / name)) for agent, name in LOGS.items()}
    random_share = logs["random"]["share_above_package_t"]
    for agent in PAPER_POINTS:
        logs[agent]["share_over_random"] = round(
            logs[agent]["share_above_package_t"] / random_share, 3
        )
    print(f"{'log':12s} {'steps':>8s} {'mean ms':>8s} {'median':>7s} {'> t':>7s} {'/ random':>9s}")
    for agent, row in logs.items():
        print(
            f"{agent:12s} {row['steps']:8,d} {row['frame_ms']['mean']:8.2f} "
            f"{row['frame_ms']['quantiles_5_25_50_75_95'][2]:7.2f} "
            f"{row['share_above_package_t']:7.1%} {row.get('share_over_random', float('nan')):9.3f}"
        )
    result = {
        "command": " ".join(
            ["python benchmarks/reline_kart_package_logs.py", *(argv or sys.argv[1:])]
        ),
        "package": "github.com/rlgameauthors/rlgameauthors, SuperTuxKart/ (commit 7869bb2)",
        "package_threshold_ms": PACKAGE_THRESHOLD_MS,
        "paper_low_fps_points": PAPER_POINTS,
        "logs": logs,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
