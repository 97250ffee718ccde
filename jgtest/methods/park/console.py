"""The park's agents in the terminal (``jgtest run`` of ``inspector``, ``random``, ``ppgta`` and
``compare-explorers``; the main job): progress bars, each agent's table beside the paper's (§VI),
the comparison of the three, and the agents over an Unreal game or on a real level.
"""

from __future__ import annotations

from pathlib import Path

from jgtest.errors import BadInput
from jgtest.files import write_json_atomically
from jgtest.methods.park.compare import AGENTS, compare, comparison_table, rows


def episodes_for(episodes: int | None, quick: bool) -> int:
    """Episodes of 2,000 steps: ``episodes``, else the paper's 45 (10 when ``quick``)."""
    return episodes if episodes is not None else (10 if quick else 45)


def models_config(
    game_kwargs: dict,
    quick: bool,
    seed: int = 0,
    dagger_rounds: int = 0,
    fe: str = "scratch",
    fe_tuning: str = "frozen",
    overrides: dict | None = None,
):
    """PPGTA's models' settings for the park ``game_kwargs`` builds (small ones when ``quick``),
    trained with ``seed`` (the campaign's, or ``--models-seed``): the demonstrations, the networks'
    initialisations and the imitation all vary with it, and so do PPGTA's results
    (``docs/methods/park.md``); ``dagger_rounds`` (``--dagger-rounds``), ``fe`` (``--fe``) and
    ``fe_tuning`` (``--fe-tuning``) as :class:`jgtest.methods.park.models.PPGTAModelsConfig`'s;
    ``overrides``: any other of its fields (e.g. ``{"inverse_epochs": 1}``).

    Raises:
      BadInput: an option the park does not have, an unknown frame encoder, or the pretrained one
        without its weights package.
      ValueError: a bad setting (a negative ``dagger_rounds``).
    """
    from jgtest.methods.park import models

    settings = {
        "seed": seed,
        "dagger_rounds": dagger_rounds,
        "fe": fe,
        "fe_tuning": fe_tuning,
        **game_kwargs,
        **(overrides or {}),
    }
    try:
        return (
            models.PPGTAModelsConfig.quick(**settings)
            if quick
            else models.PPGTAModelsConfig(**settings)
        )
    except TypeError as error:
        raise BadInput(str(error)) from None


def models_for(config, where: Path, log=print):
    """PPGTA's models of ``config`` (:func:`models_config`): loaded from ``where`` when trained
    there, else trained there."""
    from jgtest.methods.park import models

    return models.load_or_train(config, where, log)


def _agent_config(
    agent: str,
    game_kwargs: dict,
    episodes: int,
    seed: int,
    detector: str,
    models_config,
    episode_steps: int | None = None,
):
    """The campaign settings of ``agent`` (checked: built before anything is written); episodes of
    ``episode_steps`` (default: the paper's 2,000)."""
    from jgtest.methods.park import inspector, ppgta

    length = {} if episode_steps is None else {"episode_steps": episode_steps}
    if agent == "ppgta":
        return ppgta.PPGTAConfig(
            episodes=episodes, seed=seed, detector=detector, models=models_config, **length
        )
    try:
        return inspector.InspectorConfig(
            agent=agent, episodes=episodes, seed=seed, **length, **game_kwargs
        )
    except TypeError as error:
        raise BadInput(str(error)) from None


def _play(agent: str, config, out: Path, models, bars, resume: bool) -> dict:
    from jgtest.methods.park import inspector, ppgta

    task = bars.add_task(f"{agent} × ParkWorld-v0 (episodes)", total=config.episodes, tested=0)
    progress = lambda done, total, tested: bars.update(task, completed=done, tested=tested)
    if agent == "ppgta":
        return ppgta.run_with_models(config, models, out, progress=progress, resume=resume)
    return inspector.run(
        config,
        out,
        progress=progress,
        resume=resume,
        oracle=models.oracle if models is not None else None,
    )


def run_in_console(
    method: str,
    out: str | Path,
    game_kwargs: dict,
    episodes: int,
    seed: int = 0,
    detector: str = "ground-truth",
    models_dir: str | Path | None = None,
    quick: bool = False,
    quiet: bool = False,
    resume: bool = False,
    overwrite: bool = False,
    models_seed: int | None = None,
    dagger_rounds: int = 0,
    fe: str = "scratch",
    fe_tuning: str = "frozen",
    models_overrides: dict | None = None,
    episode_steps: int | None = None,
) -> dict:
    """Plays ``method`` (an agent of :data:`AGENTS`, or ``compare-explorers``: all three) on
    ParkWorld-v0 into the run directory ``out`` (:func:`jgtest.run_dir.prepare_run_dir` with
    ``overwrite`` and ``resume``), with progress bars and tables; the summary (of the comparison,
    for ``compare-explorers``). PPGTA's models are trained with ``models_seed`` (default: the
    campaign's ``seed``): one set of models for several campaign seeds is the paper's protocol (its
    models are trained once, §V-B), one set a seed varies the whole pipeline; ``dagger_rounds`` of
    DAgger on their path imitation (beyond the paper,
    :func:`jgtest.methods.park.models.path_dagger`); ``fe`` and ``fe_tuning``: their frame encoder
    (:func:`models_config`), and ``models_overrides``, any other of their settings (a notebook's
    smaller models); episodes of ``episode_steps`` (default: the paper's 2,000).

    PPGTA's models are loaded from ``models_dir`` (default ``OUT/models``) when trained there, else
    trained there first. ``compare-explorers`` plays the three over the same episodes and starts,
    every test's frames read by PPGTA's texture oracle: ``OUT/{ppgta,inspector,random}/`` hold each
    run, ``OUT/summary.json`` the comparison (:func:`jgtest.methods.park.compare.compare`),
    ``OUT/ooi_tested.png`` Fig. 8's curves. Bad settings raise ``ValueError`` before anything is
    played."""
    from jgtest.report.console import progress, show, stderr
    from jgtest.run_dir import prepare_run_dir

    if episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {episodes}")
    if detector != "ground-truth" and method in ("inspector", "random"):
        raise ValueError(
            f"the learned detector is PPGTA's; {method} sees the object mask "
            "(detector='ground-truth')"
        )
    agents = AGENTS if method == "compare-explorers" else (method,)
    models_settings = (
        models_config(
            game_kwargs,
            quick,
            seed if models_seed is None else models_seed,
            dagger_rounds,
            fe,
            fe_tuning,
            models_overrides,
        )
        if "ppgta" in agents
        else None
    )
    configs = {
        agent: _agent_config(
            agent, game_kwargs, episodes, seed, detector, models_settings, episode_steps
        )
        for agent in agents
    }
    out = prepare_run_dir(out, overwrite, resume)
    models = (
        models_for(
            models_settings, Path(models_dir) if models_dir else out / "models", stderr().print
        )
        if "ppgta" in agents
        else None
    )
    summaries = {}
    with progress(quiet, ("OOIs tested", "tested")) as bars:
        for agent in agents:
            summaries[agent] = _play(
                agent, configs[agent], out / agent if len(agents) > 1 else out, models, bars, resume
            )
    for agent, summary in summaries.items():
        show(agent_table(agent, summary, episodes))
    if len(agents) == 1:
        print(f"wrote {out}: summary.json, bugs.jsonl, traces.png, tests.png")
        return summaries[method]
    show(comparison_table(summaries, episodes))
    from jgtest.report.park_maps import ooi_tested_plot

    comparison = compare(summaries, models)
    write_json_atomically(out / "summary.json", comparison)
    ooi_tested_plot(
        {a: s["curves"]["ooi_tested"] for a, s in summaries.items()},
        out / "ooi_tested.png",
        next(iter(summaries.values()))["paper"],
    )
    print(
        f"wrote {out}: summary.json, ooi_tested.png; each agent's run in {out}/AGENT/ "
        "(summary.json, bugs.jsonl, traces.png, tests.png)"
    )
    return comparison


def agent_table(agent: str, summary: dict, episodes: int):
    """One agent's measures, ours beside the paper's (PPGTA §VI)."""
    from rich.table import Table

    table = Table(
        title=f"{agent} on ParkWorld-v0: {episodes} episodes of {summary['episode_steps']:,} steps"
    )
    for column in ("", "ours", "paper (PPGTA §VI)"):
        table.add_column(column, justify="right")
    for row in rows(summary, agent, episodes):
        table.add_row(*row)
    return table


def run_unreal_in_console(
    method: str,
    game: str,
    out: str | Path,
    game_kwargs: dict,
    models_dir: str | None,
    explorer_from: str | None,
    episodes: int,
    seed: int = 0,
    detector: str = "ground-truth",
    quick: bool = False,
    resume: bool = False,
    overwrite: bool = False,
) -> dict:
    """``method`` (PPGTA, Inspector or random) over an Unreal game (``unreal:HOST:PORT`` or
    ``unreal:/path/to/socket``), the agents trained on the device twin driving it through UnrealCV
    (:mod:`jgtest.methods.park.bridged`); ``game_kwargs`` are the bridge's options (camera,
    action_seconds, timeout_s, units_per_cell, ...)."""
    from jgtest.host_loop import host_game
    from jgtest.methods.park.bridged import AGENTS as BRIDGED
    from jgtest.methods.park.bridged import BridgedAgent, device_run, run_bridged
    from jgtest.methods.park.models import load_models
    from jgtest.run_dir import begin_campaign, prepare_run_dir

    if method not in BRIDGED:
        raise ValueError(f"over an Unreal game, --method must be one of {', '.join(BRIDGED)}")
    try:  # connects lazily
        env = host_game(game, **game_kwargs)
    except TypeError as error:
        raise ValueError(str(error)) from None
    if not models_dir:
        raise ValueError(
            "over an Unreal game, pass --ppgta-models DIR (models trained on the device twin: "
            "`jgtest run ppgta --game ParkWorld-v0`)"
        )
    if method == "inspector" and not explorer_from:
        raise ValueError(
            "inspector over an Unreal game needs --explorer-from RUN (an Inspector campaign on "
            "ParkWorld-v0: Inspector learns on the device twin only)"
        )
    try:
        models = load_models(models_dir)  # with the config they were trained with
    except FileNotFoundError as error:
        raise ValueError(f"--ppgta-models: {error}") from None
    out = prepare_run_dir(out, overwrite, resume)
    config = {
        "method": method,
        "game": game,
        "game_args": game_kwargs,
        "seed": seed,
        "detector": detector,
        "episode_steps": 2000 if not quick else 200,
        "ppgta_models": str(Path(models_dir).resolve()),
        "explorer_from": explorer_from and str(Path(explorer_from).resolve()),
    }
    begin_campaign(
        out, {**config, "episodes": episodes}, None, resume, may_change=("episodes",)
    )  # a resume may play more episodes
    trained = device_run(explorer_from, models) if explorer_from else None
    agent = BridgedAgent(models, method, trained, detector)
    with env:
        summary = run_bridged(
            env,
            agent,
            out,
            episodes=episodes,
            episode_steps=config["episode_steps"],
            seed=seed,
            resume=resume,
        )
    print(
        f"{method} over {game}: {summary['ooi_tested']} objects tested ({summary['ooi_success']} "
        "succeeded), "
        f"{summary['texture_flagged']} flagged by the texture oracle, {len(summary['faults'])} "
        f"fault(s) of the wire; wrote {out}"
    )
    return summary


def run_level_in_console(
    method: str,
    game: str,
    out: str | Path,
    game_kwargs: dict,
    episodes: int,
    seed: int = 0,
    quick: bool = False,
    quiet: bool = False,
    overwrite: bool = False,
) -> dict:
    """Inspector or the random agent exploring a real level with object tests
    (:mod:`jgtest.methods.park.level_campaign`): episodes of 2,000 steps (500 when ``quick``, or the
    ``max_steps_in_episode`` game option)."""
    from jgtest.methods.park.level_campaign import LevelExplorationConfig, run
    from jgtest.report.console import progress
    from jgtest.run_dir import prepare_run_dir

    options = dict(game_kwargs)
    steps = int(options.pop("max_steps_in_episode", 500 if quick else 2000))
    config = LevelExplorationConfig(
        game=game,
        agent=method,
        episodes=episodes,
        seed=seed,
        episode_steps=steps,
        rollout_steps=100 if quick else 200,
        game_kwargs=tuple(sorted(options.items())),
    )
    out = prepare_run_dir(out, overwrite, False)
    with progress(quiet) as bars:
        task = bars.add_task(f"{method} on {game}", total=episodes)
        summary = run(
            config,
            out,
            progress=lambda done, total, tested: bars.update(
                task, completed=done, description=f"{method}: {tested} tested"
            ),
        )
    print(
        f"{method} on {game}: {summary['coverage_walkable']:.1%} of the walkable area "
        f"({summary['walkable_cells']} cells) after {episodes} "
        f"episodes of {config.episode_steps} steps; {summary['tested']} things tested "
        f"({summary['tested_succeeded']} walks completed); wrote {out}"
    )
    return summary
