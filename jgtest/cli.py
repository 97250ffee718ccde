"""The ``jgtest`` command line.

    jgtest run random --game BlockMaze-v0 --out runs/demo
    jgtest run wuji --game CombatArena-v0 --compare --seeds 10 --generations 5 --out runs/wuji
    jgtest run inspector --game ParkWorld-v0 --episodes 45 --out runs/inspector
    jgtest replay runs/demo/bugs.jsonl --index 0
    jgtest report runs/demo
    jgtest games
    jgtest train ppo --game CartPoleBugs-v0 --steps 500000 --seeds 8 --out runs/ppo
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

METHODS = ("all", "random", "reline", "wuji", "inspector", "ppgta", "compare-explorers")
#: Games where ``random`` is the random agent of the PPGTA comparison (object tests included).
PARK_GAMES = ("ParkWorld-v0",)


def _parse_game_args(pairs: list[str], flag: str = "--game-arg") -> dict:
    """``KEY=VALUE`` pairs as options; a value is JSON where it parses (lists become
    tuples, so configs holding them stay hashable, static under jit), else a string."""
    from jgtest.envs.registration import hashable

    kwargs = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"error: {flag} expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            kwargs[key] = hashable(json.loads(value))
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def prepare_out_dir(path: str, overwrite: bool, resume: bool = False) -> Path:
    """Creates the run directory or explains why it cannot be used; with ``resume``, checks that it
    holds a campaign to continue; with ``overwrite``, removes the campaign it holds."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise SystemExit(f"error: --out {path!r} is a file, not a directory")
    if resume:
        if not (out / "config.json").exists():
            raise SystemExit(f"error: --resume: {path!r} holds no campaign to resume")
        return out
    if (out / "bugs.jsonl").exists() and not overwrite:
        raise SystemExit(f"error: --out {path!r} already holds a campaign (bugs.jsonl); choose another directory, pass --resume to continue it or --overwrite")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SystemExit(f"error: cannot create --out directory {path!r}: {error.strerror}") from None
    if not os.access(out, os.W_OK):
        raise SystemExit(f"error: --out directory {path!r} is not writable")
    if overwrite:
        (out / "bugs.jsonl").unlink(missing_ok=True)
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return out


def _run(args) -> int:
    """Runs the campaign, then writes its HTML report into the run directory."""
    code = _run_method(args)
    _report_and_say(args.out)
    return code


def _report_and_say(run_dir: str) -> None:
    from jgtest.report.html import write_report

    print(f"report: {write_report(run_dir).resolve()}")


def _report(args) -> int:
    try:
        _report_and_say(args.run_dir)
    except (FileNotFoundError, ValueError) as error:
        raise SystemExit(f"error: {error}") from None
    return 0


def _run_method(args) -> int:
    if args.method == "all":
        from jgtest import main_job

        out = Path(args.out) if args.resume else prepare_out_dir(args.out, args.overwrite)
        out.mkdir(parents=True, exist_ok=True)
        return main_job.run(out, args.seed, args.quiet, resume=args.resume)
    if args.method == "reline":
        return _run_reline(args)
    if args.method == "wuji":
        return _run_wuji(args)
    if args.method in ("inspector", "ppgta", "compare-explorers") or (args.method == "random" and (args.game in PARK_GAMES or args.game.startswith("unreal:"))):
        from jgtest.cli_park import run_park

        return run_park(args, prepare_out_dir)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    import jgtest
    from jgtest.methods import random_testing

    if args.game not in jgtest.registered_games():
        try:
            jgtest.make(args.game)
        except ValueError as error:
            raise SystemExit(f"error: {error}") from None
    try:
        config = random_testing.RandomCampaignConfig(
            game=args.game,
            num_envs=args.envs,
            steps_per_env=args.steps,
            chunk_steps=min(args.chunk, args.steps),
            seed=args.seed,
            game_kwargs=_parse_game_args(args.game_arg),
        )
        jgtest.make(config.game, **config.game_kwargs)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    out = prepare_out_dir(args.out, args.overwrite, args.resume)
    console = Console(stderr=True)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("bugs {task.fields[bugs]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=args.quiet) as progress:
        task = progress.add_task(f"random × {config.game}", total=config.num_envs * config.steps_per_env, bugs=0)

        def on_chunk(done, total, bugs):
            progress.update(task, completed=min(done, total), total=total, bugs=bugs)

        summary = random_testing.run(config, out, on_chunk=on_chunk, resume=args.resume)
    table = Table(title=f"random testing of {config.game}")
    for column in ("bugs found", "state coverage", "episodes", "env steps", "steps/s", "wall s"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{summary['bugs_found']}/{summary['bugs_total']}",
        f"{summary['state_coverage']} ({summary['state_coverage_fraction']:.1%})",
        str(summary["episodes"]),
        f"{summary['env_steps']:,}",
        f"{summary['steps_per_s']:,.0f}",
        f"{summary['wall_s']:.1f}",
    )
    Console().print(table)
    print(f"wrote {out / 'bugs.jsonl'} and {out / 'summary.json'}")
    return 0


def _replay(args) -> int:
    from jgtest.report.records import read_bug_records
    from jgtest.report.replay import replay

    try:
        records = read_bug_records(args.records)
    except FileNotFoundError:
        raise SystemExit(f"error: no such bug record file: {args.records}") from None
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    if not records:
        raise SystemExit(f"error: {args.records} holds no bug records")
    if not -len(records) <= args.index < len(records):
        raise SystemExit(f"error: --index {args.index} is out of range; {args.records} holds {len(records)} records (0..{len(records) - 1})")
    record = records[args.index]
    if record.kind == "texture":  # found by an object test (PPGTA, Inspector)
        from jgtest.methods.inspector import replay_record

        reproduced = replay_record(record)
        verdict = "reproduced" if reproduced else "NOT reproduced"
        print(f"{verdict}: {record.game} object {record.bug_id}, the test of episode {record.episode} of slot "
              f"{record.env_index}, seed {record.seed}, after {len(record.actions)} actions ({record.detail})")  # fmt: skip
        return 0 if reproduced else 1
    result = replay(record)
    print(result.describe())
    return 0 if result.reproduced else 1


def _train(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from jgtest.agents import make_config, make_hparams
    from jgtest.agents.runner import run_training
    from jgtest.envs.registration import make

    overrides = _parse_game_args(args.set, "--set")
    game_kwargs = _parse_game_args(args.game_arg)
    try:
        if args.steps is not None and args.steps < 1:
            raise ValueError(f"--steps must be positive, got {args.steps}")
        if args.seeds < 1:
            raise ValueError(f"--seeds must be positive, got {args.seeds}")
        _, env_params = make(args.game, **game_kwargs)
        if args.algo == "cem" and args.steps is not None:
            # CEM's budget is iterations of `episodes_per_iter` whole episodes; count an
            # episode as half the cap, and keep a whole number of iterations per evaluation.
            per_iter = 16 * max(1, int(env_params.max_steps_in_episode) // 2)
            evals = overrides.get("num_evals", 10)
            overrides.setdefault("num_iterations", max(evals, (args.steps // per_iter) // evals * evals))
        elif args.steps is not None and args.algo != "random":
            overrides["total_timesteps"] = args.steps
        if game_kwargs or args.game != "CartPoleBugs-v0":
            overrides["game_kwargs"] = tuple(sorted(game_kwargs.items()))
        config = make_config(args.algo, game=args.game, **overrides)
        hparams = make_hparams(args.algo, **_parse_game_args(args.hp, "--hp"))
    except (ValueError, TypeError) as error:
        raise SystemExit(f"error: {error}") from None
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise SystemExit(f"error: --out {args.out!r} is a file, not a directory")
    console = Console(stderr=True)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("eval return {task.fields[ret]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=args.quiet) as progress:
        task = progress.add_task(f"{args.algo} × {args.game} × {args.seeds} seeds", total=config.num_evals, ret="-")

        def on_period(done, total, metrics):
            import numpy as np

            progress.update(task, completed=done, ret=f"{float(np.mean(metrics['eval_return_mean'])):.1f}")

        try:
            summary = run_training(args.algo, config, out, num_seeds=args.seeds, seed=args.seed, hparams=hparams, on_period=on_period)
        except ValueError as error:
            raise SystemExit(f"error: {error}") from None
    table = Table(title=f"{args.algo} on {args.game}")
    for column in ("seeds", "final return", "env steps", "steps/s", "wall s"):
        table.add_column(column, justify="right")
    table.add_row(
        str(args.seeds),
        f"{summary['final_return_mean']:.1f} ± {summary['final_return_std']:.1f}",
        f"{summary['env_steps']:,}",
        f"{summary['steps_per_s']:,.0f}",
        f"{summary['wall_s']:.1f}",
    )
    Console().print(table)
    print(f"wrote {out / 'summary.json'}, {out / 'curves.json'} and {out / 'curves.png'}")
    return 0


def _games(args) -> int:
    import jgtest

    for name in jgtest.registered_games():
        env, _ = jgtest.make(name)
        print(f"{name:18s} actions={env.num_actions:<3d} bugs={env.num_bugs:<3d} kinds={','.join(sorted(set(env.bug_kinds)))}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jgtest", description="Automated video-game testing with learning agents, in JAX.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a test campaign (method × game; all: a short campaign of each method, the main job)")
    run.add_argument("method", choices=METHODS)
    run.add_argument("--game", default="BlockMaze-v0", help="registered game id (see `jgtest games`)")
    run.add_argument("--out", required=True, help="run directory for bugs.jsonl, summary.json, config.json")
    run.add_argument("--envs", type=int, default=256, help="random: parallel episode slots (default 256)")
    run.add_argument("--steps", type=int, default=2000, help="random: steps per slot (default 2000)")
    run.add_argument("--chunk", type=int, default=200, help="random: steps per device call (default 200)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--models", type=int, default=None, help="reline: models per agent, trained vmapped (default: the paper's, 10; 1 on the kart)")
    run.add_argument("--eval-episodes", type=int, default=1000, help="reline: evaluation episodes per model (default 1000)")
    run.add_argument("--agents", default="reline,rl-baseline,random", help="reline: comma-separated agents")
    run.add_argument("--train-steps", type=int, default=None, help="reline: DQN training steps per model (default: the game's)")
    run.add_argument("--quick", action="store_true", help="reline: the small training budget (CPU); park agents: 10 episodes (ppgta: small models)")
    run.add_argument("--episodes", type=int, default=None, help="park agents (inspector, random, ppgta): episodes of 2,000 steps (default: the paper's 45)")
    run.add_argument("--detector", choices=("ground-truth", "learned"), default="ground-truth", help="ppgta: objects from the renderer or the trained detector")
    run.add_argument("--ppgta-models", default=None, metavar="DIR", help="ppgta: trained models to load, or where to train them (default OUT/models)")
    run.add_argument("--explorer-from", default=None, metavar="RUN",
                     help="over unreal:…, ppgta and inspector: the run directory of a ParkWorld-v0 campaign whose trained explorer drives the game "
                          "(required for inspector; ppgta's default is the path policy its explorer starts from)")  # fmt: skip
    run.add_argument("--actors", type=int, default=0, help="reline on a bridged game: a Ray game farm of N actors (default: in process)")
    run.add_argument("--ray-address", default=None, help="with --actors: the Ray cluster to join ('auto' or host:port; default: start a local Ray)")
    for flag, field in (("--threshold-episodes", "threshold_episodes"), ("--warmup-episodes", "warmup_episodes"), ("--replays", "replays")):
        run.add_argument(flag, type=int, default=None, help=f"reline on a kart: {field.replace('_', ' ')} (default: the paper's)")
    run.add_argument("--strategy", default="wuji", help="wuji: one of random, ea_s, ea_m, drl, ea_s+drl, wuji (default wuji)")
    run.add_argument("--compare", action="store_true", help="wuji: all six strategies, same budget")
    run.add_argument("--generations", type=int, default=None, help="wuji: generations per run (default 10)")
    run.add_argument("--budget-s", type=float, default=None, help="wuji: wall-clock budget per run in seconds")
    run.add_argument("--budget-steps", type=int, default=None, help="wuji: env-step budget per run (game steps played; machine-independent)")
    run.add_argument("--seeds", type=int, default=1, help="wuji: runs (bug placements) per strategy, seeds --seed …")
    run.add_argument("--population", type=int, default=30, help="wuji: population and offspring size (default: the paper's 30)")
    run.add_argument("--resume", action="store_true", help="continue a killed campaign in --out from its checkpoints")
    run.add_argument("--game-arg", action="append", default=[], metavar="KEY=VALUE", help="game option (JSON value), repeatable")
    run.add_argument("--overwrite", action="store_true", help="replace a campaign already in --out")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(func=_run)
    report = sub.add_parser("report", help="write the run directory's self-contained HTML report (DIR/report.html)")
    report.add_argument("run_dir", help="a run directory (jgtest run --out)")
    report.set_defaults(func=_report)
    rep = sub.add_parser("replay", help="replay a recorded bug trace and check that the bug fires again")
    rep.add_argument("records", help="a bugs.jsonl file")
    rep.add_argument("--index", type=int, default=0, help="which record (0-based; negative counts from the end)")
    rep.set_defaults(func=_replay)
    from jgtest.agents import ALGORITHMS

    train = sub.add_parser("train", help="train an agent on a game, on device, with checkpoints (resumes in --out)")
    train.add_argument("algo", choices=sorted(ALGORITHMS))
    train.add_argument("--game", default="CartPoleBugs-v0")
    train.add_argument("--steps", type=int, default=None, help="env-step budget per seed (default: the algorithm's)")
    train.add_argument("--seeds", type=int, default=1, help="seeds trained together under vmap")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--out", default="runs/train", help="run directory (summary, curves, checkpoints)")
    train.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="config field (JSON value), repeatable")
    train.add_argument("--game-arg", action="append", default=[], metavar="KEY=VALUE", help="game option (JSON value), repeatable")
    train.add_argument("--hp", action="append", default=[], metavar="NAME=VALUE", help="hyperparameter (the traced *Hyperparams: learning_rate, gamma, ...), repeatable")
    train.add_argument("--quiet", action="store_true")
    train.set_defaults(func=_train)
    games = sub.add_parser("games", help="list the registered games")
    games.set_defaults(func=_games)
    from jgtest.cli_plan import add_parser as add_plan_parser

    add_plan_parser(sub)
    return parser


def _run_reline(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    import jgtest
    from jgtest.methods import reline

    try:
        config = reline.RelineConfig(
            game=args.game, models=args.models, eval_episodes=args.eval_episodes, seed=args.seed, quick=args.quick,
            train_steps=args.train_steps, agents=tuple(args.agents.split(",")),
            game_kwargs=tuple(sorted(_parse_game_args(args.game_arg).items())), actors=args.actors, ray_address=args.ray_address,
            **{f: getattr(args, f) for f in ("threshold_episodes", "warmup_episodes", "replays") if getattr(args, f) is not None},
        )  # fmt: skip
        if config.game not in reline.HOST_GAMES:
            jgtest.make(config.game, **dict(config.game_kwargs))
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    out = prepare_out_dir(args.out, args.overwrite, args.resume)
    learn = reline.learner(config)
    budget = getattr(learn.config, "total_timesteps", None)
    budget = f"{budget:,} steps" if budget else f"{learn.config.num_iterations * learn.config.episodes_per_iter:,} episodes"
    episodes = f"{config.eval_episodes:,} evaluation episodes per model"
    if config.game in reline.HOST_GAMES and config.game in reline.KART_GAMES:
        from jgtest.methods import reline_stk

        episodes = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in reline_stk.settings(config).items())
    console = Console(stderr=True)
    console.print(
        f"RELINE on {config.game}: {', '.join(config.agents)}; {config.models} model(s) per agent, "
        f"{type(learn.config).__name__} trained for {budget} each; {episodes}"
    )
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=args.quiet) as progress:
        tasks = {}

        def on_progress(phase, done, total):
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=total)
            progress.update(tasks[phase], completed=done, total=total)

        summary = reline.run(config, out, progress=on_progress, resume=args.resume)
    if "table1" in summary:
        table = Table(title=f"RELINE Table 1, {config.game}: episodes (of {config.eval_episodes:,}) with at least n bugs")
        for column in ("agent", "n", "mean", "median", "sd", "paper mean / median / sd"):
            table.add_column(column, justify="right")
        for agent, rows in summary["table1"].items():
            for n, row in rows.items():
                paper = row["paper"]
                ref = "—" if paper is None else f"{paper['mean']} / {paper['median']} / {paper['sd']}"
                table.add_row(agent, n, f"{row['mean']:.1f}", f"{row['median']:.1f}", f"{row['sd']:.1f}", ref)
        Console().print(table)
    else:
        table = Table(title=f"RELINE low-FPS points, {config.game} (t = {summary.get('threshold', {}).get('t_ms', float('nan')):.2f} ms)")
        twin = all("spots_found" in row for row in summary["low_fps"].values())  # the real game hides no known spots
        for column in ("agent", "points (paper)", *(("heavy spots among them",) if twin else ()), "visits / 1,000 episodes (paper)"):
            table.add_column(column, justify="right")
        paper = reline.PAPER_KART
        for agent, row in summary["low_fps"].items():
            table.add_row(
                agent, f"{row['count']} ({paper['points'][agent]})", *((str(row["spots_found"]),) if twin else ()),
                f"{row['visits_per_1000_episodes']:.0f} ({paper['visits_per_point'][agent]})",
            )  # fmt: skip
        Console().print(table)
        replay = summary.get("replay_reliability") or {}
        if "per_section" in replay:  # the real kart: the replayed laps, by step and by section
            by = {k: replay[k] for k in ("per_step", "per_section") if replay[k]}
            print(f"replayed {replay['per_step']['replays']} times ({replay['replayed_steps']} steps, lap completed: "
                  f"{replay['lap_completed']}): Spearman rho " + "; ".join(
                      f"{k.replace('_', ' ')} min {v['rho_min']:.2f} median {v['rho_median']:.2f}" for k, v in by.items())
                  + f" (paper, per step over 300: min {paper['replay']['rho_min']}, median {paper['replay']['rho_median']})")  # fmt: skip
    print(f"wrote {out}: bugs.jsonl, summary.json, {'table1.json' if 'table1' in summary else 'low_fps.json and plots'}")
    return 0


def _run_wuji(args) -> int:
    import shutil

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from jgtest.methods import wuji
    from jgtest.report.html import wuji_versus_columns

    if args.seeds < 1:
        raise SystemExit(f"error: --seeds must be at least 1, got {args.seeds}")
    strategies = wuji.STRATEGIES if args.compare else (args.strategy,)
    try:
        budgeted = args.budget_s is not None or args.budget_steps is not None
        generations = args.generations if args.generations is not None else (None if budgeted else 10)
        config = wuji.WujiConfig(
            game=args.game, game_kwargs=tuple(_parse_game_args(args.game_arg).items()), strategy=strategies[0], population=args.population,
            generations=generations, budget_s=args.budget_s, budget_steps=args.budget_steps, seed=args.seed,
        )  # fmt: skip
        for strategy in strategies:
            wuji.WujiConfig(strategy=strategy)
        import jgtest

        wuji.check_game_kwargs(*jgtest.make(config.game, **dict(config.game_kwargs)), config.game_kwargs)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    out = Path(args.out)
    previous = [out / s for s in strategies if (out / s).exists()]
    if previous and not (args.resume or args.overwrite):
        raise SystemExit(f"error: --out {args.out!r} already holds a campaign ({previous[0].name}/); pass --resume to continue it or --overwrite")
    if args.overwrite and not args.resume:
        for path in previous:
            shutil.rmtree(path)
    out = prepare_out_dir(args.out, overwrite=False)
    console = Console(stderr=True)
    budgets = [f"{config.budget_s:g} s"] if config.budget_s is not None else []
    budgets += [f"{config.budget_steps:,} env steps"] if config.budget_steps is not None else []
    budget = " and ".join(budgets) or f"{config.generations} generations"
    console.print(f"Wuji on {config.game}: {', '.join(strategies)}; {args.seeds} seed(s), {budget} each, population {config.population}")
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("bugs {task.fields[bugs]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=args.quiet) as progress:
        tasks = {}

        def on_run(strategy, seed, generation, total, bugs):
            name = f"{strategy} seed {seed}"
            if name not in tasks:
                tasks[name] = progress.add_task(name, total=None if budgeted else total, bugs=0)
            progress.update(tasks[name], completed=generation, bugs=bugs)

        summary = wuji.campaign(config, out, strategies, args.seeds, resume=args.resume, on_run=on_run)
    table = Table(title=f"Wuji, {config.game}: {args.seeds} seed(s), {budget} each")
    versus_header, versus = wuji_versus_columns(summary)
    for column in ("strategy", "bugs found (mean ± sd)", "state coverage (mean ± sd)", "env steps (mean)", *versus_header):
        table.add_column(column, justify="right")
    for s in strategies:
        b, c, e = summary["bugs_found"][s], summary["state_coverage"][s], summary["env_steps"][s]
        table.add_row(s, f"{b['mean']:.1f} ± {b['sd']:.1f} / {summary['bugs_total']}", f"{c['mean']:.0f} ± {c['sd']:.0f}", f"{e['mean']:,.0f}", *versus[s])
    Console().print(table)
    print(f"wrote {out}: summary.json, bugs_over_time.png, coverage.png, population.png; runs in {out}/STRATEGY/seed-S/ (bugs.jsonl, checkpoints)")
    return 0


def _single_threaded_eigen() -> None:
    """XLA's multi-threaded Eigen pool on CPU can deadlock on vmapped graphs; campaigns and training runs are
    long, so the command line uses a single-threaded pool (a user's own ``XLA_FLAGS`` setting wins). Set when
    the command starts (not at import), and only effective before JAX starts its backend."""
    if "--xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()


def main(argv: list[str] | None = None) -> int:
    _single_threaded_eigen()
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

