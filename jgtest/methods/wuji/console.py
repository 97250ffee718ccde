"""Wuji in the terminal: a header naming the campaign, a progress bar per run, then the strategies'
table (bugs, states, env steps, Wuji against each): what ``jgtest run wuji`` and the main job
  show."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jgtest.methods.wuji.campaign import run
from jgtest.methods.wuji.config import WujiConfig


def budget_text(config: WujiConfig) -> str:
    """The campaign's budget in words: seconds and/or env steps, else generations."""
    budgets = [f"{config.budget_s:g} s"] if config.budget_s is not None else []
    budgets += [f"{config.budget_steps:,} env steps"] if config.budget_steps is not None else []
    return " and ".join(budgets) or f"{config.generations} generations"


def run_in_console(
    config: WujiConfig,
    out_dir: str | Path,
    strategies: Sequence[str],
    seeds: int,
    quiet: bool = False,
    resume: bool = False,
    tensorboard: str | Path | None = None,
) -> dict:
    """:func:`jgtest.methods.wuji.run` with its header, progress bars (unless ``quiet``) and
    table; with ``tensorboard``, each run's bugs found per generation as TensorBoard event files
    there (``STRATEGY/seed-S/bugs_found``)."""
    from contextlib import nullcontext

    from jgtest.report.console import progress, show, stderr
    from jgtest.report.tensorboard import CurveWriter

    budget = budget_text(config)
    budgeted = config.budget_s is not None or config.budget_steps is not None
    stderr().print(
        f"Wuji on {config.game}: {', '.join(strategies)}; {seeds} seed(s), {budget} each, "
        f"population {config.population}"
    )
    curves = CurveWriter(tensorboard) if tensorboard else nullcontext()
    with progress(quiet, ("bugs", "bugs")) as bars, curves:
        tasks = {}

        def on_run(strategy, seed, generation, total, bugs):
            name = f"{strategy} seed {seed}"
            if name not in tasks:
                tasks[name] = bars.add_task(name, total=None if budgeted else total, bugs=0)
            bars.update(tasks[name], completed=generation, bugs=bugs)
            if tensorboard:
                curves.scalars({"bugs_found": bugs}, generation, f"{strategy}/seed-{seed}/")

        summary = run(config, out_dir, strategies, seeds, resume=resume, on_run=on_run)
    show(summary_table(config, summary, seeds))
    print(
        f"wrote {out_dir}: summary.json, bugs_over_time.png, coverage.png, population.png; runs "
        f"in {out_dir}/STRATEGY/seed-S/ (bugs.jsonl, checkpoints)"
    )
    return summary


def summary_table(config: WujiConfig, summary: dict, seeds: int):
    """Per strategy: bugs found and states covered (mean ± sd over the seeds), env steps, and Wuji's
    seeds against the strategy's (Cliff's delta, Holm-corrected p)."""
    from rich.table import Table

    from jgtest.report.html import wuji_versus_columns

    table = Table(title=f"Wuji, {config.game}: {seeds} seed(s), {budget_text(config)} each")
    versus_header, versus = wuji_versus_columns(summary)
    for column in (
        "strategy",
        "bugs found (mean ± sd)",
        "state coverage (mean ± sd)",
        "env steps (mean)",
        *versus_header,
    ):
        table.add_column(column, justify="right")
    for s in summary["strategies"]:
        b, c, e = summary["bugs_found"][s], summary["state_coverage"][s], summary["env_steps"][s]
        table.add_row(
            s,
            f"{b['mean']:.1f} ± {b['sd']:.1f} / {summary['bugs_total']}",
            f"{c['mean']:.0f} ± {c['sd']:.0f}",
            f"{e['mean']:,.0f}",
            *versus[s],
        )
    return table
