"""Bird's-eye maps of a bridged game's level drawn from its geometry (a ViZDoom level's blocking
lines): :func:`level_map`. Coordinates are the game's (map units, ``x`` east, ``y`` north), its
cells the coverage squares :class:`envs_bridge.vizdoom.VizDoomEnv` lays out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from jgtest.report.plots import save_figure

__all__ = ["level_map"]


def level_map(
    walls: Sequence[tuple[float, float, float, float]],
    path: str | os.PathLike,
    *,
    title: str = "",
    covered: tuple[np.ndarray, tuple[float, float, float, float], float] | None = None,
    traces: Mapping[str, np.ndarray] | None = None,
    points: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> Path:
    """Draws the level and what was found on it; returns ``path`` (the PNG, folders created).

    Args:
      walls: the level's blocking lines ``(x1, y1, x2, y2)``, in black (none for a game without a
        map: the traces alone show where it went).
      path: where the PNG goes.
      title: the figure's title.
      covered: ``(cells bool[rows, cols], bounds (x0, y0, x1, y1), cell_size)``: covered cells,
        shaded.
      traces: per agent, positions ``[T, 2]``; a step longer than four cells (a new episode) is not
        drawn.
      points: per agent, ``(xy [P, 2], confidence [P] in [0, 1])``: RELINE's low-FPS areas,
        coloured by confidence, one marker per agent.

    Raises:
      ValueError: neither walls nor traces, or a points entry whose arrays disagree in length.
    """
    walls = np.asarray(walls, float).reshape(-1, 4)
    if not len(walls) and not traces:
        raise ValueError("level_map needs the level's walls or traces to draw")
    fig = Figure(figsize=(7.0, 7.0))
    ax = fig.add_subplot()
    if covered is not None:
        cells, (x0, y0, _, _), size = covered
        rows, cols = np.asarray(cells).shape
        ax.imshow(
            np.where(cells, 1.0, np.nan),
            origin="lower",
            cmap="Reds",
            vmin=0.0,
            vmax=1.6,
            alpha=0.6,
            extent=(x0, x0 + cols * size, y0, y0 + rows * size),
            interpolation="nearest",
        )
    ax.add_collection(LineCollection(walls.reshape(-1, 2, 2), colors="black", linewidths=0.8))
    drawn = (
        walls.reshape(-1, 2)
        if len(walls)
        else np.concatenate([np.asarray(t, float).reshape(-1, 2) for t in traces.values()])
    )
    drawn = drawn[np.isfinite(drawn).all(axis=1)]
    span = float(np.ptp(drawn[:, 0]) + np.ptp(drawn[:, 1])) / 2 if len(drawn) else 1.0
    for i, (agent, positions) in enumerate((traces or {}).items()):
        trace = np.asarray(positions, float).reshape(-1, 2).copy()
        jumps = np.linalg.norm(np.diff(trace, axis=0), axis=-1) > span / 10
        trace[1:][jumps] = np.nan
        ax.plot(
            trace[:, 0],
            trace[:, 1],
            color=f"C{i % 10}",
            lw=0.5,
            alpha=0.7,
            label=f"{agent}'s traces",
        )
    markers = "osD^v<>"
    scatter = None
    for i, (agent, (xy, confidence)) in enumerate((points or {}).items()):
        xy, confidence = (
            np.asarray(xy, float).reshape(-1, 2),
            np.asarray(confidence, float).reshape(-1),
        )
        if len(xy) != len(confidence):
            raise ValueError(
                f"points[{agent!r}]: {len(xy)} positions but {len(confidence)} confidences"
            )
        scatter = ax.scatter(
            xy[:, 0],
            xy[:, 1],
            c=confidence,
            cmap="viridis",
            vmin=0.5,
            vmax=1.0,
            s=40,
            marker=markers[i % len(markers)],
            edgecolors="black",
            linewidths=0.5,
            label=f"{agent} (n = {len(xy)})",
            zorder=3,
        )
    if scatter is not None:
        fig.colorbar(scatter, ax=ax, shrink=0.7, label="confidence (share of visits over t)")
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xlabel("x (map units)")
    ax.set_ylabel("y (map units)")
    ax.set_title(title)
    if traces or points:
        ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)
