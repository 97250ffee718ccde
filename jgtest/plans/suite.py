"""Plans as a functional test suite: every plan of a list run under N seeds in one jitted call,
with each run's validation table, one pass/fail table, and ``report.json``.
"""

from __future__ import annotations

import json
from operator import itemgetter
from pathlib import Path

from jgtest.errors import BadInput, PlanError
from jgtest.plans import doom


def load_plans(paths: list[Path], game: str | None = None) -> tuple[list, str]:
    """The plans in ``paths``, each checked to be for ``game`` (``None``: the first plan's), and
    that game.

    Raises:
      BadFile: a plan file that cannot be read as JSON (:func:`jgtest.plans.model.load_plan`).
      PlanError: a plan that does not fit its schema, or is for another game (naming the path).
    """
    from jgtest.plans.model import load_plan

    plans, given = [], game is not None
    for path in paths:
        plan = load_plan(path)
        game = game or plan.game
        if plan.game != game:
            raise PlanError(
                f"{path}: the plan is for {plan.game}, not "
                f"{'--game ' + game if given else game + ' (the first plan’s)'}"
            )
        plans.append(plan)
    return plans, game


def run_budget(game: str, seeds: int | None, max_steps: int | None) -> tuple[int, int]:
    """Runs per plan and a run's step budget: those given, else the game's defaults (the Dungeon's 4
    seeds, vectorized, and 200 steps; a Doom level's 1 seed, as its runs without monsters repeat
    each other, and :data:`jgtest.plans.doom.DEFAULT_MAX_STEPS`)."""
    level = doom.level_of(game)
    return (
        int(seeds) if seeds is not None else 1 if level else 4,
        int(max_steps) if max_steps is not None else doom.DEFAULT_MAX_STEPS if level else 200,
    )


def navigator_for(kind: str, navigator_from: str | Path | None = None):
    """The ``scripted`` navigator, or the ``learned`` one trained into ``navigator_from``.

    Raises:
      BadFile: no trained navigator there (:func:`jgtest.plans.navigation.load_navigator`).
    """
    from jgtest.plans.agent import scripted_navigator

    if kind == "scripted":
        return scripted_navigator
    from jgtest.plans.navigation import learned_navigator, load_navigator

    return learned_navigator(*load_navigator(navigator_from))


def plan_reports(
    paths: list[Path],
    game: str | None = None,
    variant: str = "normal",
    seeds: int | None = None,
    max_steps: int | None = None,
    navigator=None,
) -> dict[str, list[dict]]:
    """Every plan of ``paths`` run under seeds ``0..seeds-1`` on ``game``'s ``variant`` (``None``:
    the plans' own game; one jitted call, or on a ViZDoom level one run after another on one engine,
    :func:`jgtest.plans.doom.run_plan`): each plan file's runs' reports
    (:func:`jgtest.plans.report.run_report`).

    Raises:
      BadInput: ``seeds`` or ``max_steps`` below 1; a plan that does not fit its schema or does not
        compile (:class:`jgtest.plans.model.PlanError`).
      BadFile: a plan file that cannot be read as JSON.
      ValueError: an unknown game or variant (:func:`jgtest.make`).
    """
    return _reports(paths, *_resolved(paths, game, seeds, max_steps), variant, navigator)


def _resolved(
    paths: list[Path], game: str | None, seeds: int | None, max_steps: int | None
) -> tuple[list, str, int, int]:
    """The plans, their game, the runs per plan and the step budget (:func:`load_plans`,
    :func:`run_budget`), checked."""
    plans, game = load_plans(paths, game)
    seeds, max_steps = run_budget(game, seeds, max_steps)
    for flag, value in (("--seeds", seeds), ("--max-steps", max_steps)):
        if value < 1:
            raise BadInput(f"{flag} must be at least 1, got {value}")
    return plans, game, seeds, max_steps


def _reports(
    paths: list[Path], plans: list, game: str, seeds: int, max_steps: int, variant: str, navigator
) -> dict[str, list[dict]]:
    """:func:`plan_reports` of plans already loaded and checked (:func:`_resolved`)."""
    if doom.level_of(game):
        return _doom_reports(paths, plans, game, variant, seeds, max_steps, navigator)
    import jax

    import jgtest
    from jgtest.plans.agent import RunSettings, run_plans, scripted_navigator
    from jgtest.plans.compiled import stack_plans
    from jgtest.plans.model import plan_game
    from jgtest.plans.report import run_report

    env, params = jgtest.make(game, variant=variant)
    compiled = stack_plans(plans, env)
    keys = jax.vmap(jax.random.key)(jax.numpy.arange(seeds))
    agent, _ = run_plans(
        env,
        plan_game(game),
        params,
        compiled,
        keys,
        RunSettings(max_steps=max_steps),
        navigator=navigator or scripted_navigator,
    )
    agent = jax.device_get(agent)
    return {
        str(path): [
            run_report(plan, jax.tree.map(itemgetter((p, s)), agent), env, s) for s in range(seeds)
        ]
        for p, (path, plan) in enumerate(zip(paths, plans))
    }


def _doom_reports(
    paths, plans, game: str, variant: str, seeds: int, max_steps: int, navigator
) -> dict[str, list[dict]]:
    """:func:`plan_reports` on a ViZDoom level: each plan and seed one run, one after another, on
    one engine."""
    from jgtest.plans.agent import scripted_navigator

    if variant != "normal":
        raise BadInput(f"--variant {variant}: a ViZDoom level has no variants (normal only)")
    if navigator not in (None, scripted_navigator):
        raise BadInput(
            "--navigator learned: the learned navigator walks the Dungeon; a ViZDoom level's "
            "plans use the scripted walker"
        )
    for path, plan in zip(paths, plans):  # every node's target, before the engine starts
        try:
            doom.plan_targets(plan)
        except PlanError as error:
            raise PlanError(f"{path}: {error}") from None
    env = doom.make_env(doom.level_of(game))
    try:
        return {
            str(path): [doom.run_plan(plan, seed, max_steps, env) for seed in range(seeds)]
            for path, plan in zip(paths, plans)
        }
    finally:
        env.close()


def run_suite(
    paths: list[Path],
    game: str | None = None,
    variant: str = "normal",
    seeds: int | None = None,
    max_steps: int | None = None,
    navigator=None,
    out: str | Path | None = None,
    show_each: bool = False,
    junit: str | Path | None = None,
    navigator_name: str = "scripted",
) -> bool:
    """Runs every plan of ``paths`` (:func:`plan_reports`), prints each run's validation table
    (``show_each``) and the pass/fail table, writes ``out/report.json`` when ``out`` is given and
    the JUnit file when ``junit`` is (:func:`jgtest.report.junit.plan_junit`); whether every run
    passed.

    Raises:
      BadFile: ``out`` a file, or a folder that cannot be created; and :func:`plan_reports`' errors.
    """
    from jgtest.files import make_folder, write_text
    from jgtest.plans.report import validation_table
    from jgtest.report.console import show

    out = make_folder(out) if out else None
    plans, game, seeds, max_steps = _resolved(paths, game, seeds, max_steps)
    reports = _reports(paths, plans, game, seeds, max_steps, variant, navigator)
    if show_each:
        for report in reports[str(paths[0])]:
            show(validation_table(report))
    show(suite_table(reports, len(paths), seeds, game, variant))
    if out:
        settings = {
            "game": game,
            "variant": variant,
            "seeds": seeds,
            "max_steps": max_steps,
            "navigator": navigator_name,
        }
        write_text(out / "report.json", json.dumps({**settings, "plans": reports}, indent=2))
        print(f"wrote {out / 'report.json'}")
    if junit:
        from jgtest.report.junit import plan_junit

        again = [
            "jgtest",
            "plan",
            "run",
            *plan_run_options(game, variant, seeds),
            "--max-steps",
            str(max_steps),
        ]
        plan_junit(reports, junit, again)
        print(f"wrote {junit}")
    return all(r["passed"] for runs in reports.values() for r in runs)


def plan_run_options(game: str, variant: str, seeds: int) -> list[str]:
    """The options of ``jgtest plan run`` that run a plan again on ``game``'s ``variant`` under
    seeds ``0..seeds-1``."""
    return ["--game", game, "--variant", variant, "--seeds", str(seeds)]


def suite_table(reports: dict, plans: int, seeds: int, game: str, variant: str):
    """One row per plan: runs passed, and the first failure."""
    from rich.table import Table

    from jgtest.report.console import printable

    table = Table(title=f"{plans} plan(s) × {seeds} seed(s) on {game} ({variant})")
    for column in ("plan", "passed", "first failure"):
        table.add_column(column)
    for path, runs in reports.items():
        failures = [r["failure"] for r in runs if not r["passed"]]
        table.add_row(
            printable(Path(path).name),
            f"{len(runs) - len(failures)}/{len(runs)}",
            printable(failures[0]) if failures else "",
        )
    return table
