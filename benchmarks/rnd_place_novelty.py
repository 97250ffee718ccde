"""Does RND's novelty tell a place the agent has not been from one it has? On ParkWorld-v0's frames.

    python benchmarks/rnd_place_novelty.py --json benchmarks/results/rnd_place_novelty.json

A curiosity explorer can only learn to go somewhere new if the frames of unvisited places are more
novel than fresh frames of visited ones. Here the predictor learns as an explorer's does
(:class:`jgtest.novelty.RND`: its buffer of the last 1,024 frames, ``steps`` AdamW steps of 64
frames after each rollout of 5 games × 200 steps, Inspector's campaign,
:mod:`jgtest.methods.park.inspector`) on ``rollouts`` rollouts of random play in one corner of the
park (``ParkWorld.demo_region``); then its raw novelty (:meth:`jgtest.novelty.RND.raw_reward`) is
read on 1,000 fresh frames of random play in that corner (*visited*) and on 1,000 from starts over
the rest of the park (*unvisited*).

Per setting and seed: the two means, their ratio, and the AUC, the chance that an unvisited frame is
more novel than a visited one (0.5: novelty says nothing about the place; Mann-Whitney's U over
n₁n₂). Settings: Inspector's RND (one predictor's error, whole networks) with its 4 predictor steps
a rollout, with 16 (one pass over the rollout's 1,000 frames: Burda et al.'s RND trains on 25% of
them for 4 epochs) and with 64; PPGTA's ensemble (8 members' variance over one frozen backbone; a
random backbone here, where its campaigns use its trained feature extractor) with 4.

The park looks alike everywhere (one grass, one pathway, one tree colour), so the answer is nearly
no: AUC 0.51–0.55. A scratch run (seed 0, 20 rollouts) that tinted each frame by where it was taken
(each colour channel scaled by 1 ± 0.2, a sine of the player's position with a period of 160 cells,
half the park) raised Inspector's AUC at 16 steps from 0.51 to 0.75 (unvisited / visited 1.69) and
the ensemble's from 0.53 to 0.63: novelty can only steer toward new places where places look
different.

Two changes that might have given the park's places their own look to the novelty did not, and were
not kept (scratch runs, this script's settings, seeds 0–2):

* **Districts**: the park cut into 25 Voronoi regions about 64 cells across, each with one of 8
  grass and tree colours (lawns, meadows, dry grass, woods; pines, autumn, blossom, birches),
  neighbours unlike; the pathways, water and objects as before, and visual only (objects' pixels,
  the probes' only reading of a frame, unchanged). The demonstration corner was two thirds one look.
  AUC 0.46, 0.50 and 0.54 for Inspector's RND with 4, 16 and 64 steps, 0.47 for the ensemble:
  whatever the random target's features tell apart here, it is not the grass's colour. The tint
  above changed the sky as well, half of every frame.
* **Observation whitening** (Burda et al.'s per-pixel running mean and standard deviation, clipped
  to ±5; with the districts): AUC 0.53 (0.54, 0.47, 0.57) for Inspector at 16 steps against 0.50
  without, 0.49 for the ensemble. :mod:`jgtest.methods.park.inspector` records what it did to
  Inspector's campaigns.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np
from scipy.stats import mannwhitneyu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import parse_args, write_json  # noqa: E402

from jgtest.envs.registration import make  # noqa: E402
from jgtest.methods.park.inspector import INSPECTOR_RND  # noqa: E402
from jgtest.novelty import RND, RNDConfig  # noqa: E402

NUM_ENVS, ROLLOUT_STEPS = 5, 200
FRAMES = NUM_ENVS * ROLLOUT_STEPS
#: (name, RND settings, predictor steps a rollout)
SETTINGS = (
    ("inspector, 4 steps", INSPECTOR_RND, 4),
    ("inspector, 16 steps", INSPECTOR_RND, 16),
    ("inspector, 64 steps", INSPECTOR_RND, 64),
    ("ppgta ensemble (random backbone), 4 steps", RNDConfig(), 4),
)
FULL = {"rollouts": 20, "seeds": (0, 1, 2)}
QUICK = {"rollouts": 4, "seeds": (0,)}


def random_play(env, params, reset):
    """``frames(key)``: the frames of one rollout of uniform random play, every game from
    ``reset``."""

    def frames(key):
        obs, state = jax.vmap(reset, in_axes=(0, None))(jax.random.split(key, NUM_ENVS), params)

        def step(carry, k):
            _, state = carry
            action = jax.random.randint(k, (NUM_ENVS,), 0, env.num_actions)
            obs, state, *_ = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
                jax.random.split(k, NUM_ENVS), state, action, params
            )
            return (obs, state), obs

        _, out = jax.lax.scan(
            step, (obs, state), jax.random.split(jax.random.fold_in(key, 1), ROLLOUT_STEPS)
        )
        return out.reshape(-1, *out.shape[2:])

    return jax.jit(frames)


def compiled(rnd: RND, steps: int):
    """``(learn, novelty)``, jitted once per setting: a rollout's frames into the buffer then
    ``steps`` predictor steps; the raw novelty of frames."""
    learn = jax.jit(
        lambda state, frames, key: jax.lax.scan(
            lambda s, k: rnd.update(s, k),
            rnd.observe(state, rnd.preprocess(frames)),
            jax.random.split(key, steps),
        )[0]
    )
    return learn, jax.jit(lambda state, frames: rnd.raw_reward(state, rnd.preprocess(frames)))


def measure(
    rnd: RND, learn, novelty, seed: int, rollouts: int, visited_play, unvisited_play
) -> dict:
    """The novelty of visited and unvisited frames after ``rollouts`` rollouts of learning in the
    corner."""
    key = jax.random.key(seed)
    state = rnd.init(jax.random.fold_in(key, 0))
    for r in range(rollouts):
        state = learn(
            state,
            visited_play(jax.random.fold_in(key, 1000 + r)),
            jax.random.fold_in(key, 2000 + r),
        )
    visited = np.asarray(novelty(state, visited_play(jax.random.fold_in(key, 3000))))
    unvisited = np.asarray(novelty(state, unvisited_play(jax.random.fold_in(key, 4000))))
    u = mannwhitneyu(unvisited, visited).statistic
    return {
        "seed": seed,
        "visited": float(visited.mean()),
        "unvisited": float(unvisited.mean()),
        "ratio": float(unvisited.mean() / visited.mean()),
        "auc": float(u / (unvisited.size * visited.size)),
    }


def budget(rollouts: int) -> str:
    """What each setting and seed saw."""
    return (
        f"{rollouts} rollouts of {FRAMES:,} frames of random play to learn on, then {FRAMES:,} "
        f"visited and {FRAMES:,} unvisited frames read, per setting and seed"
    )


def main(argv=None) -> dict:
    args = parse_args(__doc__, argv)
    s = QUICK if args.quick else FULL
    env, params = make("ParkWorld-v0")
    visited_play, unvisited_play = (
        random_play(env, params, env.reset_for_demonstration),
        random_play(env, params, env.reset_env),
    )
    start = time.perf_counter()
    rows = []
    print(
        f"{'setting':>42s} {'seed':>4s} {'visited':>9s} {'unvisited':>9s} {'ratio':>6s} {'AUC':>5s}"
    )
    for name, config, steps in SETTINGS:
        rnd = RND(config)
        learn, novelty = compiled(rnd, steps)
        per_seed = [
            measure(rnd, learn, novelty, seed, s["rollouts"], visited_play, unvisited_play)
            for seed in s["seeds"]
        ]
        for m in per_seed:
            print(
                f"{name:>42s} {m['seed']:>4d} {m['visited']:>9.5f} {m['unvisited']:>9.5f} "
                f"{m['ratio']:>6.3f} {m['auc']:>5.2f}",
                flush=True,
            )
        rows.append(
            {
                "setting": name,
                "rnd": dataclasses.asdict(config),
                "predictor_steps_per_rollout": steps,
                "seeds": per_seed,
                "mean_ratio": float(np.mean([m["ratio"] for m in per_seed])),
                "mean_auc": float(np.mean([m["auc"] for m in per_seed])),
            }
        )
    for row in rows:
        print(
            f"{row['setting']:>42s}: unvisited / visited {row['mean_ratio']:.3f}, AUC "
            f"{row['mean_auc']:.2f}"
        )
    result = {
        "benchmark": "rnd_place_novelty",
        "command": "python benchmarks/rnd_place_novelty.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "jax_version": jax.__version__,
        "game": "ParkWorld-v0",
        "rollouts": s["rollouts"],
        "frames_per_rollout": FRAMES,
        "seeds": list(s["seeds"]),
        "policy": "uniform random",
        "budget": budget(s["rollouts"]),
        "rows": rows,
        "wall_s": time.perf_counter() - start,
    }
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
