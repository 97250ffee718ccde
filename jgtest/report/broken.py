"""The report's first section, what is broken: the distinct bugs of a run
(:mod:`jgtest.report.distinct`) counted per game and kind, then grouped by game and kind, the most
severe kind first (:data:`SEVERITY`), each bug with its place, time, records, reproducer length
before and after shrinking, replay command and a view replayed from its shortest reproducer
(:func:`broken_section`).

* chosen: severity crash > stuck > logical > low FPS > texture, because a crash ends the player's
  session, being stuck ends their progress, a logical bug breaks a rule they may not notice, and a
  slow or ugly frame costs comfort alone.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np

from jgtest.records import located_records, replay_command
from jgtest.report.distinct import DistinctBug, distinct_bugs

#: Bug kinds from the most severe (module docstring); a kind not named sorts after them.
SEVERITY = ("crash", "stuck", "logical", "low_fps", "texture")
#: The frames of a clip at most: the last ones before the bug, at :data:`CLIP_MS` a frame, each
#: scaled up :data:`CLIP_SCALE` times.
CLIP_FRAMES, CLIP_MS, CLIP_SCALE = 32, 120, 2


def severity(kind: str) -> int:
    """``kind``'s rank in :data:`SEVERITY` (0 the most severe)."""
    return SEVERITY.index(kind) if kind in SEVERITY else len(SEVERITY)


def broken_section(run_dir: str | Path) -> dict:
    """The section: ``{"counts", "groups", "distinct", "records"}``.

    ``counts`` is a table of distinct bugs per game (rows) and kind (columns, the most severe
    first). ``groups`` holds one group per game and kind, the most severe kind first and, within a
    kind, the game with the fewest bugs first; each its ``title``, whether it is ``open`` (the
    groups of the most severe kind found, and the rarest group), its table of bugs and a view of
    each: a clip (:func:`bug_clip`) where the game draws frames, else a drawn top view
    (:func:`bug_view`).
    """
    located = located_records(run_dir)
    where = {id(r): (p, i) for r, p, i in located}
    bugs = distinct_bugs([r for r, _, _ in located])
    by_group: dict[tuple[str, str], list[DistinctBug]] = {}
    for bug in bugs:
        by_group.setdefault((bug.representative.game, bug.kind), []).append(bug)
    order = sorted(by_group, key=lambda g: (severity(g[1]), len(by_group[g]), g[0]))
    kinds = sorted({kind for _, kind in by_group}, key=lambda k: (severity(k), k))
    games = sorted({game for game, _ in by_group})
    counts = {
        "header": ["game", *kinds, "all"],
        "rows": [
            [game, *[len(by_group.get((game, k), ())) for k in kinds]]
            + [sum(len(by_group.get((game, k), ())) for k in kinds)]
            for game in games
        ],
    }
    rarest = min(order, key=lambda g: len(by_group[g])) if order else None
    groups, number = [], 0
    for game, kind in order:
        rows, views = [], []
        for bug in by_group[(game, kind)]:
            number += 1
            rows.append(_bug_row(number, bug, *where[id(bug.representative)]))
            image = bug_clip(bug) or bug_view(bug)
            if image is not None:
                views.append(
                    {
                        "uri": "data:image/png;base64," + base64.b64encode(image).decode(),
                        "caption": f"bug {number}: {kind} bug {bug.representative.bug_id} on "
                        f"{game}",
                    }
                )
        found = len(by_group[(game, kind)])
        groups.append(
            {
                "title": f"{game} · {kind}: {found} distinct bug{'s' if found > 1 else ''} "
                f"from {sum(len(b.records) for b in by_group[(game, kind)])} record(s)",
                "open": severity(kind) == severity(order[0][1]) or (game, kind) == rarest,
                "header": BUG_COLUMNS,
                "rows": rows,
                "views": views,
            }
        )
    return {"counts": counts, "groups": groups, "distinct": len(bugs), "records": len(located)}


#: The columns of a group's table of bugs.
BUG_COLUMNS = [
    "#",
    "bug",
    "where",
    "when",
    "records",
    "actions (before → after shrinking)",
    "replay",
]


def _bug_row(number: int, bug: DistinctBug, path, index: int) -> list:
    from jgtest.report.shrink import can_shrink

    record = bug.representative
    if record.trace_min:
        shrunk = f"{len(record.actions)} → {len(record.trace_min)}"
    elif can_shrink(record):
        shrunk = f"{len(record.actions)} (not shrunk)"
    else:
        shrunk = f"{len(record.actions)} (an object test: no trace to shrink)"
    return [
        number,
        record.bug_id,
        _place(record.position),
        f"episode {record.episode}, step {record.step}",
        len(bug.records),
        shrunk,
        replay_command(record, path, index),
    ]


def bug_view(bug: DistinctBug) -> bytes | None:
    """:func:`bug_figure` as a PNG, or ``None``."""
    fig = bug_figure(bug)
    if fig is None:
        return None
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def bug_figure(bug: DistinctBug):
    """A matplotlib figure of the bug's shortest reproducer: on a twin, the player's path seen
    from above from the episode's start, the start and the spot where the bug fired marked, on the
    game's walls where it has a grid of them (rows and columns labelled, integer ticks); for a
    low-FPS bug, the frame times along the trace beside it, the spike marked; on a bridged game,
    the place its record names. ``None`` where there is nothing to draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    record = bug.representative
    replayed = replayed_telemetry(record)
    frames = record.kind == "low_fps" and replayed is not None
    fig = Figure(figsize=(6.4 if frames else 3.4, 3.4), dpi=80)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 2 if frames else 1, 1)
    walls = _walls(replayed[0]) if replayed is not None else None
    if replayed is not None and len(replayed[1]["position"]):
        path = _xy(replayed[1]["position"], walls is not None)
        if walls is not None:
            ax.imshow(walls, cmap="Greys", vmin=0, vmax=1.6, origin="upper")
            ax.set_xlabel("column", fontsize=7)
            ax.set_ylabel("row", fontsize=7)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.set_xlabel("x", fontsize=7)
            ax.set_ylabel("y" if replayed[1]["position"].shape[-1] >= 2 else "step", fontsize=7)
        ax.plot(path[:, 0], path[:, 1], color="#3b6ea5", linewidth=1.2)
        ax.scatter(path[:1, 0], path[:1, 1], color="#2a9d55", s=30, label="start", zorder=3)
        ax.scatter(
            path[-1:, 0], path[-1:, 1], color="#c0392b", marker="X", s=80, label="bug", zorder=4
        )
    elif len(record.position) >= 2:
        ax.scatter(
            [record.position[0]],
            [record.position[1]],
            color="#c0392b",
            marker="X",
            s=80,
            label="bug",
        )
        ax.set_xlabel("x", fontsize=7)
        ax.set_ylabel("y", fontsize=7)
    else:
        return None
    ax.set_title(
        f"{record.kind} bug {record.bug_id}, {len(record.trace_min or record.actions)} actions",
        fontsize=8,
    )
    ax.legend(fontsize=7, loc="best")
    ax.tick_params(labelsize=6)
    if frames:
        times = replayed[1]["frame_time_ms"]
        spike = fig.add_subplot(1, 2, 2)
        spike.plot(np.arange(len(times)), times, color="#3b6ea5", linewidth=1.0)
        spike.scatter([len(times) - 1], times[-1:], color="#c0392b", marker="X", s=80, zorder=3)
        spike.set_xlabel("step", fontsize=7)
        spike.set_ylabel("frame time (ms)", fontsize=7)
        spike.set_title("frame time, the spike marked", fontsize=8)
        spike.xaxis.set_major_locator(MaxNLocator(integer=True))
        spike.tick_params(labelsize=6)
    fig.tight_layout()
    return fig


def _walls(params) -> np.ndarray | None:
    """A grid game's walls ``bool[H, W]`` (``params.walls``), else ``None``."""
    walls = getattr(params, "walls", None)
    if walls is None or np.ndim(walls) != 2:
        return None
    return np.asarray(walls, np.float64)


def _xy(position: np.ndarray, grid: bool) -> np.ndarray:
    """``float[T, 2]`` to plot: a grid game's ``(row, column)`` as ``(column, row)``; a 1-D
    position against its step."""
    if grid:
        return position[:, [1, 0]]
    if position.shape[-1] >= 2:
        return position[:, :2]
    return np.stack([position[:, 0], np.arange(len(position))], axis=1)


def bug_clip(bug: DistinctBug) -> bytes | None:
    """An animated PNG of the bug's shortest reproducer replayed, its last :data:`CLIP_FRAMES`
    frames up to the bug, for a game that draws frames (the ``rgb_frames`` signal: ParkWorld on
    device; ViZDoom, Atari and SuperTuxKart through their bridges), the tested object outlined in
    red in each frame that shows it (:func:`replayed_boxes`); ``None`` for a game that draws no
    frames, or a record that cannot be replayed here."""
    from PIL import Image, ImageDraw

    frames = replayed_frames(bug.representative)
    if frames is None or not len(frames):
        return None
    boxes = replayed_boxes(bug.representative)
    images = []
    for t in range(max(0, len(frames) - CLIP_FRAMES), len(frames)):
        frame = frames[t]
        image = Image.fromarray(frame[..., :3]).resize(
            (frame.shape[1] * CLIP_SCALE, frame.shape[0] * CLIP_SCALE), Image.NEAREST
        )
        if boxes is not None and boxes[t].any():
            row0, col0, row1, col1 = (int(v) * CLIP_SCALE for v in boxes[t])
            ImageDraw.Draw(image).rectangle(
                (col0 - 1, row0 - 1, col1, row1), outline=(255, 40, 40), width=2
            )
        images.append(image)
    buffer = io.BytesIO()
    images[0].save(
        buffer, format="PNG", save_all=True, append_images=images[1:], duration=CLIP_MS, loop=0
    )
    return buffer.getvalue()


def replayed_frames(record) -> np.ndarray | None:
    """``uint8[T, H, W, C]``: the frames of the record's shortest reproducer, replayed on the bare
    twin or a fresh bridged game; ``None`` where the game draws no frames or cannot replay it
    here."""
    from jgtest.errors import BadFile
    from jgtest.host_loop import host_game_signals, is_host_game, replay_host_frames
    from jgtest.report.replay import replay_frames
    from jgtest.report.shrink import minimal

    shortest = minimal(record) if record.trace_min else record
    try:
        if is_host_game(record.game):
            return (
                replay_host_frames(shortest)
                if "rgb_frames" in host_game_signals(record.game, record.game_kwargs)
                else None
            )
        return replay_frames(record)
    except (
        BadFile,
        ValueError,
        RuntimeError,
    ):  # another game's record, a game that does not replay, one that cannot start here
        return None


def replayed_boxes(record) -> np.ndarray | None:
    """The tested object's box in each replayed frame
    (:func:`jgtest.report.replay.replay_object_boxes`), or ``None``."""
    from jgtest.errors import BadFile
    from jgtest.host_loop import is_host_game
    from jgtest.report.replay import replay_object_boxes

    if is_host_game(record.game):
        return None
    try:
        return replay_object_boxes(record)
    except BadFile:
        return None


def replayed_telemetry(record) -> tuple[object, dict] | None:
    """The game's parameters and the replayed shortest reproducer's positions and frame times
    (:func:`jgtest.report.replay.replay_telemetry`); ``None`` for a bridged game or a record the
    game cannot replay."""
    from jgtest.errors import BadFile
    from jgtest.host_loop import is_host_game
    from jgtest.report.replay import replay_telemetry

    if is_host_game(record.game):
        return None
    try:
        return replay_telemetry(record)
    except BadFile:
        return None


def _place(position) -> str:
    return "(" + ", ".join(f"{p:.4g}" for p in position) + ")" if len(position) else "–"
