"""The main job (``jgtest run all``): a short campaign of each method, ending in one HTML report.

What the README's first command runs: on device, with small settings that finish in a few minutes
on 2 CPU cores, and each writing its own run directory under ``OUT`` (config, checkpoints, bug
records as found, metrics, plots and its own ``report.html``):

- ``wuji/``: Wuji's six strategies compared on Block Maze (bugs and gold re-drawn per seed);
- ``reline/``: RELINE, its RL baseline and random on the kart twin (low-FPS points, render times), each
  learner trained 50,000 steps (the paper's budget: ``jgtest run reline --game KartTrack-v0``);
- ``park/``: the random agent of the PPGTA comparison on a small ParkWorld (64×64 cells, 200 objects;
  object tests, bird's-eye maps);
- ``plans/``: the Explicit Plans examples (``examples/plans/dungeon``, scripted navigator).

``OUT/report.html`` then gathers them (:mod:`jgtest.report.html`). Each campaign is one
``jgtest`` command, listed by :func:`commands`, so any of them can be rerun alone, at full size.
"""

from __future__ import annotations

from pathlib import Path

#: The Explicit Plans examples the main job runs.
PLAN_EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "plans" / "dungeon"


def commands(out: Path, seed: int = 0, quiet: bool = False, resume: bool = False) -> list[tuple[str, list[str]]]:
    """``(what, jgtest argv)`` of the main job's campaigns into ``out``; with ``resume``, each campaign
    already started there continues from its checkpoints (``--resume``) instead of starting over."""

    def common(name: str) -> list[str]:
        started = resume and any((out / name).rglob("config.json"))
        return ["--seed", str(seed), "--resume" if started else "--overwrite"] + (["--quiet"] if quiet else [])

    return [
        ("Wuji: six strategies on Block Maze", ["run", "wuji", "--game", "BlockMaze-v0", "--compare", "--seeds", "2", "--generations", "2",
                                                "--population", "8", "--out", str(out / "wuji"), *common("wuji")]),
        ("RELINE on the kart twin", ["run", "reline", "--game", "KartTrack-v0", "--quick", "--models", "1", "--train-steps", "50000",
                                                "--eval-episodes", "200", "--threshold-episodes", "50", "--warmup-episodes", "20", "--replays", "50", "--out", str(out / "reline"),
                                                *common("reline")]),
        ("random agent on ParkWorld (PPGTA's comparison)", ["run", "random", "--game", "ParkWorld-v0", "--episodes", "5", "--game-arg", "size=64",
                                                             "--game-arg", "num_oois=200", "--out", str(out / "park"), *common("park")]),
        ("Explicit Plans on the Dungeon", ["plan", "suite", str(PLAN_EXAMPLES), "--seeds", "4", "--out", str(out / "plans")]),
    ]  # fmt: skip


def run(out: Path, seed: int = 0, quiet: bool = False, resume: bool = False) -> int:
    """Runs :func:`commands` in turn (``resume``: continuing those a stopped job started); 0 when every
    campaign completed (a failed plan validation counts as completed)."""
    from jgtest.cli import main

    failed = []
    for what, argv in commands(out, seed, quiet, resume):
        print(f"== {what}: jgtest {' '.join(argv)}", flush=True)
        code = main(argv)
        if code != 0 and argv[0] != "plan":
            failed.append(what)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0
