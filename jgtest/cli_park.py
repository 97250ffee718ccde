"""``jgtest run {inspector, random, ppgta, compare-explorers} --game ParkWorld-v0``: the CLI of PPGTA's comparison.

* ``inspector`` / ``random`` — :mod:`jgtest.methods.inspector`;
* ``ppgta`` — :mod:`jgtest.methods.ppgta`, its models trained first (:mod:`jgtest.methods.ppgta_models`)
  into ``--ppgta-models DIR`` (default ``OUT/models``) or loaded from there when present;
* ``compare-explorers`` — the three over the same episodes and starts (same seed), every test's
  frames read by PPGTA's texture oracle; ``OUT/{ppgta,inspector,random}/`` hold each run,
  ``OUT/summary.json`` the comparison, ``OUT/ooi_tested.png`` Fig. 8's curves.
"""

from __future__ import annotations

import json
from pathlib import Path

AGENTS = ("ppgta", "inspector", "random")


def _game_args(args) -> dict:
    """``--game-arg`` options of the park (``size``, ``num_oois``)."""
    from jgtest.cli import _parse_game_args

    return _parse_game_args(args.game_arg)


def _episodes(args) -> int:
    return args.episodes if args.episodes is not None else (10 if args.quick else 45)


def _models(args, out: Path, console):
    """PPGTA's models: loaded from ``--ppgta-models`` (or ``OUT/models``) when trained there, else trained there."""
    from jgtest.methods import ppgta_models

    try:  # trained once (seed 0); --seed varies the campaigns
        game = _game_args(args)
        config = ppgta_models.PPGTAModelsConfig.quick(**game) if args.quick else ppgta_models.PPGTAModelsConfig(**game)
    except (ValueError, TypeError) as error:
        raise SystemExit(f"error: {error}") from None
    where = Path(args.ppgta_models) if args.ppgta_models else out / "models"
    if (where / "models.msgpack").exists():
        try:
            return ppgta_models.load_models(where, config)
        except ValueError as error:
            raise SystemExit(f"error: {error}") from None
    console.print(f"training PPGTA's models into {where} (demonstrations, inverse dynamics, imitation, detector, texture oracle)")
    return ppgta_models.train_models(config, where, log=lambda line: console.print(f"  {line}"))


def _ppgta_config(args, models, episodes):
    from jgtest.methods import ppgta

    try:
        return ppgta.PPGTAConfig(episodes=episodes, seed=args.seed, detector=args.detector, models=models.config)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None


def _inspector_config(agent: str, args, episodes):
    from jgtest.methods import inspector

    try:
        return inspector.InspectorConfig(agent=agent, episodes=episodes, seed=args.seed, **_game_args(args))
    except (ValueError, TypeError) as error:
        raise SystemExit(f"error: {error}") from None


def _progress(args, console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("OOIs tested {task.fields[tested]}"), TimeElapsedColumn())
    return Progress(*columns, console=console, disable=args.quiet)


def _play(agent: str, args, out: Path, models, episodes: int, progress) -> dict:
    from jgtest.methods import inspector, ppgta

    task = progress.add_task(f"{agent} × {args.game} (episodes)", total=episodes, tested=0)
    on_episode = lambda done, total, tested: progress.update(task, completed=done, tested=tested)
    if agent == "ppgta":
        return ppgta.run(_ppgta_config(args, models, episodes), models, out, on_episode=on_episode, resume=args.resume)
    oracle = models.oracle if models is not None else None
    return inspector.run(_inspector_config(agent, args, episodes), out, on_episode=on_episode, resume=args.resume, oracle=oracle)


def rows(summary: dict, agent: str, episodes: int) -> list[tuple[str, str, str]]:
    """The table's rows for one agent: ``(measure, ours, paper)``."""
    paper = summary["paper"].get(agent, {})
    at = summary["at_paper_episodes"]
    fmt_paper = lambda key, f: f(paper[key]) if key in paper else "—"
    out = [
        ("pathway coverage", f"{summary['pathway_coverage']:.1%}", fmt_paper("pathway_coverage_45", lambda v: f"{v:.0%} after 45")),
        ("OOIs tested after 18 episodes", str(at["ooi_tested_18"]) if episodes >= 18 else "—", fmt_paper("ooi_tested_18", str)),
        ("OOIs tested after 45 episodes", str(at["ooi_tested_45"]) if episodes >= 45 else "—", fmt_paper("ooi_tested_45", str)),
        ("OOIs tested (this run)", f"{summary['ooi_tested']} of {summary['ooi_total']} ({summary['ooi_success']} succeeded)", f"of {summary['paper']['ooi_total']}"),
        ("test success rate (of all OOIs)", f"{summary['test_success_rate']:.1%}", fmt_paper("test_success_rate", lambda v: f"{v:.0%}")),
        ("unreachable OOIs (flood fill)", str(summary["ooi_unreachable"]), "—"),
        ("texture bugs found", f"{summary['texture_bugs_found']} of {summary['texture_bugs_total']}", "—"),
    ]  # fmt: skip
    if "texture_oracle" in summary:
        o = summary["texture_oracle"]
        out.append(("texture oracle precision / recall (tested OOIs)", f"{o['precision']:.2f} / {o['recall']:.2f}", "— (beyond the paper)"))
    return out


def run_park(args, prepare_out_dir) -> int:
    """``jgtest run`` for the park's agents (module docstring)."""
    from rich.console import Console
    from rich.table import Table

    from jgtest.report.records import jsonable

    if args.game.startswith("unreal:"):
        return run_unreal(args, prepare_out_dir)
    if args.game != "ParkWorld-v0":
        raise SystemExit(f"error: {args.method} runs on ParkWorld-v0 or unreal:HOST:PORT, got --game {args.game}")
    episodes = _episodes(args)
    if episodes < 1:
        raise SystemExit(f"error: --episodes must be at least 1, got {episodes}")
    out = prepare_out_dir(args.out, args.overwrite, args.resume)
    console = Console(stderr=True)
    agents = AGENTS if args.method == "compare-explorers" else (args.method,)
    models = _models(args, out, console) if ("ppgta" in agents) else None
    summaries = {}
    with _progress(args, console) as progress:
        for agent in agents:
            summaries[agent] = _play(agent, args, out / agent if len(agents) > 1 else out, models, episodes, progress)
    for agent, summary in summaries.items():
        table = Table(title=f"{agent} on {args.game}: {episodes} episodes of {summary['episode_steps']:,} steps")
        for column in ("", "ours", "paper (PPGTA §VI)"):
            table.add_column(column, justify="right")
        for row in rows(summary, agent, episodes):
            table.add_row(*row)
        Console().print(table)
    if len(agents) > 1:
        Console().print(comparison_table(summaries, episodes))
        comparison = compare(summaries, models)
        (out / "summary.json").write_text(json.dumps(jsonable(comparison), indent=2))
        from jgtest.report.park_maps import ooi_tested_plot

        ooi_tested_plot({a: s["curves"]["ooi_tested"] for a, s in summaries.items()}, out / "ooi_tested.png", next(iter(summaries.values()))["paper"])
        print(f"wrote {out}: summary.json, ooi_tested.png; each agent's run in {out}/AGENT/ (summary.json, bugs.jsonl, traces.png, tests.png)")
    else:
        print(f"wrote {out}: summary.json, bugs.jsonl, traces.png, tests.png")
    return 0


def comparison_table(summaries: dict, episodes: int):
    """One row per agent, ours then the paper's in brackets (PPGTA §VI-A, Fig. 7–9)."""
    from rich.table import Table

    table = Table(title=f"PPGTA, Inspector and random over the same {episodes} episodes and starts (paper in brackets)")
    for column in ("agent", "pathway coverage", "OOIs tested after 18", "after 45", "test success rate", "texture bugs found"):
        table.add_column(column, justify="right")
    for agent, s in summaries.items():
        paper = s["paper"].get(agent, {})
        at = s["at_paper_episodes"]
        cell = lambda ours, key, f=str, paper=paper: f"{ours} ({f(paper[key]) if key in paper else '—'})"
        table.add_row(
            agent, cell(f"{s['pathway_coverage']:.1%}", "pathway_coverage_45", lambda v: f"{v:.0%}"),
            cell(at["ooi_tested_18"] if episodes >= 18 else "—", "ooi_tested_18"), cell(at["ooi_tested_45"] if episodes >= 45 else "—", "ooi_tested_45"),
            cell(f"{s['test_success_rate']:.1%}", "test_success_rate", lambda v: f"{v:.0%}"), f"{s['texture_bugs_found']} of {s['texture_bugs_total']}",
        )  # fmt: skip
    return table


def run_unreal(args, prepare_out_dir) -> int:
    """``jgtest run {ppgta, inspector, random} --game unreal:HOST:PORT`` (or ``unreal:/path/to/socket``): the agents
    trained on the device twin drive an Unreal game through UnrealCV (:mod:`jgtest.methods.bridged_campaign`)."""

    from jgtest.host_loop import host_game
    from jgtest.methods.bridged_campaign import AGENTS as BRIDGED
    from jgtest.methods.bridged_campaign import BridgedAgent, device_run, run_bridged
    from jgtest.methods.ppgta_models import load_models

    if args.method not in BRIDGED:
        raise SystemExit(f"error: over an Unreal game, --method must be one of {', '.join(BRIDGED)}")
    try:  # --game-arg: the bridge's options (camera, action_seconds, timeout_s, units_per_cell, ...); connects lazily
        game = host_game(args.game, **_game_args(args))
    except (ValueError, TypeError) as error:
        raise SystemExit(f"error: {error}") from None
    if not args.ppgta_models:
        raise SystemExit("error: over an Unreal game, pass --ppgta-models DIR (models trained on the device twin: `jgtest run ppgta --game ParkWorld-v0`)")
    if args.method == "inspector" and not args.explorer_from:
        raise SystemExit("error: inspector over an Unreal game needs --explorer-from RUN (an Inspector campaign on ParkWorld-v0: Inspector learns on the device twin only)")
    try:
        models = load_models(args.ppgta_models)  # with the config they were trained with
    except FileNotFoundError as error:
        raise SystemExit(f"error: --ppgta-models: {error}") from None
    out = prepare_out_dir(args.out, args.overwrite, args.resume)
    config = {"method": args.method, "game": args.game, "game_args": _game_args(args), "seed": args.seed, "detector": args.detector,
              "episode_steps": 2000 if not args.quick else 200, "ppgta_models": str(Path(args.ppgta_models).resolve()),
              "explorer_from": args.explorer_from and str(Path(args.explorer_from).resolve())}  # fmt: skip
    config = json.loads(json.dumps(config))  # as config.json holds it
    if args.resume:  # the campaign continues as it started; only its number of episodes may change
        saved = {k: v for k, v in json.loads((out / "config.json").read_text()).items() if k != "episodes"}
        if saved != config:
            changed = sorted(k for k in config.keys() | saved.keys() if saved.get(k) != config.get(k))
            raise SystemExit(f"error: --resume: {args.out!r} holds a campaign with other settings ({', '.join(changed)})")
    (out / "config.json").write_text(json.dumps({**config, "episodes": _episodes(args)}, indent=2))
    try:
        trained = device_run(args.explorer_from, models) if args.explorer_from else None
        agent = BridgedAgent(models, args.method, trained, args.detector)
    except (ValueError, TypeError) as error:
        raise SystemExit(f"error: {error}") from None
    with game as env:
        summary = run_bridged(env, agent, out, episodes=_episodes(args), episode_steps=config["episode_steps"], seed=args.seed, resume=args.resume)
    print(f"{args.method} over {args.game}: {summary['ooi_tested']} objects tested ({summary['ooi_success']} succeeded), "
          f"{summary['texture_flagged']} flagged by the texture oracle, {len(summary['faults'])} fault(s) of the wire; wrote {out}")  # fmt: skip
    return 0


def compare(summaries: dict, models) -> dict:
    """The comparison's ``summary.json``: per agent the headline numbers and curves, the paper's, and the models' metrics."""
    keys = ("pathway_coverage", "ooi_tested", "ooi_total", "ooi_success", "test_success_rate", "texture_bugs_found", "texture_oracle", "at_paper_episodes", "curves", "wall_s")
    first = next(iter(summaries.values()))
    return {
        "game": "ParkWorld-v0", "episodes": first["episodes"], "episode_steps": first["episode_steps"],
        "agents": {a: {k: s[k] for k in keys if k in s} for a, s in summaries.items()}, "paper": first["paper"],
        "models": {k: {m: v for m, v in models.metrics[k].items() if m != "history"} for k in ("detector", "oracle", "path", "circle")
                   if models is not None and k in models.metrics},
    }  # fmt: skip
