"""The RND ensemble's cost against its size: members vmapped, next to a Python loop over members,
same run.

    python benchmarks/rnd_ensemble.py --quick --json benchmarks/results/rnd_ensemble_quick.json

For N = 1, 4, 8, 16 predictors (:class:`jgtest.novelty.RND`, the default
networks, 64×64 inputs), one step of what an agent does per rollout: the
ensemble's novelty reward of a batch of ``B`` frames (every member's
prediction) and one AdamW update of every member on a minibatch of 64, timed
after a warm-up (compilation excluded), median of the repeats:

* ``vmap, shared backbone``: the library's default (PPGTA: one frozen CNN under
  target and predictors, the members' MLPs stacked and vmapped);
* ``vmap, whole networks``: ``shared_backbone=False`` (every member its own CNN, the
  original RND's networks), vmapped;
* ``python loop``: the shared-backbone ensemble as N separate one-member models,
  each with its own jitted ``raw_reward`` and ``update`` (N dispatches, N backbone passes).

The issue's target: the vmapped cost grows sub-linearly with N (16 members well
under 16× one member).
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

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import parse_args, write_json  # noqa: E402

from jgtest.novelty import RND, RNDConfig  # noqa: E402

MEMBERS = (1, 4, 8, 16)
FULL = {"batch": 256, "repeats": 7}
QUICK = {"batch": 128, "repeats": 3}


def _timed(fn, repeats: int) -> float:
    jax.block_until_ready(fn(0))  # warm-up: compiles
    times = []
    for r in range(repeats):
        begin = time.perf_counter()
        jax.block_until_ready(fn(r + 1))
        times.append(time.perf_counter() - begin)
    return float(np.median(times))


def vmapped(members: int, frames, shared: bool = True):
    rnd = RND(
        RNDConfig(
            members=members, reward="variance" if members > 1 else "error", shared_backbone=shared
        )
    )
    state = rnd.observe(rnd.init(jax.random.key(0)), frames)

    @jax.jit
    def step(state, key):
        reward = rnd.reward(state, frames)
        state, _ = rnd.update(state, key)
        return state, reward

    return lambda r: step(state, jax.random.key(r))


def looped(members: int, frames):
    one = RND(RNDConfig(members=1, reward="error"))
    states = [one.observe(one.init(jax.random.key(m)), frames) for m in range(members)]
    reward, update = jax.jit(one.raw_reward), jax.jit(one.update)

    def call(r):
        outs = []
        for m, state in enumerate(states):
            outs.append(reward(state, frames))
            outs.append(update(state, jax.random.key(r * 1000 + m))[0].predictors)
        return outs

    return call


def main(argv=None) -> dict:
    args = parse_args(__doc__, argv)
    s = QUICK if args.quick else FULL
    frames = jax.random.randint(jax.random.key(1), (s["batch"], 64, 64, 3), 0, 256).astype(np.uint8)
    rows = []
    for n in MEMBERS:
        shared, whole, loop = (
            _timed(fn, s["repeats"])
            for fn in (vmapped(n, frames), vmapped(n, frames, shared=False), looped(n, frames))
        )
        rows.append(
            {
                "members": n,
                "vmap_ms": shared * 1e3,
                "vmap_whole_networks_ms": whole * 1e3,
                "loop_ms": loop * 1e3,
            }
        )
        print(
            f"  N={n:2d}: vmap {shared * 1e3:8.1f} ms, vmap whole networks {whole * 1e3:8.1f} ms, "
            f"python loop {loop * 1e3:8.1f} ms",
            flush=True,
        )
    one, one_whole = rows[0]["vmap_ms"], rows[0]["vmap_whole_networks_ms"]
    for row in rows:
        row["vmap_vs_one_member"] = row["vmap_ms"] / one
        row["vmap_whole_networks_vs_one_member"] = row["vmap_whole_networks_ms"] / one_whole
        row["loop_vs_vmap"] = row["loop_ms"] / row["vmap_ms"]
    print(
        f"\n{'members':>7s} {'vmap ms':>9s} {'× N=1':>7s} {'whole ms':>9s} {'× N=1':>7s} "
        f"{'loop ms':>9s} {'loop / vmap':>11s}"
    )
    for row in rows:
        print(
            f"{row['members']:>7d} {row['vmap_ms']:>9.1f} {row['vmap_vs_one_member']:>7.2f} "
            f"{row['vmap_whole_networks_ms']:>9.1f} "
            f"{row['vmap_whole_networks_vs_one_member']:>7.2f} {row['loop_ms']:>9.1f} "
            f"{row['loop_vs_vmap']:>11.2f}"
        )
    last = rows[-1]
    sublinear = last["vmap_vs_one_member"] < last["members"] / 2
    print(
        f"16 members cost {last['vmap_vs_one_member']:.1f}x one member under vmap (shared "
        "backbone), "
        f"{last['vmap_whole_networks_vs_one_member']:.1f}x with whole networks: "
        f"{'sub-linear' if sublinear else 'NOT sub-linear'} (target: well under 16x)"
    )
    result = {
        "benchmark": "rnd_ensemble",
        "quick": args.quick,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "devices": [str(d) for d in jax.devices()],
        "jax_version": jax.__version__,
        "settings": s,
        "rows": rows,
        "work": "reward of the batch (every member) + one AdamW step of every member "
        "(one minibatch of 64)",
        "sublinear": bool(sublinear),
    }
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
