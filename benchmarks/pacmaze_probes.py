"""PacMaze beside the real Ms. Pac-Man: the probes its free parameters are calibrated with
(:mod:`jgtest.methods.reline.pacmaze_probes`), twin and real game side by side.

    python benchmarks/pacmaze_probes.py --json benchmarks/results/pacmaze_probes.json

The twin's random player plays 10,000 episodes in one ``jit`` (under a minute); the real game's
1,000 (envpool, about 4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import envpool
import jax

import jgtest
from envs_bridge.ale import MsPacmanEnv
from jgtest.methods.reline.pacmaze_probes import PAPER_RANDOM_GATES, real_side, twin_side


def real_game(num_envs: int, seed: int) -> MsPacmanEnv:
    """The real Ms. Pac-Man as the probes play it: no sticky actions, RAM gates."""
    return MsPacmanEnv(num_envs=num_envs, seed=seed)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--twin-episodes", type=int, default=10_000)
    parser.add_argument("--real-episodes", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    env, params = jgtest.make("PacMaze-v0")
    start = time.perf_counter()
    twin = twin_side(env, params, args.twin_episodes, args.seed)
    twin_s = time.perf_counter() - start
    real = real_side(params, real_game, args.real_episodes, args.seed)
    real_s = time.perf_counter() - start - twin_s
    print(f"{'probe':40s} {'twin':>28s} {'real':>28s}")
    for key in (
        "route_steps",
        "cells_per_moving_step",
        "death_pause_steps",
        "random",
        "walker_round",
    ):
        for name, value in twin[key].items() if isinstance(twin[key], dict) else [(key, twin[key])]:
            other = real[key][name] if isinstance(real[key], dict) else real[key]
            print(f"{name:40s} {str(value):>28s} {str(other):>28s}")
    print(f"paper's random row: {PAPER_RANDOM_GATES}")
    result = {
        "command": " ".join(["python benchmarks/pacmaze_probes.py", *(argv or sys.argv[1:])]),
        "seed": args.seed,
        "twin": twin,
        "real": real,
        "paper_random_gates_at_least_n_per_1000": list(PAPER_RANDOM_GATES),
        "wall_s": {"twin": round(twin_s, 1), "real": round(real_s, 1)},
        "versions": {"jax": jax.__version__, "envpool": envpool.__version__},
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
