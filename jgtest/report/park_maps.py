"""Bird's-eye maps of the park, as PPGTA's Fig. 7-9: the map (:func:`park_image`), the pathway the
traces covered (:func:`traces_map`), objects tested per episode (:func:`ooi_tested_plot`) and each
object's test (:func:`tests_map`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from jgtest.envs import park_map
from jgtest.envs.park import trace_cells
from jgtest.report.plots import save_figure

__all__ = ["ooi_tested_plot", "park_image", "tests_map", "traces_map"]

OUTCOME_COLOURS = {"success": "#2ca02c", "failed": "#d62728", "missed": "#9a9a9a"}


def park_image(m: park_map.ParkMap) -> np.ndarray:
    """The map as an RGB image, ``float[size, size, 3]`` in ``[0, 1]``, row = y, column = x: grass,
    pathways (white, as the paper's figures), water, trees, crates; invisible walls in magenta (the
    game does not draw them)."""
    image = np.zeros((*m.floor.shape, 3))
    image[m.floor == park_map.GRASS] = (0.72, 0.85, 0.66)
    image[m.floor == park_map.PATH] = (1.0, 1.0, 1.0)
    image[m.floor == park_map.WATER] = (0.55, 0.7, 0.9)
    image[m.solid == park_map.TREE] = (0.25, 0.45, 0.25)
    image[m.solid == park_map.BLOCKAGE] = (0.55, 0.38, 0.2)
    image[m.solid == park_map.INVISIBLE] = (0.85, 0.3, 0.85)
    return image


def _axes(m: park_map.ParkMap, title: str):
    fig = Figure(figsize=(6.5, 6.5))
    ax = fig.add_subplot()
    ax.imshow(park_image(m), origin="upper", extent=(0, m.size, m.size, 0), interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel("x (cells)")
    ax.set_ylabel("y (cells)")
    return fig, ax


def traces_map(
    m: park_map.ParkMap, positions: np.ndarray, path: str | os.PathLike, title: str = ""
) -> Path:
    """Fig. 7: ``positions [T, N, 2]`` ``(x, y)`` of ``N`` games over time: the cells their traces
    covered (:func:`jgtest.envs.park.trace_cells`, the width the coverage counts: picture and number
    agree) in red, and the traces' centre lines (a game's jumps between episodes are not drawn:
    steps longer than 2 cells are cut)."""
    fig, ax = _axes(m, title)
    positions = np.asarray(positions, float)
    rows, cols, within = trace_cells(positions.reshape(-1, 2))
    within &= (rows >= 0) & (rows < m.size) & (cols >= 0) & (cols < m.size)
    covered = np.zeros((m.size, m.size), bool)
    covered[rows[within], cols[within]] = True
    overlay = np.zeros((m.size, m.size, 4))
    overlay[covered] = (0.84, 0.15, 0.16, 0.55)
    ax.imshow(overlay, origin="upper", extent=(0, m.size, m.size, 0), interpolation="nearest")
    for i in range(positions.shape[1]):
        trace = positions[:, i].copy()
        jumps = np.linalg.norm(np.diff(trace, axis=0), axis=-1) > 2.0
        trace[1:][jumps] = np.nan
        ax.plot(trace[:, 0], trace[:, 1], color="#7f0000", lw=0.3, alpha=0.8)
    fig.tight_layout()
    return save_figure(fig, path)


def tests_map(
    m: park_map.ParkMap,
    ooi_pos: np.ndarray,
    outcomes,
    reachable: np.ndarray,
    path: str | os.PathLike,
    title: str = "",
) -> Path:
    """Fig. 9: objects at ``ooi_pos [K, 2]`` coloured by ``outcomes[k]`` (``"success"`` green,
    ``"failed"`` red, ``"missed"`` grey); ``~reachable`` objects ringed in black."""
    fig, ax = _axes(m, title)
    pos, outcomes, reachable = (
        np.asarray(ooi_pos),
        np.asarray(outcomes),
        np.asarray(reachable, bool),
    )
    for outcome, colour in OUTCOME_COLOURS.items():
        sel = outcomes == outcome
        ax.scatter(
            pos[sel, 0],
            pos[sel, 1],
            s=18,
            c=colour,
            edgecolors="none",
            label=f"{outcome} ({int(sel.sum())})",
        )
    ax.scatter(
        pos[~reachable, 0],
        pos[~reachable, 1],
        s=60,
        facecolors="none",
        edgecolors="black",
        linewidths=0.8,
    )
    handles = ax.get_legend_handles_labels()[0] + [
        Line2D(
            [],
            [],
            marker="o",
            ls="",
            mfc="none",
            mec="black",
            label=f"unreachable ({int((~reachable).sum())})",
        )
    ]
    ax.legend(handles=handles, fontsize="small", loc="lower left")
    fig.tight_layout()
    return save_figure(fig, path)


def ooi_tested_plot(curves: dict, path: str | os.PathLike, paper: dict | None = None) -> Path:
    """Fig. 8: objects tested by the end of each episode, a line per agent (``curves``: agent ->
    ``int[episodes]``); the paper's counts after 18 and 45 episodes as markers where given
    (``paper``: agent -> ``{"ooi_tested_18", "ooi_tested_45"}``)."""
    fig = Figure(figsize=(6.5, 4))
    ax = fig.add_subplot()
    for i, (agent, curve) in enumerate(curves.items()):
        colour = f"C{i}"
        ax.plot(np.arange(1, len(curve) + 1), curve, color=colour, label=agent)
        for episode in (18, 45):
            value = (paper or {}).get(agent, {}).get(f"ooi_tested_{episode}")
            if value is not None:
                ax.scatter(
                    [episode],
                    [value],
                    color=colour,
                    marker="x",
                    label=f"{agent}, paper" if episode == 18 else None,
                )
    ax.set_xlabel("episode")
    ax.set_ylabel("OOIs tested")
    ax.set_title("OOIs tested over episodes (PPGTA Fig. 8)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)
