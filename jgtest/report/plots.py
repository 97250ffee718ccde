"""Figures for RELINE's low-FPS analysis (Tufano et al., §4.2): render times (:func:`violin_plot`,
Fig. 4-(a)), where the low-FPS points lie (:func:`position_plot`, Fig. 4-(b)/(c)) and the replay
check per track section (:func:`section_plot`, §4.1.3, Fig. 3).

chosen: ``FigureCanvasAgg`` without pyplot, because it keeps no global figure state or GUI window
and is safe from worker threads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from jgtest.analysis.stats import as_sample

__all__ = ["position_plot", "section_plot", "violin_plot"]


def save_figure(fig: Figure, path: str | os.PathLike) -> Path:
    """Writes ``fig`` as a PNG at ``path`` (its folder created) and returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(out, format="png", dpi=100)
    return out


def violin_plot(
    groups: Mapping[str, Sequence[float] | np.ndarray],
    path: str | os.PathLike,
    threshold_ms: float | None = None,
    title: str | None = None,
    ylabel: str = "ms to render the frames after an action",
) -> Path:
    """RELINE Fig. 4-(a): one violin per group of render times.

    ``groups`` maps a label to its render times in ms, in drawing order (the paper:
    "Regular FPS", then each agent's times at its low-FPS points). Under each violin the
    label, ``n`` and the median are written. A group with no value (an agent that found
    no low-FPS point) keeps its slot, empty, labelled ``n = 0``. ``threshold_ms``, when
    given, is drawn as a red horizontal line (the paper's ``t = 18.36`` ms).

    Returns:
        ``path`` as a :class:`~pathlib.Path`; the PNG is written there (parent folders
        are created).

    Raises:
        ValueError: if ``groups`` is empty, a group is not 1-D or holds NaN / inf, or
            ``threshold_ms`` is not finite.
    """
    if not isinstance(groups, Mapping) or len(groups) == 0:
        raise ValueError("violin_plot needs at least one group")
    data = [
        (str(name), as_sample(v, f"group {name!r}", allow_empty=True)) for name, v in groups.items()
    ]
    if threshold_ms is not None and not np.isfinite(float(threshold_ms)):
        raise ValueError(f"threshold_ms must be finite, got {threshold_ms!r}")

    fig = Figure(figsize=(max(6.0, 1.8 * len(data) + 2.0), 5.0))
    ax = fig.add_subplot()
    positions = np.arange(1, len(data) + 1)
    # Colour by slot (not by drawn violin) so a group keeps its colour when another is empty.
    filled = [
        (slot, pos, vals) for slot, (pos, (_, vals)) in enumerate(zip(positions, data)) if vals.size
    ]
    if filled:
        parts = ax.violinplot(
            [v for _, _, v in filled],
            positions=[p for _, p, _ in filled],
            widths=0.8,
            showmedians=True,
            showextrema=True,
        )
        for (slot, _, _), body in zip(filled, parts["bodies"]):
            body.set_facecolor(f"C{slot % 10}")
            body.set_edgecolor("black")
            body.set_alpha(0.6)
        for key in ("cmedians", "cmins", "cmaxes", "cbars"):
            if key in parts:
                parts[key].set_color("black")
                parts[key].set_linewidth(1.0)
        # Small samples give thin or degenerate violins: show the points as well.
        for slot, pos, vals in filled:
            if vals.size <= 50:
                jitter = np.linspace(-0.08, 0.08, vals.size) if vals.size > 1 else np.zeros(1)
                ax.scatter(
                    pos + jitter,
                    vals,
                    s=8,
                    color=f"C{slot % 10}",
                    edgecolors="black",
                    linewidths=0.3,
                    zorder=3,
                )
    if threshold_ms is not None:
        ax.axhline(
            float(threshold_ms), color="red", linewidth=1.5, label=f"t = {float(threshold_ms):g} ms"
        )
        ax.legend(loc="upper right")

    labels = []
    for name, vals in data:
        if vals.size:
            labels.append(f"{name}\nn = {vals.size}\nmedian = {np.median(vals):.2f}")
        else:
            labels.append(f"{name}\nn = 0")
    ax.set_xticks(positions)
    ax.set_xticklabels(labels)
    ax.set_xlim(0.4, len(data) + 0.6)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_figure(fig, path)


def position_plot(
    points: Mapping[str, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
    path: str | os.PathLike,
    theta: float | None = None,
    road_half_width: float | None = None,
    path_length: float | None = None,
) -> Path:
    """RELINE Fig. 4-(b)/(c) as one scatter of the agents' low-FPS points.

    ``points`` maps an agent to ``(path_done, centering)``, two equal-length 1-D arrays.
    x = ``100 * path_done / path_length`` (percent of the lap, 0 = start line, 100 =
    finish line) when ``path_length`` is given, else ``path_done`` as given (already in
    percent); y = ``centering`` (0 = track centre). One colour per agent, the legend
    giving the number of points (``n = 0`` for an agent without any). Dashed horizontal
    lines at ``±theta`` (the area the reward function asks RELINE to stay in) and solid
    lines at ``±road_half_width`` (the track limits), when given.

    Returns:
        ``path`` as a :class:`~pathlib.Path`; the PNG is written there (parent folders
        are created).

    Raises:
        ValueError: if ``points`` is empty, an entry is not a ``(path_done, centering)``
            pair of equal-length 1-D finite arrays, or ``theta`` / ``road_half_width`` /
            ``path_length`` is not a positive finite number.
    """
    if not isinstance(points, Mapping) or len(points) == 0:
        raise ValueError("position_plot needs at least one agent")
    for name, value in (
        ("theta", theta),
        ("road_half_width", road_half_width),
        ("path_length", path_length),
    ):
        if value is not None and not (np.isfinite(float(value)) and float(value) > 0):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    series = []
    for name, pair in points.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"points[{name!r}] must be a (path_done, centering) pair")
        x = as_sample(pair[0], f"points[{name!r}] path_done", allow_empty=True)
        y = as_sample(pair[1], f"points[{name!r}] centering", allow_empty=True)
        if x.size != y.size:
            raise ValueError(f"points[{name!r}]: path_done has {x.size} values, centering {y.size}")
        if path_length is not None:
            x = 100.0 * x / float(path_length)
        series.append((str(name), x, y))

    fig = Figure(figsize=(9.0, 5.0))
    ax = fig.add_subplot()
    for i, (name, x, y) in enumerate(series):
        ax.scatter(
            x,
            y,
            s=18,
            color=f"C{i % 10}",
            edgecolors="black",
            linewidths=0.3,
            alpha=0.8,
            label=f"{name} (n = {x.size})",
        )
    for level, color, linestyle, label in (
        (theta, "gray", "--", "±θ"),
        (road_half_width, "black", "-", "track limits"),
    ):
        if level is not None:
            for sign in (1.0, -1.0):
                ax.axhline(
                    sign * float(level),
                    color=color,
                    linestyle=linestyle,
                    linewidth=1.2,
                    label=label if sign > 0 else None,
                )
    ax.axhline(0.0, color="gray", linewidth=0.5, alpha=0.5)
    all_x = np.concatenate([x for _, x, _ in series])
    lo = min(0.0, float(all_x.min())) if all_x.size else 0.0
    hi = max(100.0, float(all_x.max())) if all_x.size else 100.0
    ax.set_xlim(lo - 2.0, hi + 2.0)
    ax.set_xlabel("path_done (% of the lap)")
    ax.set_ylabel("centering")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)


def section_plot(
    section_ms: Sequence[Sequence[float]] | np.ndarray,
    section_start: Sequence[float] | np.ndarray,
    path: str | os.PathLike,
    threshold_ms: float | None = None,
    title: str | None = None,
    xlabel: str = "section start (path_done)",
) -> Path:
    """Render time per section over replayed episodes (RELINE Fig. 3, by section).

    ``section_ms`` is ``[R, S]``: replay ``r``'s mean render time in section ``s``;
    ``section_start`` the ``S`` sections' starts (any unit: the x axis, ``xlabel``). Each replay
    is a thin grey line, the median over replays a thick one; ``threshold_ms``, when
    given, a red horizontal line.

    Raises:
        ValueError: if ``section_ms`` is not a finite 2-D array whose width is
            ``len(section_start)``, or ``threshold_ms`` is not finite.
    """
    ms = np.asarray(section_ms, dtype=np.float64)
    start = np.asarray(section_start, dtype=np.float64)
    if ms.ndim != 2 or ms.shape[0] < 1 or ms.shape[1] != start.shape[0] or start.ndim != 1:
        raise ValueError(
            "section_ms must be [replays, sections] with one column per section "
            f"start; got {ms.shape} and {start.shape}"
        )
    if not (np.all(np.isfinite(ms)) and np.all(np.isfinite(start))):
        raise ValueError("section_ms and section_start must be finite")
    if threshold_ms is not None and not np.isfinite(float(threshold_ms)):
        raise ValueError(f"threshold_ms must be finite, got {threshold_ms!r}")
    fig = Figure(figsize=(9.0, 4.5))
    ax = fig.add_subplot()
    for row in ms:
        ax.plot(start, row, color="gray", linewidth=0.6, alpha=0.5)
    ax.plot(
        start,
        np.median(ms, axis=0),
        color="C0",
        linewidth=2.0,
        marker="o",
        markersize=3,
        label=f"median of {ms.shape[0]} replays",
    )
    if threshold_ms is not None:
        ax.axhline(
            float(threshold_ms),
            color="red",
            linewidth=1.2,
            label=f"t = {float(threshold_ms):.2f} ms",
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean ms to render the frames after an action")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)
