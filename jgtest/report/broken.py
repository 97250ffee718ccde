"""The report's first section, what is broken: every distinct bug of a run (:mod:`jgtest.report.distinct`)
with its kind, where and when it fired, how many records it gathered, its reproducer's length
before and after shrinking, the command that replays it, and a view of it.

The view is drawn from the shortest reproducer replayed on the bare game (an on-device twin): the
player's path from the episode's start, seen from above, its start and the spot where the bug
fired marked. A bridged game's bug, whose replay needs the real game running, is shown by the
place its record names.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np

from jgtest.report.distinct import DistinctBug, distinct_bugs
from jgtest.report.records import located_records, replay_command

#: Distinct bugs drawn at most (the table lists them all).
MAX_VIEWS = 24


def broken_section(run_dir: str | Path) -> dict:
    """The section's rows and views: ``{"header", "rows", "views", "records"}`` (module docstring)."""
    located = located_records(run_dir)
    where = {id(r): (p, i) for r, p, i in located}
    bugs = distinct_bugs([r for r, _, _ in located])
    rows, views = [], []
    for n, bug in enumerate(bugs):
        record = bug.representative
        path, index = where[id(record)]
        shrunk = f"{len(record.actions)} → {len(record.trace_min)}" if record.trace_min else f"{len(record.actions)} (not shrunk)"
        rows.append([n + 1, record.kind, record.game, record.bug_id, _place(record.position), f"episode {record.episode}, step {record.step}",
                     len(bug.records), shrunk, replay_command(record, path, index)])  # fmt: skip
        if n < MAX_VIEWS:
            image = bug_view(bug)
            if image is not None:
                views.append({"uri": "data:image/png;base64," + base64.b64encode(image).decode(), "caption": f"bug {n + 1}: {record.kind} on {record.game}"})
    header = ["#", "kind", "game", "bug", "where", "when", "records", "actions (before → after shrinking)", "replay"]
    return {"header": header, "rows": rows, "views": views, "records": len(located)}


def bug_view(bug: DistinctBug) -> bytes | None:
    """A PNG of the bug's reproducer (module docstring); ``None`` where the game cannot be replayed here."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    record = bug.representative
    path = replayed_path(record)
    fig = Figure(figsize=(3.2, 3.2), dpi=80)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if path is not None and len(path):
        ax.plot(path[:, 0], path[:, 1], color="#3b6ea5", linewidth=1.2)
        ax.scatter(path[:1, 0], path[:1, 1], color="#2a9d55", s=30, label="start", zorder=3)
        ax.scatter(path[-1:, 0], path[-1:, 1], color="#c0392b", marker="X", s=70, label="bug", zorder=4)
    elif len(record.position) >= 2:
        ax.scatter([record.position[0]], [record.position[1]], color="#c0392b", marker="X", s=70, label="bug")
    else:
        return None
    ax.set_title(f"{record.kind} bug {record.bug_id}, {len(record.trace_min or record.actions)} actions", fontsize=8)
    ax.legend(fontsize=7, loc="best")
    ax.tick_params(labelsize=6)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def replayed_path(record) -> np.ndarray | None:
    """``float[T, 2]``: the player's position after each action of the record's shortest reproducer,
    replayed on the bare game; ``None`` for a bridged game or a record the game cannot replay."""
    from jgtest.errors import BadFile
    from jgtest.host_loop import is_host_game
    from jgtest.report.replay import replay_positions

    if is_host_game(record.game):
        return None
    try:
        positions = replay_positions(record)
    except BadFile:
        return None
    return positions if positions.shape[-1] >= 2 else np.stack([positions[:, 0], np.arange(len(positions))], axis=1)


def _place(position) -> str:
    return "(" + ", ".join(f"{p:.4g}" for p in position) + ")" if len(position) else "–"

