"""Wuji's one entry, :func:`run`: strategies × seeds with one budget, their comparison
(Mann-Whitney U, Cliff's delta), bugs and states at fractions of the budget, and the plots."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from jgtest.analysis import compare_groups
from jgtest.envs.registration import make
from jgtest.files import write_json_atomically
from jgtest.host_loop import is_host_game
from jgtest.methods.wuji import host
from jgtest.methods.wuji.config import STRATEGIES, WujiConfig
from jgtest.methods.wuji.device import run_on_device
from jgtest.methods.wuji.placements import check_game_kwargs
from jgtest.methods.wuji.strategies import REGISTRY
from jgtest.seeds import check_seed


def run(
    config: WujiConfig,
    out_dir: str | Path,
    strategies: Sequence[str] | None = None,
    seeds: int = 1,
    resume: bool = False,
    on_run: Callable[[str, int, int, int, int], None] | None = None,
) -> dict:
    """Runs the experiment: ``config`` for each strategy (default: ``config.strategy`` alone) and
    seeds ``config.seed … config.seed + seeds − 1``, each in ``out_dir/STRATEGY/seed-S``, with the
    same budget (:func:`jgtest.methods.wuji.device.run_on_device`; on a bridged game,
    ``vizdoom:SCENARIO``, :func:`jgtest.methods.wuji.host.run_on_host`); then writes
    ``out_dir/summary.json`` (per strategy: ``bugs_found``, ``state_coverage`` as mean, sd and per
    seed, ``bugs_total``, steps and time; with Wuji and another strategy, ``wuji_against_each``: for
    both measures, Wuji's seeds against each other strategy's, two-sided Mann-Whitney U with Holm's
    correction over those pairs and Cliff's delta (positive where Wuji tends higher),
    :func:`jgtest.analysis.compare_groups`: whether a lead on the means is more than the seeds'
    spread) and the plots ``bugs_over_time.png``, ``coverage.png`` and ``population.png`` (each
    strategy's first seed's final population).

    Args:
      config: the runs' settings; its ``strategy`` is the default of ``strategies``, its ``seed``
        the first seed.
      out_dir: the campaign's directory (created if missing).
      strategies: the strategies to run and compare (:data:`jgtest.methods.wuji.STRATEGIES`).
      seeds: runs per strategy.
      resume: continue each run in ``out_dir`` from its latest checkpoint (on device).
      on_run: called after each generation with ``(strategy, seed, generation, generations, bugs)``.

    Returns:
      The summary written to ``out_dir/summary.json``.
    """
    from jgtest.report.wuji_plots import bugs_over_time_plot, coverage_plot, population_plot

    strategies = tuple(strategies or (config.strategy,))
    for s in strategies:
        if s not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {s!r}")
        dataclasses.replace(config, strategy=s)  # its settings are valid before any run starts
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    check_seed(config.seed + seeds - 1, f"the last seed (seed {config.seed} + seeds {seeds} - 1)")
    bridged = is_host_game(config.game)
    if not bridged:
        # before any run starts
        check_game_kwargs(*make(config.game, **dict(config.game_kwargs)), config.game_kwargs)
    run_one = host.run_on_host if bridged else run_on_device
    out_dir = Path(out_dir)
    results: dict[str, list[dict]] = {}
    for strategy in strategies:
        for seed in range(config.seed, config.seed + seeds):
            run_config = dataclasses.replace(config, strategy=strategy, seed=seed)
            report = (
                None
                if on_run is None
                else (lambda g, n, b, s=strategy, k=seed: on_run(s, k, g, n, b))
            )
            summary = run_one(
                run_config, out_dir / strategy / f"seed-{seed}", progress=report, resume=resume
            )
            results.setdefault(strategy, []).append(summary)
    summary = summarize(config, results)
    write_json_atomically(out_dir / "summary.json", summary)
    title = f"{config.game}, {seeds} seed(s)"
    bugs_over_time_plot(
        _timelines(results), out_dir / "bugs_over_time.png", summary["bugs_total"], title
    )
    coverage_plot(
        {s: summary["state_coverage"][s]["per_seed"] for s in strategies},
        out_dir / "coverage.png",
        title,
    )
    fronts = {
        s: json.loads((out_dir / s / f"seed-{config.seed}" / "population.json").read_text())
        for s in strategies
        if not REGISTRY[s].random
    }
    if fronts:
        population_plot(
            fronts,
            out_dir / "population.png",
            f"{config.game}, seed {config.seed}: final populations",
        )
    return summary


def summarize(config: WujiConfig, results: dict[str, list[dict]]) -> dict:
    """A comparison's summary from its runs' summaries (:func:`run` writes it): ``results`` maps a
    name (a strategy, or a variant of one a study names) to its seeds' run summaries, in order,
    each group the same number of seeds; ``config`` gives the game and the budget. With a group
    named ``wuji`` and others, ``wuji_against_each`` compares it with each of them."""
    strategies = list(results)
    first_runs = results[strategies[0]]
    first = first_runs[0]
    reach = (
        None
        if is_host_game(config.game)
        else getattr(make(config.game, **dict(config.game_kwargs))[0], "reach_classes", None)
    )
    summary = {
        "method": "wuji",
        "game": config.game,
        "game_kwargs": dict(config.game_kwargs),
        "seeds": len(first_runs),
        "generations": config.generations,
        "budget_s": config.budget_s,
        "budget_steps": config.budget_steps,
        "bugs_total": first["bugs_total"],
        "strategies": list(strategies),
        "bugs_found": {s: _stats([r["bugs_found"] for r in runs]) for s, runs in results.items()},
        "state_coverage": {
            s: _stats([r["state_coverage"] for r in runs]) for s, runs in results.items()
        },
        "cells_covered": {
            s: _stats([r["cells_covered"] for r in runs]) for s, runs in results.items()
        },
        "env_steps": {s: _stats([r["env_steps"] for r in runs]) for s, runs in results.items()},
        "wall_s": {s: float(np.sum([r["wall_s"] for r in runs])) for s, runs in results.items()},
        "first_found_step": {
            s: [r["first_found_step"] for r in runs] for s, runs in results.items()
        },
        "bug_kinds": first["bug_kinds"],
        **({"reach_classes": list(reach)} if reach is not None else {}),
        "lineage": {
            s: _lineage([r.get("lineage", []) for r in runs])
            for s, runs in results.items()
            if any(r.get("lineage") for r in runs)
        },
    }
    if "wuji" in results and len(results) > 1:
        summary["wuji_against_each"] = {
            m: compare_groups({s: summary[m][s]["per_seed"] for s in strategies}, against="wuji")
            for m in ("bugs_found", "state_coverage")
        }
    timelines = _timelines(results)
    if config.budget_s is not None:
        summary["by_time"] = _at_budget_fractions(timelines, config.budget_s, _SECONDS)
    if config.budget_steps is not None:
        summary["by_steps"] = _at_budget_fractions(timelines, config.budget_steps, _ENV_STEPS)
        if reach is not None:
            summary["by_reach_class"] = _by_reach_class(
                summary["first_found_step"], reach, config.budget_steps
            )
    return summary


def _timelines(results: dict[str, list[dict]]) -> dict[str, list[np.ndarray]]:
    """Each run's timeline rows (seconds, env steps, bugs, states) as an array."""
    return {
        s: [np.asarray(r["timeline"], np.float64).reshape(-1, 4) for r in runs]
        for s, runs in results.items()
    }


def _lineage(runs: list[list[dict]]) -> dict:
    """Per generation, over the seeds that reached it: the mean survivors of each origin, and the
    front's mean stored and fresh (ES, RS) (the fresh ones where the run re-scored them)."""
    generations = max(len(rows) for rows in runs)
    table = {"generation": list(range(1, generations + 1)), "survivors": {}, "stored": []}
    table["fresh"] = []
    rows_at = [[rows[g] for rows in runs if len(rows) > g] for g in range(generations)]
    for origin in rows_at[0][0]["survivors"]:
        table["survivors"][origin] = [
            float(np.mean([row["survivors"][origin] for row in rows])) for rows in rows_at
        ]
    for field in ("stored", "fresh"):
        table[field] = [
            None
            if any(row[field] is None for row in rows)
            else np.mean([np.mean(row[field], axis=0) for row in rows], axis=0).round(4).tolist()
            for rows in rows_at
        ]
    return table


def _stats(values) -> dict:
    """Mean, sd and the per-seed values (integers) of one measure over a strategy's seeds."""
    return {
        "mean": float(np.mean(values)),
        "sd": float(np.std(values)),
        "per_seed": [int(v) for v in values],
    }


#: Columns of a timeline row: seconds, env steps, bugs found, states covered.
_SECONDS, _ENV_STEPS, _BUGS, _STATES = range(4)


def _at_budget_fractions(
    timelines: dict[str, list[np.ndarray]], budget: float, column: int, fractions=(0.25, 0.5, 1.0)
) -> dict:
    """Bugs found and states covered by each strategy at fractions of the budget (mean, sd and per
    seed, from the timelines, the last row within each): the comparison at shorter equal budgets,
    from the same runs. ``column``: the budget's timeline column (seconds or env steps)."""

    def at(t: np.ndarray, spent: float, value: int) -> int:
        done = t[t[:, column] <= spent]
        return int(done[-1, value]) if len(done) else 0

    return {
        (f"{budget * f:g}" if column == _SECONDS else str(int(budget * f))): {
            s: {
                "bugs_found": _stats([at(t, budget * f, _BUGS) for t in runs]),
                "state_coverage": _stats([at(t, budget * f, _STATES) for t in runs]),
            }
            for s, runs in timelines.items()
        }
        for f in fractions
    }


def _by_reach_class(
    first_found_step: dict[str, list[list]],
    reach: Sequence[str],
    budget: int,
    fractions=(0.25, 0.5, 1.0),
) -> dict:
    """Bugs of each reach class (a game's ``reach_classes``) each strategy had found by fractions of
    the env-step budget (mean, sd and per seed), from each bug's first-found step: exact, unlike
    the timelines' per-call rows."""
    classes = list(dict.fromkeys(reach))

    def found(steps: list, spent: float, c: str) -> int:
        return sum(
            1
            for k, step in enumerate(steps)
            if reach[k] == c and step is not None and step <= spent
        )

    return {
        str(int(budget * f)): {
            s: {c: _stats([found(steps, budget * f, c) for steps in runs]) for c in classes}
            for s, runs in first_found_step.items()
        }
        for f in fractions
    }


def prepare_campaign_dir(
    out_dir: str | Path, strategies: Sequence[str], overwrite: bool = False, resume: bool = False
) -> Path:
    """The campaign's directory, refused when it holds runs of these strategies (unless ``resume``
    continues them or ``overwrite`` removes them).

    Raises:
      ValueError: it holds a run of one of ``strategies``, or cannot be used
        (:func:`jgtest.run_dir.prepare_run_dir`).
    """
    import shutil

    from jgtest.run_dir import prepare_run_dir

    out = prepare_run_dir(out_dir)  # its lock first: the check and the removal below under it
    previous = [out / s for s in strategies if (out / s).exists()]
    if previous and not (resume or overwrite):
        raise ValueError(
            f"--out {str(out_dir)!r} already holds a campaign ({previous[0].name}/); pass "
            "--resume to continue it or --overwrite"
        )
    if overwrite and not resume:
        for path in previous:
            shutil.rmtree(path)
    return out
