"""PPGTA's learned 360° test played closed loop from controlled starts, beside its scripted
demonstrator under the same judge.

    python benchmarks/ppgta_test_policy.py --models runs/models-0 [--seed 0] [--starts 100] \\
        [--fe efficientnet-lite0] --json benchmarks/results/ppgta_test_policy_s0.json

``--fe`` and ``--fe-tuning`` choose the models' frame encoder
(:class:`jgtest.methods.park.models.PPGTAModelsConfig`); the starts depend on ``--seed`` alone,
so runs with each encoder test the same objects from the same starts.

A campaign's test succeeds when the JS divergence between the histogram of the actions it executed
and that of all the 360° demonstrations is below the models' threshold (§VI-B). How often the
learned test passes depends on where tests start, which a campaign does not control. This script
plays ``--starts`` tests of each kind of start, each in front of a reachable object:

* ``near``: 2–3 cells off, the yaw up to 0.6 rad off facing it;
* ``farther``: 3–4 cells off, the same yaw;
* ``wider``: 2–3 cells off, the yaw 0.6–0.8 rad off facing it (the 90° view's edge is 0.785).

The 360° demonstrations start anywhere in these
(:data:`jgtest.envs.park_experts.CIRCLE_START_DISTANCE`,
:data:`jgtest.envs.park_experts.CIRCLE_START_YAW`). A campaign's test starts when an untested object
first shows ``trigger_pixels`` pixels; the trigger table (pixels an object shows at each distance,
faced and 0.5 rad off) shows where that happens, so these kinds bracket it. Three players act from
the same starts for the models' ``circle_steps`` steps:

* ``learned``: the circle imitation policy as a campaign plays it
  (:class:`jgtest.methods.park.ppgta.PPGTACampaign`: frames OD-masked as the explorer's, the first
  frame repeated to fill the window, an empty memory, actions sampled);
* ``expert``: the scripted 360° walk without noise (:func:`jgtest.envs.park_experts.circle_action`);
* ``expert-noisy``: the same with the demonstrations' noise
  (:data:`jgtest.envs.park_experts.DEMONSTRATION_EPSILON`).

It prints and writes, per player and kind, the share of tests passing under each JS threshold rule
(:func:`jgtest.agents.imitation.js_threshold`), the JS divergence's quartiles and the mean action
shares; and, for the learned test's failures and successes, how they moved: the share of steps
pressing forward, the share with the object in view, and the share that walked through the object
(within ``THROUGH`` cells of its centre; objects do not block).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

from jgtest.envs.park import FORWARD  # noqa: E402
from jgtest.envs.park_experts import (
    DEMONSTRATION_EPSILON,
    circle_action,
    object_in_view,
    start_near,
)  # noqa: E402
from jgtest.frames import od_mask  # noqa: E402
from jgtest.methods.park import ppgta  # noqa: E402
from jgtest.novelty.preference import js_divergence  # noqa: E402

#: Each kind of start: the distance from the object (cells) and the yaw's offset from facing it
#: (radians, either side).
START_KINDS = {
    "near": ((2.0, 3.0), (0.0, 0.6)),
    "farther": ((3.0, 4.0), (0.0, 0.6)),
    "wider": ((2.0, 3.0), (0.6, 0.8)),
}
PLAYERS = ("learned", "expert", "expert-noisy")
#: A test walked through its object when it came this close to the object's centre (cells).
THROUGH = 0.5
#: Distances (cells) of the trigger table.
TRIGGER_DISTANCES = (2.0, 2.5, 3.0, 3.5, 4.0, 4.5)


def draw_starts(campaign, rng: np.random.Generator, num: int, distance, yaw_offset):
    """``num`` states, each ``distance`` (a range) cells from a reachable object, its yaw off facing
    it by ``yaw_offset`` (a range, a random side); and the objects, ``int32[num]``."""
    env, params = campaign.env, campaign.params
    targets = rng.choice(np.flatnonzero(env.ooi_reachable(params)), num)
    states = []
    for target in targets:
        state = start_near(
            env,
            params,
            jnp.int32(target),
            jax.random.key(int(rng.integers(2**31))),
            float(rng.uniform(*distance)),
        )
        states.append(
            state.replace(yaw=state.yaw + rng.choice([-1.0, 1.0]) * rng.uniform(*yaw_offset))
        )
    return jax.tree.map(lambda *x: jnp.stack(x), *states), jnp.asarray(targets, jnp.int32)


def make_play(campaign, player: str, steps: int):
    """A jitted ``play(states, targets, key)``: ``steps`` steps of ``player`` from each state,
    returning the executed actions' counts ``[N, A]``, the distance to the object ``[N, T]`` and
    whether it was in view ``[N, T]``."""
    env, params, policy = campaign.env, campaign.params, campaign.policy
    circle = campaign.models.policies["circle"]
    see = jax.vmap(lambda s: env.observe(s, params))

    def features(frames, info):
        return campaign.encode("circle", jax.vmap(od_mask)(frames, campaign.od_boxes(frames, info)))

    @jax.jit
    def play(states, targets, key):
        n = targets.shape[0]
        window = jnp.repeat(features(*see(states))[:, None], campaign.k, axis=1)

        def body(loop, k):
            states, window, carry, counts = loop
            k_act, k_step = jax.random.split(k)
            if player == "learned":
                logits, _, carry = policy.apply(circle, window, carry, method="step")
                action = jax.random.categorical(k_act, logits)
            else:
                epsilon = 0.0 if player == "expert" else DEMONSTRATION_EPSILON
                action = jax.vmap(lambda s, t, kk: circle_action(params, s, t, kk, epsilon))(
                    states, targets, jax.random.split(k_act, n)
                )
            step = lambda s, a, kk: env.step_env(kk, s, a, params)
            frames, states, _, _, info = jax.vmap(step)(states, action, jax.random.split(k_step, n))
            if player == "learned":
                window = jnp.concatenate([window[:, 1:], features(frames, info)[:, None]], axis=1)
            distance = jnp.linalg.norm(states.pos - params.ooi_pos[targets], axis=-1)
            pixels = jax.vmap(lambda objects, t: object_in_view(objects, t)[1])(
                info["objects"], targets
            )
            return (states, window, carry, counts + jax.nn.one_hot(action, env.num_actions)), (
                distance,
                pixels >= env.min_visible_pixels,
            )

        init = (states, window, policy.initial_carry(n), jnp.zeros((n, env.num_actions)))
        (_, _, _, counts), (distance, in_view) = jax.lax.scan(
            body, init, jax.random.split(key, steps)
        )
        return counts, distance.T, in_view.T

    return play


def anatomy(counts, distance, in_view, picked) -> dict:
    """How the ``picked`` tests moved: forward's share of their steps, the object's share of steps
    in view, the share that walked through the object."""
    if not picked.any():
        return {"tests": 0}
    return {
        "tests": int(picked.sum()),
        "forward_share": float(counts[picked, FORWARD].sum() / counts[picked].sum()),
        "in_view_share": float(in_view[picked].mean()),
        "walked_through": float((distance[picked].min(axis=1) < THROUGH).mean()),
    }


def trigger_table(campaign, rng: np.random.Generator, num: int) -> list[dict]:
    """Per distance, the share of ``num`` reachable objects showing ``trigger_pixels`` pixels, faced
    and 0.5 rad off."""
    env, params, trigger = campaign.env, campaign.params, campaign.config.trigger_pixels
    pixels = jax.jit(lambda s, t: object_in_view(env.observe(s, params)[1]["objects"], t)[1])
    rows = []
    for distance in TRIGGER_DISTANCES:
        states, targets = draw_starts(campaign, rng, num, (distance, distance), (0.0, 0.0))
        shown = {
            off: np.asarray(jax.vmap(pixels)(states.replace(yaw=states.yaw + off), targets))
            for off in (0.0, 0.5)
        }
        rows.append(
            {
                "distance": distance,
                "faced": float((shown[0.0] >= trigger).mean()),
                "off_0.5_rad": float((shown[0.5] >= trigger).mean()),
                "median_pixels_faced": float(np.median(shown[0.0])),
            }
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        type=Path,
        required=True,
        metavar="DIR",
        help="the seed's PPGTA models (trained there when missing)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the models' seed; the starts are drawn from it too"
    )
    parser.add_argument("--starts", type=int, default=100, help="tests of each kind of start")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--note", help="a note for the results file (which models MODELS were)")
    parser.add_argument("--fe", default="scratch", help="the models' frame encoder (scratch)")
    parser.add_argument(
        "--fe-tuning", default="frozen", help="a pretrained encoder's trunk (frozen)"
    )
    args = parser.parse_args(argv)
    if args.starts < 1:
        parser.error(f"--starts must be at least 1, got {args.starts}")

    from jgtest.methods.park.console import models_config, models_for

    settings = models_config({}, False, args.seed, fe=args.fe, fe_tuning=args.fe_tuning)
    models = models_for(settings, args.models)
    campaign = ppgta.PPGTACampaign(ppgta.PPGTAConfig(seed=args.seed, models=settings), models)
    thresholds, reference = models.js["circle"]["thresholds"], models.js["circle"]["reference"]
    steps, start = settings.circle_steps, time.perf_counter()
    rng = np.random.default_rng(args.seed)
    starts = {
        kind: draw_starts(campaign, rng, args.starts, *ranges)
        for kind, ranges in START_KINDS.items()
    }
    results = {}
    for player in PLAYERS:
        play = make_play(campaign, player, steps)
        results[player] = {}
        for kind, (states, targets) in starts.items():
            counts, distance, in_view = (
                np.asarray(x) for x in play(states, targets, jax.random.key(args.seed + 1))
            )
            js = np.asarray(js_divergence(jnp.asarray(counts), reference[None]))
            passed = js < models.js["circle"]["threshold"]
            row = {
                "success_by_rule": {rule: float((js < t).mean()) for rule, t in thresholds.items()},
                "js_quartiles": np.percentile(js, [25, 50, 75]).round(4).tolist(),
                "action_shares": (counts.sum(0) / counts.sum()).round(4).tolist(),
            }
            if player == "learned":
                row.update(
                    failed=anatomy(counts, distance, in_view, ~passed),
                    passed=anatomy(counts, distance, in_view, passed),
                )
            results[player][kind] = row
            print(
                f"{player:13s} {kind:15s} "
                + "  ".join(f"{rule} {v:.0%}" for rule, v in row["success_by_rule"].items())
                + f"  JS median {row['js_quartiles'][1]:.3f}",
                flush=True,
            )
    triggers = trigger_table(campaign, rng, args.starts)
    for row in triggers:
        print(
            f"at {row['distance']} cells: {row['faced']:.0%} of objects faced show "
            f"{campaign.config.trigger_pixels} pixels, {row['off_0.5_rad']:.0%} at 0.5 rad off"
        )
    write_json(
        args.json,
        {
            "benchmark": "ppgta_test_policy",
            "command": "python benchmarks/ppgta_test_policy.py --models MODELS "
            f"--seed {args.seed} --starts {args.starts}"
            + ("" if args.fe == "scratch" else f" --fe {args.fe} --fe-tuning {args.fe_tuning}"),
            "fe": args.fe,
            "fe_tuning": args.fe_tuning,
            "seeds": [args.seed],
            "starts_per_kind": args.starts,
            "budget": f"{args.starts} tests of {steps} steps per player and kind of start",
            "test_steps": steps,
            "rule": models.js["circle"]["rule"],
            "js_thresholds": thresholds,
            "start_kinds": {
                kind: {"distance": list(d), "yaw_offset": list(y)}
                for kind, (d, y) in START_KINDS.items()
            },
            "reference": np.asarray(reference).round(4).tolist(),
            "players": results,
            "trigger_pixels": campaign.config.trigger_pixels,
            "triggers": triggers,
            "walked_through_within": THROUGH,
            "models_wall_s": json.loads((args.models / "models.json").read_text())["metrics"].get(
                "wall_s"
            ),
            "wall_s": round(time.perf_counter() - start, 1),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            **({"note": args.note} if args.note else {}),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
