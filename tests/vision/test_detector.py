"""The detector's pieces: IoU, precision/recall at IoU 0.5, naming detections, targets that decode
back to their boxes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.vision import detector as det


def test_iou_by_hand():
    a = np.array([[0, 0, 10, 10]])
    b = np.array([[0, 0, 10, 10], [5, 5, 15, 15], [20, 20, 30, 30], [0, 0, 10, 5]])
    np.testing.assert_allclose(np.asarray(det.iou(a, b))[0], [1.0, 25 / 175, 0.0, 0.5], rtol=1e-6)


def _objects(boxes, types, pixels):
    n = len(boxes)
    return {
        "id": np.arange(n)[None],
        "box": np.asarray(boxes)[None],
        "type": np.asarray(types)[None],
        "pixels": np.asarray(pixels)[None],
        "visible": np.ones((1, n), bool),
    }


def test_precision_recall_matches_by_type_and_iou_once():
    # the last is too small to count
    objects = _objects(
        [[0, 0, 10, 10], [20, 20, 40, 40], [50, 50, 52, 52]], [0, 1, 2], [80, 300, 4]
    )
    detections = {
        "box": np.array([[[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 40, 40], [30, 30, 60, 60]]]),
        # a duplicate of the first, the right box with the wrong type, a poor box
        "type": np.array([[0, 0, 2, 1]]),
        "score": np.array([[0.9, 0.8, 0.7, 0.6]]),
        "valid": np.ones((1, 4), bool),
    }
    pr = det.precision_recall(detections, objects, min_pixels=30)
    assert pr["precision"] == pytest.approx(1 / 4) and pr["recall"] == pytest.approx(1 / 2)
    assert pr["objects"] == 2 and pr["detections"] == 4


def test_detections_are_named_after_the_object_they_overlap():
    truth = {
        "id": jnp.array([7, 9, -1]),
        "box": jnp.array([[0, 0, 10, 10], [20, 20, 40, 40], [0, 0, 0, 0]]),
        "type": jnp.array([0, 1, -1]),
        "pixels": jnp.array([60, 300, 0]),
        "visible": jnp.array([True, True, False]),
    }
    detections = {
        "box": jnp.array([[21, 21, 40, 40], [0, 0, 9, 9], [50, 50, 60, 60]]),
        "type": jnp.array([1, 2, 0]),
        "score": jnp.array([0.9, 0.8, 0.7]),
        "valid": jnp.array([True, True, True]),
    }
    seen = jax.jit(det.detected_objects)(detections, truth)
    np.testing.assert_array_equal(seen["id"], [9, -1, -1])  # right; wrong type; nothing there
    np.testing.assert_array_equal(seen["visible"], [True, False, False])
    # the box's area stands for the pixels
    np.testing.assert_array_equal(seen["pixels"], [19 * 19, 81, 100])


def test_perfect_heat_maps_decode_to_the_labelled_boxes():
    config = det.DetectorConfig()
    objects = {
        "id": jnp.array([0, 1]),
        "box": jnp.array([[8, 12, 30, 24], [40, 40, 56, 60]]),
        "type": jnp.array([2, 0]),
        "pixels": jnp.array([200, 250]),
        "visible": jnp.array([True, True]),
    }
    heat, size, offset, centres = jax.jit(det._targets, static_argnums=(1, 2))(objects, 64, config)
    assert int(centres.sum()) == 2
    # sigmoid(logits) = heat
    logits = jnp.log(jnp.clip(heat, 1e-6, 1 - 1e-6) / jnp.clip(1 - heat, 1e-6, 1))
    detector = det.Detector(config, {}, 64)
    out = jax.jit(detector.decode)(logits[None], size[None], offset[None])
    found = {
        (int(t), tuple(int(v) for v in b))
        for t, b, ok in zip(out["type"][0], out["box"][0], out["valid"][0])
        if ok
    }
    assert found == {(2, (8, 12, 30, 24)), (0, (40, 40, 56, 60))}
