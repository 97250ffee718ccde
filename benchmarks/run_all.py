"""Every benchmark in one go: one JSON and one markdown table.

    python benchmarks/run_all.py [--quick] [--out benchmarks/results/all] [--only NAME ...]

Runs each script of :data:`BENCHMARKS` in its own process (so one's compiled code or threads do not
bleed into the next) with ``--json``, and ``--quick`` when given; a script that fails is recorded
with its exit code and the end of its output, and the others still run. Writes ``OUT/all.json``
(per benchmark: command, seconds, exit code, its own JSON) and ``OUT/all.md`` (per benchmark its
table of rows, the devices it ran on, its wall time). On a machine with a GPU the same scripts run
on it and record the device they ran on (JAX's default backend).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: ``(name, script, extra arguments, what it measures)``.
BENCHMARKS = (
    # ParkWorld's frames are render_throughput's; DungeonNav is a training game (a random level
    # every reset)
    (
        "env_throughput",
        "env_throughput.py",
        (
            "--games",
            "BlockMaze-v0",
            "CartPoleBugs-v0",
            "CombatArena-v0",
            "KartTrack-v0",
            "PacMaze-v0",
            "Dungeon-v0",
        ),
        "env steps/s of the testing games against Gymnasium",
    ),
    (
        "train_throughput",
        "train_throughput.py",
        (),
        "training steps/s against Stable-Baselines3 (torch)",
    ),
    ("nsga2", "nsga2.py", (), "non-dominated sort and crowding against pymoo"),
    ("rnd_ensemble", "rnd_ensemble.py", (), "RND ensemble cost against its member count"),
    ("render_throughput", "render_throughput.py", (), "ParkWorld frames/s"),
    (
        "bridge_throughput",
        "bridge_throughput.py",
        ("--no-stk-farm",),
        "host bridges (envpool, SuperTuxKart) against their bare libraries",
    ),
    ("unreal_bridge", "unreal_bridge.py", (), "the UnrealCV bridge against a bare socket"),
    (
        "adapter_overhead",
        "adapter_overhead.py",
        (),
        "the gymnax adapter and the Gymnasium bridge against the raw games",
    ),
    ("plan_executions", "plan_executions.py", (), "explicit plan executions/s"),
    ("reline_table1", "reline_table1.py", (), "RELINE Table 1 on CartPole, end to end"),
)


def run_one(script: str, extra: tuple[str, ...], quick: bool, json_path: Path) -> dict:
    """Runs one benchmark script; its command, seconds, exit code, output tail and JSON result."""
    command = [
        sys.executable,
        str(HERE / script),
        "--json",
        str(json_path),
        *extra,
        *(["--quick"] if quick else []),
    ]
    begin = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE.parent)
    seconds = time.perf_counter() - begin
    result = (
        json.loads(json_path.read_text()) if done.returncode == 0 and json_path.exists() else None
    )
    return {
        "command": " ".join([f"benchmarks/{script}", *command[2:]]),
        "seconds": round(seconds, 1),
        "returncode": done.returncode,
        "output_tail": (done.stdout + done.stderr)[-2000:],
        "result": result,
    }


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value)[:60]
    return str(value)


def markdown(runs: dict, quick: bool) -> str:
    """``all.md``: a summary table, then each benchmark's rows."""
    lines = [
        f"# jgtest benchmarks{' (--quick)' if quick else ''}",
        "",
        "| benchmark | measures | seconds | status |",
        "|---|---|---:|---|",
    ]
    for name, _, _, what in BENCHMARKS:
        if name in runs:
            run = runs[name]
            status = "ok" if run["returncode"] == 0 else f"failed (exit {run['returncode']})"
            lines.append(f"| {name} | {what} | {run['seconds']} | {status} |")
    for name, run in runs.items():
        result = run["result"] or {}
        lines += ["", f"## {name}", "", f"`python {run['command']}`", ""]
        devices = result.get("devices") or result.get("device") or result.get("machine")
        if devices:
            lines += [f"Device: {_cell(devices)}", ""]
        rows = result.get("rows")
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            columns = list(rows[0])
            lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            lines += [
                "| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |" for row in rows
            ]
        scalars = {
            k: v
            for k, v in result.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        if scalars:
            lines += [""] + [f"- {k}: {_cell(v)}" for k, v in scalars.items()]
        if run["returncode"] != 0:
            lines += ["", "```", run["output_tail"][-800:], "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every benchmark's --quick settings (under 15 minutes on 2 CPU cores)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE / "results" / "all",
        help="where all.json and all.md go (and each benchmark's JSON)",
    )
    parser.add_argument(
        "--only", nargs="*", choices=[b[0] for b in BENCHMARKS], help="run these only"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for name, script, extra, _ in BENCHMARKS:
        if args.only and name not in args.only:
            continue
        print(f"== {name}", flush=True)
        runs[name] = run_one(script, extra, args.quick, args.out / f"{name}.json")
        print(f"   {runs[name]['seconds']} s, exit {runs[name]['returncode']}", flush=True)
    (args.out / "all.json").write_text(
        json.dumps(
            {
                "quick": args.quick,
                "total_s": round(sum(r["seconds"] for r in runs.values()), 1),
                "benchmarks": runs,
            },
            indent=2,
        )
    )
    (args.out / "all.md").write_text(markdown(runs, args.quick))
    print(f"wrote {args.out / 'all.json'} and {args.out / 'all.md'}")
    return 0 if all(r["returncode"] == 0 for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
