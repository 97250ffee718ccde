"""How long PPGTA's path policy keeps to the pathways: closed loop for a whole episode, beside the
demonstrator it imitates.

    python benchmarks/ppgta_path_keeping.py --models MODELS [--walks 20] [--steps 2000] \\
        --json benchmarks/results/ppgta_path_keeping.json

The path imitation learns from demonstrations of ``path_steps`` steps (200 for the committed models;
the paper's are "2 minutes", §V-B) and initialises an explorer that plays episodes of 2,000
(:mod:`jgtest.methods.park.models`, :mod:`jgtest.methods.park.ppgta`). The models' own
``path_closed_loop`` measures the policy over walks as long as the demonstrations; this plays
``--walks`` walks of ``--steps`` steps from the demonstrations' starts (``ParkWorld.demo_region``,
one key for both players) with:

* the **path policy** (the models' path imitation, its actions sampled as the explorer's are,
  :func:`jgtest.agents.imitation.driver`), the path follower labelling each state it visits;
* the **demonstrator** (the path follower with the demonstrations' noise,
  :data:`jgtest.envs.park_experts.DEMONSTRATION_EPSILON`; no memory).

Per player: the share of steps on a pathway, overall and per ``--block`` steps, and the path
policy's agreement with the follower on and off a pathway
(:func:`jgtest.methods.park.models.path_keeping`). ``MODELS`` is what ``jgtest run ppgta
--ppgta-models MODELS`` trains (trained there first when missing).

The policy's actions are sampled, as an explorer's: played greedily (its most likely action at every
step; a scratch run on the committed seed-0 models, the same 20 walks) it kept to a pathway on 14.4%
of its steps against 50.7%, falling from 21% in its first 250 steps to 5% in its last: what it does
most often off a pathway, it then does always.

What a pixel policy can see at the start (a scratch count over 400 evaluation starts, the renderer's
pathway, grass and water drawn in pure red, green and blue so that no contrast is lost to the
colours): half the starts are more than 11 cells from a pathway, and from 39% of them no pathway
shows a single pixel in any of the 12 headings a player can face (a pathway shows from 91% of the
starts 10–15 cells off it, from 1% of those 15–20 off). The demonstrator heads for the nearest
pathway by the map from anywhere; its imitation has to find one first.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

from jgtest.agents import imitation  # noqa: E402
from jgtest.envs.park_experts import DEMONSTRATION_EPSILON, demonstrations  # noqa: E402
from jgtest.envs.registration import make  # noqa: E402
from jgtest.methods.park.models import path_keeping  # noqa: E402


def by_block(on_path: np.ndarray, block: int) -> list[float]:
    """The share of steps on a pathway in each run of ``block`` steps (``on_path [walks,
    steps]``)."""
    steps = on_path.shape[1] // block * block
    return [
        round(float(x), 4)
        for x in on_path[:, :steps].reshape(on_path.shape[0], -1, block).mean(axis=(0, 2))
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        type=Path,
        required=True,
        metavar="DIR",
        help="PPGTA's models (trained there when missing)",
    )
    parser.add_argument(
        "--models-seed", type=int, default=0, help="the seed the models are (or were) trained with"
    )
    parser.add_argument("--walks", type=int, default=20)
    parser.add_argument(
        "--steps", type=int, default=2000, help="steps a walk (default: an episode's)"
    )
    parser.add_argument(
        "--block", type=int, default=250, help="steps a block of the on-pathway curve"
    )
    parser.add_argument("--seed", type=int, default=0, help="the walks' key")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    if min(args.walks, args.steps, args.block) < 1 or args.block > args.steps:
        parser.error(
            "--walks, --steps and --block must be at least 1 and --block at most --steps, got "
            f"{args.walks}, {args.steps}, {args.block}"
        )

    from jgtest.methods.park.console import models_config, models_for

    settings = models_config({}, quick=False, seed=args.models_seed)
    models = models_for(settings, args.models)
    env, params = make("ParkWorld-v0", **models.config.game_kwargs)
    policy = imitation.driver(models.config.imitation(env.num_actions), models.policies["path"])
    key = jax.random.key(args.seed)
    players = {
        "path_policy": lambda: demonstrations(
            env, params, key, "path", args.walks, args.steps, driver=policy
        ),
        "demonstrator": lambda: demonstrations(
            env, params, key, "path", args.walks, args.steps, DEMONSTRATION_EPSILON
        ),
    }
    rows = {}
    for name, play in players.items():
        start = time.perf_counter()
        walks = {
            k: np.asarray(v) for k, v in play().items() if k in ("on_path", "actions", "intended")
        }
        # the demonstrator's agreement with the follower is only its noise's complement: its share
        # on a pathway alone
        keeping = (
            path_keeping(walks)
            if name == "path_policy"
            else {"on_path": round(float(walks["on_path"].mean()), 4)}
        )
        rows[name] = {
            **keeping,
            "on_path_by_block": by_block(walks["on_path"], args.block),
            "wall_s": round(time.perf_counter() - start, 1),
        }
        print(
            f"{name:13s} on a pathway {rows[name]['on_path']:.1%}  by {args.block} steps "
            f"{rows[name]['on_path_by_block']}  ({rows[name]['wall_s']:.0f} s)",
            flush=True,
        )
    write_json(
        args.json,
        {
            "benchmark": "ppgta_path_keeping",
            "command": "python benchmarks/ppgta_path_keeping.py --models MODELS "
            f"--models-seed {args.models_seed} "
            f"--walks {args.walks} --steps {args.steps} --block {args.block} --seed {args.seed}",
            "seeds": [args.seed],
            "models_seed": args.models_seed,
            "walks": args.walks,
            "steps": args.steps,
            "block": args.block,
            "demonstration_steps": models.config.path_steps,
            "demonstration_epsilon": DEMONSTRATION_EPSILON,
            "budget": f"{args.walks} walks of {args.steps:,} steps a player, from the same starts",
            "models_path_closed_loop": models.metrics.get("path_closed_loop"),
            "players": rows,
            "wall_s": {name: row["wall_s"] for name, row in rows.items()},
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
