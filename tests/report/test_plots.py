"""RELINE Fig. 4 plots: PNGs written, empty groups handled, bad input rejected."""

import numpy as np
import pytest

from jgtest.report.plots import position_plot, violin_plot

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _assert_png(path, min_bytes=5_000):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > min_bytes


def test_violin_plot_writes_png_with_empty_group(tmp_path):
    rng = np.random.default_rng(0)
    groups = {
        "Regular FPS": rng.normal(12.0, 1.5, 500),
        "RELINE": rng.normal(24.5, 5.0, 173),
        "rl-baseline": [],
        "random": list(rng.normal(19.4, 2.0, 3)),
        "one point": [20.0],
    }
    out = violin_plot(
        groups, tmp_path / "nested" / "dir" / "violin.png", threshold_ms=18.36, title="Fig. 4-(a)"
    )
    assert out == tmp_path / "nested" / "dir" / "violin.png"
    _assert_png(out)


def test_violin_plot_all_empty_still_draws(tmp_path):
    out = violin_plot({"a": [], "b": np.array([])}, tmp_path / "v.png")
    assert out.read_bytes()[:8] == PNG_SIGNATURE


def test_violin_plot_errors(tmp_path):
    with pytest.raises(ValueError):
        violin_plot({}, tmp_path / "v.png")
    with pytest.raises(ValueError, match="NaN"):
        violin_plot({"a": [1.0, np.nan]}, tmp_path / "v.png")
    assert not (tmp_path / "v.png").exists()


def test_position_plot_writes_png(tmp_path):
    rng = np.random.default_rng(1)
    length = 850.0
    points = {
        "RELINE": (rng.uniform(0, length, 173), rng.uniform(-20, 20, 173)),
        "rl-baseline": (rng.uniform(0, length, 33), rng.normal(0, 8, 33)),
        "random": (rng.uniform(0, 40, 90), rng.uniform(-60, 60, 90)),
        "nobody": ([], []),
    }
    out = position_plot(
        points, tmp_path / "sub" / "pos.png", theta=20.0, road_half_width=10.0, path_length=length
    )
    assert out == tmp_path / "sub" / "pos.png"
    _assert_png(out)


def test_position_plot_errors(tmp_path):
    with pytest.raises(ValueError):
        position_plot({}, tmp_path / "p.png")
    with pytest.raises(ValueError, match="centering"):
        position_plot({"a": ([1.0, 2.0], [0.0])}, tmp_path / "p.png")
    with pytest.raises(ValueError, match="path_length"):
        position_plot({"a": ([1.0], [0.0])}, tmp_path / "p.png", path_length=0.0)
    with pytest.raises(ValueError, match="pair"):
        position_plot({"a": [1.0, 2.0, 3.0]}, tmp_path / "p.png")
