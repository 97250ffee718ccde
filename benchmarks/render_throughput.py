"""ParkWorld-v0 frames per second on device, against batch size and resolution.

    python benchmarks/render_throughput.py --quick --json
    benchmarks/results/render_throughput_quick.json

For each resolution (64×64, 128×128) and batch size B (1 … 256): one jitted call
of ``K`` steps of ``B`` games (``lax.scan`` over steps, ``vmap`` over games,
random actions), each step rendering every game's frame (ray-cast walls, floor,
the nearest objects as billboards), timed after a warm-up call (compilation
excluded), median of the repeats. A row reports frames per second (``B·K`` frames
per call) and the step's milliseconds. The issue's target: thousands of frames
per second on 2 CPU cores at batch ≥ 64 (64×64).
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

import jgtest  # noqa: E402

FULL = {"batches": (1, 8, 64, 128, 256), "resolutions": (64, 128), "steps": 50, "repeats": 5}
QUICK = {"batches": (1, 64, 128), "resolutions": (64, 128), "steps": 20, "repeats": 3}
TARGET_FPS, TARGET_BATCH = 1000, 64


def make_run(env, params, batch: int, steps: int):
    """A jitted ``run(key) -> frames checksum``: ``steps`` steps of ``batch`` games, random
    actions."""

    def one(key):
        k_reset, k_run = jax.random.split(key)
        _, state = env.reset(k_reset, params)

        def body(state, k):
            k_act, k_step = jax.random.split(k)
            obs, state, *_ = env.step(
                k_step, state, jax.random.randint(k_act, (), 0, env.num_actions), params
            )
            return state, obs.astype(np.float32).mean()

        _, means = jax.lax.scan(body, state, jax.random.split(k_run, steps))
        return means.sum()

    return jax.jit(lambda key: jax.vmap(one)(jax.random.split(key, batch)).sum())


def main(argv=None) -> dict:
    args = parse_args(__doc__, argv)
    s = QUICK if args.quick else FULL
    rows = []
    for res in s["resolutions"]:
        env, params = jgtest.make("ParkWorld-v0", res=res)
        for batch in s["batches"]:
            run = make_run(env, params, batch, s["steps"])
            begin = time.perf_counter()
            jax.block_until_ready(run(jax.random.key(0)))
            compile_s = time.perf_counter() - begin
            times = []
            for r in range(s["repeats"]):
                begin = time.perf_counter()
                jax.block_until_ready(run(jax.random.key(r + 1)))
                times.append(time.perf_counter() - begin)
            seconds = float(np.median(times))
            fps = batch * s["steps"] / seconds
            rows.append(
                {
                    "resolution": res,
                    "batch": batch,
                    "steps": s["steps"],
                    "seconds": seconds,
                    "frames_per_s": fps,
                    "ms_per_step": seconds / s["steps"] * 1e3,
                    "compile_s": compile_s,
                }
            )
            print(
                f"  {res}x{res}  B={batch:4d}: {fps:9,.0f} frames/s  "
                f"({seconds / s['steps'] * 1e3:7.2f} ms a batch step)",
                flush=True,
            )
    print(f"\n{'resolution':>10s} {'batch':>6s} {'frames/s':>10s} {'ms/step':>9s}")
    for row in rows:
        print(
            f"{row['resolution']:>7d}px {row['batch']:>6d} {row['frames_per_s']:>10,.0f} "
            f"{row['ms_per_step']:>9.2f}"
        )
    at_target = [r for r in rows if r["resolution"] == 64 and r["batch"] >= TARGET_BATCH]
    met = bool(at_target) and min(r["frames_per_s"] for r in at_target) >= TARGET_FPS
    print(
        f"64x64 at batch >= {TARGET_BATCH}: {'at least' if met else 'below'} {TARGET_FPS:,} "
        "frames/s"
    )
    result = {
        "benchmark": "render_throughput",
        "quick": args.quick,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "devices": [str(d) for d in jax.devices()],
        "jax_version": jax.__version__,
        "settings": s,
        "rows": rows,
        "target": {"frames_per_s": TARGET_FPS, "batch_at_least": TARGET_BATCH, "met": met},
    }
    write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
