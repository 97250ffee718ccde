"""Figures of a Wuji strategy comparison (Zheng et al., 2019): bugs and states over time
(:func:`bugs_over_time_plot`, §V-B Fig. 7-8), states covered (:func:`coverage_plot`, §V-C) and the
final populations (:func:`population_plot`, §V-D Fig. 9), drawn without pyplot.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from jgtest.report.plots import save_figure

__all__ = ["bugs_over_time_plot", "coverage_plot", "population_plot"]


def bugs_over_time_plot(
    timelines: Mapping[str, Sequence[np.ndarray]],
    path: str | os.PathLike,
    bugs_total: int,
    title: str = "",
) -> Path:
    """Bugs found (left) and states covered (right) over time, mean over seeds per strategy.

    ``timelines[strategy]``: per seed, ``[K, 4]`` rows ``(seconds, env steps, bugs found, states
    covered)``.
    """
    fig = Figure(figsize=(12.0, 4.5))
    end = max((float(t[-1, 0]) for runs in timelines.values() for t in runs if len(t)), default=1.0)
    grid = np.linspace(0.0, end, 200)
    for panel, (column, label) in enumerate(((2, "bugs found"), (3, "distinct states covered"))):
        ax = fig.add_subplot(1, 2, panel + 1)
        for i, (strategy, runs) in enumerate(timelines.items()):
            curves = [
                _stairs(grid, t[:, 0], t[:, column]) if len(t) else np.zeros_like(grid)
                for t in runs
            ]
            ax.plot(
                grid,
                np.mean(curves, axis=0),
                drawstyle="steps-post",
                color=f"C{i % 10}",
                label=f"{strategy} ({len(runs)} seeds)",
            )
        ax.set_xlabel("seconds")
        ax.set_ylabel(f"{label} (mean over seeds)")
        if column == 2:
            ax.set_ylim(0, bugs_total + 0.5)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)


def _stairs(grid: np.ndarray, seconds: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The count at each grid time: the last value recorded at or before it (0 before the first)."""
    index = np.searchsorted(seconds, grid, side="right") - 1
    return np.where(index >= 0, values[np.maximum(index, 0)], 0.0)


def coverage_plot(
    coverage: Mapping[str, Sequence[float]], path: str | os.PathLike, title: str = ""
) -> Path:
    """Distinct states covered per strategy, mean ± sd over seeds (§V-C); ``coverage[strategy]``:
    one value per seed."""
    fig = Figure(figsize=(8.0, 4.0))
    ax = fig.add_subplot()
    names = list(coverage)
    means = [float(np.mean(coverage[n])) for n in names]
    sds = [float(np.std(coverage[n])) for n in names]
    ax.bar(names, means, yerr=sds, color=[f"C{i % 10}" for i in range(len(names))], capsize=4)
    ax.set_ylabel("distinct states covered")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)


def population_plot(
    populations: Mapping[str, Mapping[str, Sequence[float]]],
    path: str | os.PathLike,
    title: str = "",
) -> Path:
    """Final populations in the (exploration, winning) plane (Fig. 9), each strategy's first front
    ringed and drawn as the staircase it dominates; ``populations[strategy]``:
    ``{"exploration", "winning", "front"}`` lists (``population.json``). Where every individual
    has the same winning score, the title says so: the front is then the most exploring one."""
    fig = Figure(figsize=(7.0, 5.0))
    ax = fig.add_subplot()
    flat = []
    for i, (strategy, pop) in enumerate(populations.items()):
        x, y, front = (np.asarray(pop[k]) for k in ("exploration", "winning", "front"))
        color = f"C{i % 10}"
        ax.scatter(x, y, s=20, color=color, alpha=0.6, label=strategy)
        first = np.flatnonzero(front == 0)
        order = first[np.argsort(x[first])]
        ax.scatter(x[order], y[order], s=90, facecolors="none", edgecolors=color, linewidths=1.5)
        # the boundary of what the front dominates, down to the lowest winning score
        stairs_x = np.concatenate([x[order], [x[order][-1]]])
        stairs_y = np.concatenate([y[order], [y.min()]])
        ax.step(stairs_x, stairs_y, where="post", color=color, linewidth=1.0)
        if len(y) and np.ptp(y) == 0:
            flat.append(f"{strategy} {y[0]:.3g}")
    if flat:
        title = (title + "\n" if title else "") + (
            "one winning score for all (" + ", ".join(flat) + "): the front is the most exploring"
        )
    ax.set_xlabel("exploration score (distinct states per run)")
    ax.set_ylabel("winning score (discounted return)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)
