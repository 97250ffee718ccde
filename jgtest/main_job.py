"""The main job (``jgtest run all``): a short campaign of each method, ending in one HTML report.

What the README's first command runs, each campaign in its run directory under ``OUT``: ``wuji/``
(six strategies on Block Maze), ``reline/`` (Table 1 on CartPole), ``park/`` (the random agent on a
small ParkWorld) and ``plans/`` (the Explicit Plans examples); ``OUT/report.html`` gathers them,
each budget beside its paper's (:data:`BUDGETS`).

* chosen: small settings, because the job must finish in minutes on 2 CPU cores.
* chosen: each campaign is one ``jgtest`` command (:func:`commands`), so it can be rerun alone.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from pathlib import Path

#: The Explicit Plans examples the main job runs.
PLAN_EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "plans" / "dungeon"
#: Each campaign's seeds, generations, budgets and sizes (the ``jgtest`` flags of :func:`commands`
#: say the same).
WUJI = {"game": "BlockMaze-v0", "seeds": 2, "generations": 2, "population": 8}
RELINE = {"game": "CartPoleBugs-v0", "models": 10, "eval_episodes": 1000}
PARK = {"episodes": 5, "game_kwargs": {"size": 64, "num_oois": 200}}
PLANS = {"seeds": 4}
#: Each campaign's budget beside its paper's, as the report states them.
BUDGETS = (
    (
        "Wuji on Block Maze",
        f"6 strategies × {WUJI['seeds']} seeds, {WUJI['generations']} generations of a "
        f"population of {WUJI['population']}",
        "10 runs a strategy, 1 hour each, a population of 30 (§V-A): the orderings need ours "
        "at 10 seeds and 1M env steps "
        "(docs/reproductions/wuji.md); here the job shows the strategies side by side",
    ),
    (
        "RELINE on CartPole",
        f"{RELINE['models']} models an agent, {RELINE['eval_episodes']:,} evaluation "
        "episodes a model",
        "the same: 10 models, 1,000 episodes each (Table 1)",
    ),
    (
        "random agent on ParkWorld",
        f"{PARK['episodes']} episodes on a "
        f"{PARK['game_kwargs']['size']}×{PARK['game_kwargs']['size']} park with "
        f"{PARK['game_kwargs']['num_oois']} objects",
        "45 episodes, 247 objects (§VI)",
    ),
    (
        "Explicit Plans on the Dungeon",
        f"3 example plans × {PLANS['seeds']} seeds",
        "each plan run on the level; the article counts no seeds",
    ),
)


@dataclasses.dataclass(frozen=True)
class Campaign:
    """One of the main job's campaigns: what it is, its equivalent ``jgtest`` command, its run
    directory, and how it runs (``play(out, seed, quiet, resume, overwrite)``)."""

    what: str
    argv: tuple[str, ...]
    out: Path
    play: Callable[[Path, int, bool, bool, bool], None]


def _play_wuji(out: Path, seed: int, quiet: bool, resume: bool, overwrite: bool) -> None:
    from jgtest.methods import wuji
    from jgtest.methods.wuji.campaign import prepare_campaign_dir
    from jgtest.methods.wuji.console import run_in_console

    config = wuji.WujiConfig(
        game=WUJI["game"],
        strategy=wuji.PAPER_STRATEGIES[0],
        population=WUJI["population"],
        generations=WUJI["generations"],
        seed=seed,
    )
    run_in_console(
        config,
        prepare_campaign_dir(out, wuji.PAPER_STRATEGIES, overwrite, resume),
        wuji.PAPER_STRATEGIES,
        WUJI["seeds"],
        quiet,
        resume,
    )


def _play_reline(out: Path, seed: int, quiet: bool, resume: bool, overwrite: bool) -> None:
    from jgtest.methods import reline
    from jgtest.methods.reline.console import run_in_console
    from jgtest.run_dir import prepare_run_dir

    run_in_console(
        reline.RelineConfig(seed=seed, **RELINE),
        prepare_run_dir(out, overwrite, resume),
        quiet,
        resume,
    )


def _play_park(out: Path, seed: int, quiet: bool, resume: bool, overwrite: bool) -> None:
    from jgtest.methods.park.console import run_in_console

    run_in_console(
        "random",
        out,
        PARK["game_kwargs"],
        PARK["episodes"],
        seed,
        quiet=quiet,
        resume=resume,
        overwrite=overwrite,
    )


def _play_plans(out: Path, seed: int, quiet: bool, resume: bool, overwrite: bool) -> None:
    from jgtest.plans.suite import run_suite

    # a failed plan validation counts as completed
    run_suite(sorted(PLAN_EXAMPLES.glob("*.json")), seeds=PLANS["seeds"], out=out)


def campaigns(
    out: Path, seed: int = 0, quiet: bool = False, resume: bool = False
) -> list[Campaign]:
    """The main job's campaigns into ``out``; with ``resume``, each campaign already started there
    continues from its checkpoints (``--resume``) instead of starting over (``--overwrite``)."""

    def common(name: str) -> list[str]:
        return [
            "--seed",
            str(seed),
            "--resume" if _started(out / name, resume) else "--overwrite",
        ] + (["--quiet"] if quiet else [])

    wuji = [
        "run",
        "wuji",
        "--game",
        WUJI["game"],
        "--compare",
        *_flags(WUJI),
        "--out",
        str(out / "wuji"),
        *common("wuji"),
    ]
    reline = [
        "run",
        "reline",
        "--game",
        RELINE["game"],
        *_flags(RELINE),
        "--out",
        str(out / "reline"),
        *common("reline"),
    ]
    park = [
        "run",
        "random",
        "--game",
        "ParkWorld-v0",
        "--episodes",
        str(PARK["episodes"]),
        *[a for k, v in PARK["game_kwargs"].items() for a in ("--game-arg", f"{k}={v}")],
        "--out",
        str(out / "park"),
        *common("park"),
    ]
    plans = [
        "plan",
        "suite",
        str(PLAN_EXAMPLES),
        "--seeds",
        str(PLANS["seeds"]),
        "--out",
        str(out / "plans"),
    ]
    return [
        Campaign("Wuji: six strategies on Block Maze", tuple(wuji), out / "wuji", _play_wuji),
        Campaign("RELINE's Table 1 on CartPole", tuple(reline), out / "reline", _play_reline),
        Campaign(
            "random agent on ParkWorld (PPGTA's comparison)", tuple(park), out / "park", _play_park
        ),
        Campaign("Explicit Plans on the Dungeon", tuple(plans), out / "plans", _play_plans),
    ]


def commands(
    out: Path, seed: int = 0, quiet: bool = False, resume: bool = False
) -> list[tuple[str, list[str]]]:
    """``(what, jgtest argv)`` of the main job's campaigns (:func:`campaigns`): each reruns one
    alone."""
    return [(c.what, list(c.argv)) for c in campaigns(out, seed, quiet, resume)]


def _flags(options: dict) -> list[str]:
    """A campaign's settings as ``jgtest`` flags (``--game`` apart): ``train_steps=50000`` →
    ``--train-steps 50000``, ``quick=True`` → ``--quick``."""
    flags = []
    for name, value in options.items():
        if name != "game":
            flags += [f"--{name.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return flags


def _started(run_dir: Path, resume: bool) -> bool:
    return resume and any(run_dir.rglob("config.json"))


def run(out: Path, seed: int = 0, quiet: bool = False, resume: bool = False) -> int:
    """Runs :func:`campaigns` in turn (``resume``: continuing those a stopped job started), each
    ending with its records shrunk (``jgtest shrink``) and in its own report; 0 when every campaign
    completed (a campaign that fails raises)."""
    from jgtest.files import write_json_atomically
    from jgtest.report.html import write_report
    from jgtest.report.shrink import shrink_run

    out.mkdir(parents=True, exist_ok=True)
    planned = list(campaigns(out, seed, quiet, resume))
    write_json_atomically(
        out / "budgets.json",
        {
            "budgets": [
                {"campaign": what, "dir": c.out.name, "ours": ours, "paper": paper}
                for (what, ours, paper), c in zip(BUDGETS, planned, strict=True)
            ]
        },
    )
    for campaign in planned:
        print(f"== {campaign.what}: {shlex.join(['jgtest', *campaign.argv])}", flush=True)
        started = _started(campaign.out, resume)
        campaign.play(campaign.out, seed, quiet, started, not started)
        if campaign.argv[0] == "run":
            shrunk = shrink_run(campaign.out)
            if shrunk:
                print(f"shrank {len(shrunk)} record(s) to minimal reproducers (jgtest shrink)")
            print(f"report: {write_report(campaign.out).resolve()}")
    return 0
