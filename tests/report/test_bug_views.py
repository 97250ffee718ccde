"""The report's view of each distinct bug: a grid game's path on its walls with rows, columns and
integer ticks; a low-FPS bug's frame times with the spike marked."""

import numpy as np
import pytest

from jgtest.cli import main
from jgtest.records import read_bug_records
from jgtest.report.broken import bug_figure, bug_view
from jgtest.report.distinct import distinct_bugs


def _bugs(tmp_path, game: str, steps: str, shrink: bool = True) -> list:
    out = tmp_path / game
    argv = ["run", "random", "--game", game, "--envs", "16", "--steps", steps, "--quiet"]
    assert main([*argv, "--out", str(out), *(["--shrink"] if shrink else [])]) == 0
    return distinct_bugs(read_bug_records(out / "bugs.jsonl"))


def test_a_grid_games_bug_is_drawn_on_its_walls(tmp_path):
    bug = _bugs(tmp_path, "BlockMaze-v0", "200")[0]
    fig = bug_figure(bug)
    (ax,) = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("column", "row")
    (walls,) = ax.images
    assert walls.get_array().shape == (16, 16) and walls.get_array().sum() > 0
    ticks = ax.get_xticks()
    assert np.allclose(ticks, np.round(ticks))  # whole cells
    # the bug's marker sits at the end of the drawn path, on the recorded place (row, column)
    bug_marker = ax.collections[-1].get_offsets()[0]
    row, column = bug.representative.position
    assert tuple(bug_marker) == pytest.approx((column, row))
    assert bug_view(bug)[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_low_fps_bug_shows_its_frame_time_spike(tmp_path):
    # not shrunk: the view draws the trace it is given (a shrunk one in the grid game's test)
    bug = next(
        b for b in _bugs(tmp_path, "KartTrack-v0", "400", shrink=False) if b.kind == "low_fps"
    )
    fig = bug_figure(bug)
    path, spike = fig.axes
    assert spike.get_ylabel() == "frame time (ms)" and spike.get_xlabel() == "step"
    (times,) = spike.get_lines()
    marked = spike.collections[-1].get_offsets()[0]
    # the marked step is the trace's last, its frame time the highest of the trace
    assert marked[0] == len(times.get_ydata()) - 1
    assert marked[1] == pytest.approx(times.get_ydata().max())


@pytest.mark.slow
def test_a_texture_bugs_clip_outlines_its_object(tmp_path):
    from io import BytesIO

    from PIL import Image

    from jgtest.report.broken import CLIP_SCALE, bug_clip, replayed_boxes

    out = tmp_path / "park"
    park = ["--game-arg", "size=64", "--game-arg", "num_oois=200"]
    argv = ["run", "random", "--game", "ParkWorld-v0", "--episodes", "5", *park, "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    bug = distinct_bugs(read_bug_records(out / "bugs.jsonl"))[0]
    boxes = replayed_boxes(bug.representative)
    assert boxes.shape == (len(bug.representative.actions), 4) and boxes[-1].any()  # in view
    clip = Image.open(BytesIO(bug_clip(bug)))
    clip.seek(clip.n_frames - 1)
    last = np.asarray(clip.convert("RGB"))
    row0, col0, row1, _ = (int(v) * CLIP_SCALE for v in boxes[-1])
    edge = last[row0:row1, col0 - 1]  # the outline's left side
    assert (edge == (255, 40, 40)).all(axis=-1).mean() > 0.9


def test_the_population_plot_rings_each_front_and_names_a_flat_one(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from jgtest.report import wuji_plots

    drawn = []
    monkeypatch.setattr(wuji_plots, "save_figure", lambda fig, path: drawn.append(fig) or path)
    pops = {
        "wuji": {"exploration": [3, 5, 8, 2], "winning": [-0.866] * 4, "front": [1, 1, 0, 2]},
        "drl": {"exploration": [4, 6, 1], "winning": [0.2, 0.1, 0.5], "front": [0, 0, 0]},
    }
    wuji_plots.population_plot(pops, tmp_path / "population.png", "Block Maze")
    (fig,) = drawn
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    ringed = [c.get_offsets() for c in ax.collections if len(c.get_facecolors()) == 0]
    assert [len(r) for r in ringed] == [1, 3]  # wuji's front is its most exploring individual
    stairs = ax.get_lines()[1].get_xydata()  # drl's: across at each front point, then down
    assert stairs[:3].tolist() == [[1, 0.5], [4, 0.2], [6, 0.1]]
    assert "one winning score for all (wuji -0.866)" in ax.get_title()
