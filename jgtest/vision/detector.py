"""A small on-device object detector for ParkWorld's four OOI types (PPGTA §IV-A, §V-B, §VI-C): a
CenterNet-style head (Zhou et al., 2019) on a stride-4 grid, trained on rendered shots.

* chosen: a small CNN from scratch, because the paper's COCO Faster R-CNN cannot be downloaded.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jgtest.supervised import FitSettings, fit_examples, split_indices

STRIDE = 4


class CenterNet(nn.Module):
    """Backbone to a stride-4 grid (receptive field 39 pixels), then 1×1 heads:
    ``heat [.., G, G, C]`` logits, ``size [.., G, G, 2]`` (height, width over the frame's side),
    ``offset [.., G, G, 2]`` (in cells)."""

    num_classes: int = 4
    width: int = 32

    @nn.compact
    def __call__(self, frames: jax.Array):
        x = frames.astype(jnp.float32) / 255.0
        x = nn.relu(nn.Conv(self.width // 2, (3, 3), strides=2, padding="SAME")(x))
        x = nn.relu(nn.Conv(self.width, (3, 3), strides=2, padding="SAME")(x))
        x = nn.relu(nn.Conv(self.width * 2, (3, 3), padding="SAME")(x))
        x = nn.relu(nn.Conv(self.width * 2, (3, 3), padding="SAME")(x))
        x = nn.relu(nn.Conv(self.width * 2, (3, 3), padding="SAME", kernel_dilation=2)(x))
        heat = nn.Conv(self.num_classes, (1, 1), bias_init=nn.initializers.constant(-2.19))(
            x
        )  # prior 0.1
        size = nn.Conv(2, (1, 1))(x)
        offset = nn.Conv(2, (1, 1))(x)
        return heat, size, offset


@dataclasses.dataclass(frozen=True)
class DetectorConfig:
    """Settings. The paper trains a different model (§V-D: mini-batch 128, learning rate 3e-4, 4
    epochs, 128×128 frames); ours: AdamW 3e-3, minibatch 64, at most 40 epochs with early stopping
    (patience 5) on the validation loss, the same 70/10/20 split."""

    num_classes: int = 4
    width: int = 32
    min_pixels: int = 30
    threshold: float = 0.3
    max_detections: int = 8
    fit: FitSettings = FitSettings(learning_rate=3e-3)

    @property
    def network(self) -> CenterNet:
        return CenterNet(self.num_classes, self.width)


def labelled(objects: dict, min_pixels: int) -> jax.Array:
    """Which ground-truth objects count: visible with at least ``min_pixels`` pixels."""
    return objects["visible"] & (objects["pixels"] >= min_pixels)


def _targets(objects: dict, res: int, config: DetectorConfig):
    """One frame's targets from its ``objects`` (``[M, ...]``): heat ``[G, G, C]``, size and offset
    ``[G, G, 2]``, and the centre-cell mask ``[G, G]``. Each labelled object (visible, at least
    ``min_pixels`` pixels) puts a Gaussian (σ = 1 cell) on its type's heat-map around its box's
    centre cell, and its size and offset at that cell."""
    grid = res // STRIDE
    keep = labelled(objects, config.min_pixels)
    box = objects["box"].astype(jnp.float32)
    centre = (
        jnp.stack([(box[:, 0] + box[:, 2]) / 2, (box[:, 1] + box[:, 3]) / 2], -1) / STRIDE
    )  # [M, 2] in cells
    cell = jnp.clip(jnp.floor(centre).astype(jnp.int32), 0, grid - 1)
    rows, cols = jnp.mgrid[:grid, :grid]
    dist2 = (rows[None] - cell[:, 0, None, None]) ** 2 + (
        cols[None] - cell[:, 1, None, None]
    ) ** 2  # [M, G, G]
    gauss = jnp.where(keep[:, None, None], jnp.exp(-dist2 / 2.0), 0.0)
    onehot = jax.nn.one_hot(jnp.maximum(objects["type"], 0), config.num_classes)  # [M, C]
    heat = jnp.max(gauss[..., None] * onehot[:, None, None, :], axis=0)
    at = (dist2 == 0) & keep[:, None, None]  # [M, G, G]
    size = jnp.stack([box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]], -1) / res
    offset = centre - cell
    spread = lambda v: (
        jnp.sum(at[..., None] * v[:, None, None, :], axis=0) / jnp.maximum(at.sum(0)[..., None], 1)
    )
    return heat, spread(size), spread(offset), at.any(0)


def make_loss(config: DetectorConfig, res: int):
    """``loss(params, frames [B, H, W, 3], objects [B, M, ...]) -> loss``: focal loss on the
    heat-maps (summed, over the number of objects) plus the L1 of size and offset at the centre
    cells."""
    network = config.network

    def loss(params, frames, objects):
        heat_t, size_t, offset_t, centres = jax.vmap(lambda o: _targets(o, res, config))(objects)
        heat, size, offset = network.apply(params, frames)
        count = jnp.maximum(centres.sum(), 1.0)
        focal = jnp.sum(optax.sigmoid_focal_loss(heat, heat_t, alpha=None, gamma=2.0)) / count
        l1 = lambda p, t: jnp.sum(centres[..., None] * jnp.abs(p - t)) / count
        return focal + 5.0 * l1(size, size_t) + l1(offset, offset_t)

    return loss


@dataclasses.dataclass(frozen=True)
class Detector:
    """A trained detector: :meth:`detect` on frames, jittable."""

    config: DetectorConfig
    params: dict
    res: int

    def detect(self, frames: jax.Array) -> dict:
        """Detections of ``frames [..., H, W, 3]``: ``box int32[..., D, 4]`` (pixels, half-open),
        ``type``, ``score`` and ``valid`` ``[..., D]`` (D = ``max_detections``, best first)."""
        lead = frames.shape[:-3]
        out = self.decode(
            *self.config.network.apply(self.params, frames.reshape(-1, *frames.shape[-3:]))
        )
        return {k: v.reshape(*lead, *v.shape[1:]) for k, v in out.items()}

    def decode(self, heat: jax.Array, size: jax.Array, offset: jax.Array) -> dict:
        """The network's outputs ``[B, G, G, ...]`` to boxes: the 3×3 peaks of each type's heat-map,
        the ``max_detections`` best, valid above ``threshold``, as ``(row0, col0, row1, col1)``
        boxes in the frame's pixels."""
        prob = jax.nn.sigmoid(heat)
        peak = prob == jax.lax.reduce_window(
            prob, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 1, 1, 1), "SAME"
        )
        scores = jnp.where(peak, prob, 0.0)
        batch, grid, _, classes = scores.shape
        best, index = jax.lax.top_k(scores.reshape(batch, -1), self.config.max_detections)
        cell = index // classes
        row, col, kind = cell // grid, cell % grid, index % classes
        take = lambda a: jax.vmap(lambda a_i, r, k: a_i[r, k])(a, row, col)
        centre = (jnp.stack([row, col], -1) + take(offset)) * STRIDE
        extent = take(size) * self.res
        box = jnp.concatenate([centre - extent / 2, centre + extent / 2], -1)
        box = jnp.clip(jnp.round(box), 0, self.res).astype(jnp.int32)
        return {
            "box": box,
            "type": kind.astype(jnp.int32),
            "score": best,
            "valid": best >= self.config.threshold,
        }


def iou(a, b) -> jax.Array:
    """IoU of boxes ``a [N, 4]`` and ``b [M, 4]`` (``row0, col0, row1, col1``, half-open):
    ``[N, M]``. Jittable."""
    a, b = jnp.asarray(a, jnp.float32)[:, None], jnp.asarray(b, jnp.float32)[None]
    inter = jnp.clip(
        jnp.minimum(a[..., 2], b[..., 2]) - jnp.maximum(a[..., 0], b[..., 0]), 0
    ) * jnp.clip(jnp.minimum(a[..., 3], b[..., 3]) - jnp.maximum(a[..., 1], b[..., 1]), 0)
    return inter / jnp.maximum(_area(a) + _area(b) - inter, 1e-9)


def _area(box):
    return (box[..., 2] - box[..., 0]) * (box[..., 3] - box[..., 1])


def precision_recall(
    detections: dict, objects: dict, min_pixels: int, iou_threshold: float = 0.5
) -> dict:
    """Precision and recall over frames: a detection is right when it matches, by type and IoU ≥
    ``iou_threshold``, a labelled object (:func:`labelled`) not yet matched in its frame (detections
    taken best score first). Per type too."""
    det = {k: np.asarray(v) for k, v in detections.items()}
    obj = {k: np.asarray(v) for k, v in objects.items()}
    keep = np.asarray(labelled(obj, min_pixels))
    classes = int(max(obj["type"].max(), det["type"].max())) + 1
    tp, fp, fn = np.zeros(classes), np.zeros(classes), np.zeros(classes)
    for f in range(det["box"].shape[0]):
        truth = np.flatnonzero(keep[f])
        matched = np.zeros(len(truth), bool)
        overlap = (
            np.asarray(iou(det["box"][f], obj["box"][f][truth]))
            if len(truth)
            else np.zeros((det["box"].shape[1], 0))
        )
        for d in np.argsort(-det["score"][f]):
            if not det["valid"][f, d]:
                continue
            ok = (
                ~matched
                & (obj["type"][f][truth] == det["type"][f, d])
                & (overlap[d] >= iou_threshold)
            )
            if ok.any():
                matched[np.argmax(np.where(ok, overlap[d], -1))] = True
                tp[det["type"][f, d]] += 1
            else:
                fp[det["type"][f, d]] += 1
        np.add.at(fn, obj["type"][f][truth][~matched], 1)
    ratio = lambda a, b: float(a / b) if b else 0.0
    return {
        "precision": ratio(tp.sum(), tp.sum() + fp.sum()),
        "recall": ratio(tp.sum(), tp.sum() + fn.sum()),
        "per_type": [
            {"precision": ratio(tp[c], tp[c] + fp[c]), "recall": ratio(tp[c], tp[c] + fn[c])}
            for c in range(classes)
        ],
        "objects": int(tp.sum() + fn.sum()),
        "detections": int(tp.sum() + fp.sum()),
    }


def train(config: DetectorConfig, data: dict, key: jax.Array, seed: int = 0) -> dict:
    """Trains on ``data`` (:func:`jgtest.envs.park_shots.shots`), split 70/10/20 stratified by the
    aimed type.

    Returns:
      dict: ``detector`` (:class:`Detector`), ``history``, ``test`` (:func:`precision_recall` on the
      test split), the split's indices.
    """
    frames, objects = jnp.asarray(data["frames"]), data["objects"]
    if frames.shape[0] == 0:
        raise ValueError("the detector's dataset is empty")
    res = int(frames.shape[1])
    train_idx, val_idx, test_idx = split_indices(
        int(frames.shape[0]), config.fit.split, seed, strata=np.asarray(data["aimed_type"])
    )
    params = config.network.init(key, frames[:1])
    take = lambda idx: (frames[idx], jax.tree.map(lambda v: jnp.asarray(v)[idx], objects))
    out = fit_examples(make_loss(config, res), params, take, train_idx, val_idx, config.fit, seed)
    detector = Detector(config, out["state"][0], res)
    test_frames, test_objects = take(test_idx)
    test = precision_recall(jax.jit(detector.detect)(test_frames), test_objects, config.min_pixels)
    return {
        "detector": detector,
        "history": out["history"],
        "test": test,
        "train_idx": train_idx,
        "val_idx": val_idx,
        "test_idx": test_idx,
    }


def detected_objects(detections: dict, truth: dict, iou_threshold: float = 0.5) -> dict:
    """The detector's view of one frame in the shape of ``info["objects"]``, for the tester
    (:func:`jgtest.methods.park.ooi_testing.ooi_step`): each valid detection (``[D, ...]``) is named
    after the ground-truth object (``truth``, ``[M, ...]``) of its type it overlaps most, with IoU ≥
    ``iou_threshold`` (−1 none: a false detection, which starts no test). The campaign needs that
    name only to remember which objects it tested and to count them; a bridged game names its
    objects itself. ``pixels`` is the detected box's area, ``box`` the detected box (what the test's
    OD mask uses).

    Jittable."""
    overlap = iou(detections["box"], truth["box"])
    same = (detections["type"][:, None] == truth["type"][None, :]) & (truth["id"][None, :] >= 0)
    overlap = jnp.where(same, overlap, 0.0)
    best = jnp.argmax(overlap, axis=1)
    named = detections["valid"] & (jnp.max(overlap, axis=1) >= iou_threshold)
    return {
        "id": jnp.where(named, truth["id"][best], -1),
        "box": detections["box"],
        "type": detections["type"],
        "pixels": jnp.where(detections["valid"], _area(detections["box"]), 0),
        "visible": named,
    }
