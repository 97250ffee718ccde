"""Shrinking bug records on device: the vmapped delta debugger against one candidate a call, same
records, same run.

    python benchmarks/shrink.py --quick --json benchmarks/results/shrink_quick.json

For every on-device twin with bugs, a campaign finds records: the random campaign (16 slots ×
``--steps`` steps, seed 0), and on CartPoleBugs-v0 also RELINE's (its quick Table 1 settings, six
models, 100 evaluation episodes each: the agent whose long, balanced episodes reach the buggy
places, a record per model and bug, so up to 12; the random agent's records there are short already:
a random episode that reaches |x| ≥ 0.45 does so within about 60 steps, and no trace from rest gets
there in under about 37 without dropping its pole, so no shrinker takes them much below two thirds).
Up to ``--records`` records a game are shrunk twice (:func:`jgtest.report.shrink.shrink_record`):

* ``vmapped``: each ddmin round's candidates replay together, 64 a jitted call;
* ``one at a time``: the same ddmin, each candidate its own call (a batch of one), stopping a
  round at the first that reproduces.

Both give the same traces (checked, ``same_traces``). Each game's functions are compiled before the
clock starts (every record shrunk once each way, not timed: a campaign's records of a game share a
handful of shapes, so compilation is paid once a game, not once a record). Reported per game:
records, the mean length before and after, the mean ratio after / before, each way's seconds and
records per second, and the speed-up. Two ratios: ``length_ratio``, the mean length after over the
mean length before (how much shorter the records are, together: the figure a "mean shrunk length at
most a quarter of the original" is read against), and ``mean_ratio``, the mean of each record's own
ratio (which the short records weigh as much as the long ones); ``games`` gives ``length_ratio``
over all of a game's records.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
).strip()

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import write_json  # noqa: E402

import jgtest  # noqa: E402
from jgtest.methods import random_testing  # noqa: E402
from jgtest.records import read_bug_records  # noqa: E402
from jgtest.report.shrink import shrink_record  # noqa: E402

#: RELINE models trained for CartPole records (each records the first firing of each of the 2 bugs).
RELINE_MODELS = 6


def random_records(game: str, steps: int, directory: Path) -> list:
    config = random_testing.RandomCampaignConfig(
        game=game, num_envs=16, steps_per_env=steps, chunk_steps=steps, seed=0
    )
    directory.mkdir(parents=True, exist_ok=True)
    random_testing.run(config, directory)
    return read_bug_records(directory / "bugs.jsonl")


def reline_records(directory: Path) -> list:
    """RELINE's records on CartPoleBugs-v0: six models, its quick settings."""
    from jgtest.methods.reline.campaign import run
    from jgtest.methods.reline.config import RelineConfig

    directory.mkdir(parents=True, exist_ok=True)
    run(
        RelineConfig(
            game="CartPoleBugs-v0",
            models=RELINE_MODELS,
            eval_episodes=100,
            agents=("reline",),
            quick=True,
        ),
        directory,
    )
    return read_bug_records(directory / "bugs.jsonl")


def timed(records: list, batched: bool) -> tuple[float, list]:
    start = time.perf_counter()
    shrunk = [shrink_record(r, batched=batched) for r in records]
    return time.perf_counter() - start, shrunk


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="4 records a game from 200-step campaigns"
    )
    parser.add_argument(
        "--records", type=int, default=None, help="records a game (default 12; 4 with --quick)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps a slot of the random campaigns (default 1000; 200 with --quick)",
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    per_game = args.records or (4 if args.quick else 12)
    steps = args.steps or (200 if args.quick else 1000)
    games = [g for g in jgtest.registered_games() if jgtest.make(g)[0].num_bugs]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sources = [(g, "random", random_records(g, steps, Path(tmp) / g)) for g in games]
        sources.append(("CartPoleBugs-v0", "reline", reline_records(Path(tmp) / "reline")))
        for game, campaign, found in sources:
            records = found[:per_game]
            if not records:
                rows.append({"game": game, "campaign": campaign, "records": 0})
                continue
            for batched in (True, False):  # every call's shape compiled before the clock starts
                for record in records:
                    shrink_record(record, batched=batched)
            vmapped_s, shrunk = timed(records, True)
            single_s, shrunk_single = timed(records, False)
            before = np.array([len(r.actions) for r in records])
            after = np.array([len(r.trace_min) for r in shrunk])
            rows.append(
                {
                    "game": game,
                    "campaign": campaign,
                    "records": len(records),
                    "mean_length_before": float(before.mean()),
                    "mean_length_after": float(after.mean()),
                    "length_ratio": float(after.sum() / before.sum()),
                    "mean_ratio": float(np.mean(after / before)),
                    "vmapped_s": round(vmapped_s, 3),
                    "one_at_a_time_s": round(single_s, 3),
                    "vmapped_records_per_s": round(len(records) / vmapped_s, 2),
                    "one_at_a_time_records_per_s": round(len(records) / single_s, 2),
                    "speedup": round(single_s / vmapped_s, 2),
                    "same_traces": [r.trace_min for r in shrunk]
                    == [r.trace_min for r in shrunk_single],
                }
            )
    print(
        f"{'game':<17} {'campaign':<8} {'records':>7} {'before':>7} {'after':>6} {'ratio':>6} "
        f"{'per rec':>7} {'vmapped s':>9} {'1-at-a-time s':>13} {'speed-up':>8}"
    )
    for r in rows:
        if r["records"]:
            print(
                f"{r['game']:<17} {r['campaign']:<8} {r['records']:>7} "
                f"{r['mean_length_before']:>7.1f} {r['mean_length_after']:>6.1f} "
                f"{r['length_ratio']:>6.2f} {r['mean_ratio']:>7.2f} {r['vmapped_s']:>9.2f} "
                f"{r['one_at_a_time_s']:>13.2f} {r['speedup']:>8.1f}"
            )
        else:
            print(f"{r['game']:<17} {r['campaign']:<8} {0:>7}  (the campaign found no bug)")
    timed_rows = [r for r in rows if r["records"]]
    # every campaign's records of a game together: mean length after over mean length before
    by_game = {}
    for game in dict.fromkeys(r["game"] for r in timed_rows):
        mine = [r for r in timed_rows if r["game"] == game]
        total_before = sum(r["records"] * r["mean_length_before"] for r in mine)
        by_game[game] = {
            "records": sum(r["records"] for r in mine),
            "length_ratio": sum(r["records"] * r["mean_length_after"] for r in mine) / total_before,
        }
    print(
        "mean length after / before, all of a game's records: "
        + ", ".join(f"{g} {v['length_ratio']:.2f}" for g, v in by_game.items())
    )
    total = {
        "vmapped_s": sum(r["vmapped_s"] for r in timed_rows),
        "one_at_a_time_s": sum(r["one_at_a_time_s"] for r in timed_rows),
    }
    total["speedup"] = round(total["one_at_a_time_s"] / total["vmapped_s"], 2)
    print(
        f"all records: vmapped {total['vmapped_s']:.2f} s, one at a time "
        f"{total['one_at_a_time_s']:.2f} s, speed-up {total['speedup']:.1f}×"
    )
    write_json(
        args.json,
        {
            "benchmark": "shrink",
            "quick": args.quick,
            "records_per_game": per_game,
            "random_steps": steps,
            "seeds": [0],
            "reline_models": RELINE_MODELS,
            "rows": rows,
            "games": by_game,
            "total": total,
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
            "command": "python benchmarks/shrink.py"
            + (" --quick" if args.quick else "")
            + (f" --json {args.json}" if args.json else ""),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
