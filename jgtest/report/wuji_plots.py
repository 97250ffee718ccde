"""Figures of a Wuji strategy comparison (Zheng et al., 2019, §V-B Fig. 7–8, §V-C, §V-D Fig. 9).

* :func:`bugs_over_time_plot` — bugs found against time, one line per strategy
  (the mean over seeds of each seed's step curve), as Fig. 7–8.
* :func:`coverage_plot` — distinct states covered per strategy (mean ± sd over seeds).
* :func:`population_plot` — final populations in the (exploration, winning)
  plane, the first front outlined, as Fig. 9.

Drawn with ``FigureCanvasAgg`` (no pyplot), written as PNG.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from jgtest.report.plots import _save

__all__ = ["bugs_over_time_plot", "coverage_plot", "population_plot"]


def bugs_over_time_plot(timelines: Mapping[str, Sequence[np.ndarray]], path: str | os.PathLike, bugs_total: int, title: str = "") -> Path:
    """``timelines[strategy]``: per seed, ``[K, 3]`` rows ``(seconds, env steps, bugs found)``."""
    fig = Figure(figsize=(8.0, 4.5))
    ax = fig.add_subplot()
    end = max((float(t[-1, 0]) for runs in timelines.values() for t in runs if len(t)), default=1.0)
    grid = np.linspace(0.0, end, 200)
    for i, (strategy, runs) in enumerate(timelines.items()):
        curves = [np.interp(grid, t[:, 0], t[:, 2], left=0.0) if len(t) else np.zeros_like(grid) for t in runs]
        ax.step(grid, np.mean(curves, axis=0), where="post", color=f"C{i % 10}", label=f"{strategy} ({len(runs)} seeds)")
    ax.set_xlabel("seconds")
    ax.set_ylabel("bugs found (mean over seeds)")
    ax.set_ylim(0, bugs_total + 0.5)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return _save(fig, path)


def coverage_plot(coverage: Mapping[str, Sequence[float]], path: str | os.PathLike, title: str = "") -> Path:
    """``coverage[strategy]``: distinct states covered, one value per seed."""
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
    return _save(fig, path)


def population_plot(populations: Mapping[str, Mapping[str, Sequence[float]]], path: str | os.PathLike, title: str = "") -> Path:
    """``populations[strategy]``: ``{"exploration", "winning", "front"}`` lists (``population.json``)."""
    fig = Figure(figsize=(7.0, 5.0))
    ax = fig.add_subplot()
    for i, (strategy, pop) in enumerate(populations.items()):
        x, y, front = (np.asarray(pop[k]) for k in ("exploration", "winning", "front"))
        ax.scatter(x, y, s=20, color=f"C{i % 10}", alpha=0.6, label=strategy)
        first = np.flatnonzero(front == 0)
        order = first[np.argsort(x[first])]
        ax.plot(x[order], y[order], color=f"C{i % 10}", linewidth=1.0)
    ax.set_xlabel("exploration score (distinct states per run)")
    ax.set_ylabel("winning score (discounted return)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return _save(fig, path)
