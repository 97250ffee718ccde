"""The texture oracle's pieces: crops of a box, a walk's judgement, precision and recall."""

import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.oracles import texture


def test_a_crop_is_the_box_resized():
    frame = np.zeros((64, 64, 3), np.uint8)
    frame[10:20, 30:50] = 200  # the box's inside
    out = np.asarray(texture.crop(jnp.asarray(frame), jnp.array([10, 30, 20, 50]), 16))
    assert out.shape == (16, 16, 3)
    assert out[2:-2, 2:-2].min() == 200  # the box fills the crop (edges blend with the outside)
    small = np.asarray(texture.crop(jnp.asarray(frame), jnp.array([0, 0, 64, 64]), 16))
    # the whole frame, shrunk
    assert small.mean() == pytest.approx(200 * (10 * 20) / 64**2 * 1.0, rel=0.2)


def test_a_walk_is_judged_on_the_frames_that_show_the_object():
    oracle = texture.TextureOracle(texture.TextureOracleConfig(flag_threshold=0.5), {})
    probs = np.array([[0.9, 0.05, 0.05], [0.1, 0.2, 0.7], [0.1, 0.1, 0.8]])
    # the one clean-looking frame
    assert oracle.judge(probs, np.array([True, False, False]))[0] is False
    flagged, kind, score = oracle.judge(probs, np.array([False, True, True]))
    assert flagged and kind == 2 and score == pytest.approx(0.9)
    assert oracle.judge(probs, np.zeros(3, bool)) == (False, 0, 0.0)  # never seen well: no verdict


def test_walk_precision_recall_by_hand():
    pr = texture.walk_precision_recall(
        np.array([1, 1, 0, 0, 1], bool), np.array([1, 0, 1, 0, 1], bool)
    )
    assert pr["precision"] == pytest.approx(2 / 3) and pr["recall"] == pytest.approx(2 / 3)
