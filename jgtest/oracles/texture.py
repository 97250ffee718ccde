"""A texture-bug oracle, beyond PPGTA: a small CNN classifies the crops of an object over its 360°
walk as clean, low-resolution or stretched (``ParkWorld``'s bugs) and flags the walk.

* chosen: trained on labelled shots, because the paper has no such oracle.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jgtest.supervised import FitSettings, fit_examples, split_indices


class TextureNet(nn.Module):
    """Crop ``[..., S, S, 3]`` to logits over (clean, low-resolution, stretched)."""

    width: int = 32

    @nn.compact
    def __call__(self, crops: jax.Array) -> jax.Array:
        x = crops.astype(jnp.float32) / 255.0
        for i, f in enumerate((self.width // 2, self.width, self.width)):
            x = nn.relu(nn.Conv(f, (3, 3), padding="SAME")(x))
            if i < 2:
                x = nn.max_pool(x, (2, 2), (2, 2))
        x = jnp.mean(x, axis=(-3, -2))
        return nn.Dense(3)(nn.relu(nn.Dense(self.width)(x)))


@dataclasses.dataclass(frozen=True)
class TextureOracleConfig:
    """Settings, ours (the paper has no such oracle): crops of ``crop × crop`` pixels of objects
    showing at least ``min_pixels`` pixels, a walk flagged above ``flag_threshold``; training on
    labelled shots (:func:`jgtest.envs.park_shots.shots`) split 70/10/20 by shot, AdamW, early
    stopping on the validation loss."""

    crop: int = 32
    width: int = 32
    min_pixels: int = 80
    flag_threshold: float = 0.5
    fit: FitSettings = FitSettings(learning_rate=2e-3, epochs=30)


def crop(frame: jax.Array, box: jax.Array, size: int) -> jax.Array:
    """The ``box`` (``row0, col0, row1, col1``, pixels) of ``frame [H, W, 3]`` resized to
    ``[size, size, 3]`` (bilinear; jittable, any box size)."""
    box = box.astype(jnp.float32)
    extent = jnp.maximum(box[2:] - box[:2], 1.0)
    scale = size / extent
    out = jax.image.scale_and_translate(
        frame.astype(jnp.float32), (size, size, 3), (0, 1), scale, -box[:2] * scale, "linear"
    )
    return jnp.clip(jnp.round(out), 0, 255).astype(jnp.uint8)


@dataclasses.dataclass(frozen=True)
class TextureOracle:
    """A trained oracle: :meth:`probabilities` per frame, :meth:`judge` per walk."""

    config: TextureOracleConfig
    params: dict

    def probabilities(self, frames: jax.Array, boxes: jax.Array) -> jax.Array:
        """``[..., 3]``: P(clean, low-resolution, stretched) of the object in each
        ``boxes [..., 4]`` of ``frames [..., H, W, 3]``."""
        lead = frames.shape[:-3]
        crops = jax.vmap(lambda f, b: crop(f, b, self.config.crop))(
            frames.reshape(-1, *frames.shape[-3:]), boxes.reshape(-1, 4)
        )
        return jax.nn.softmax(TextureNet(self.config.width).apply(self.params, crops)).reshape(
            *lead, 3
        )

    def judge(self, probabilities: np.ndarray, shown: np.ndarray) -> tuple[bool, int, float]:
        """``(flagged, bug kind 1|2, mean bug probability)`` of one walk from its frames'
        ``probabilities [T, 3]`` and whether each frame ``shown [T]`` the object well enough
        (``min_pixels``): flagged when the mean probability of a bug over the shown frames exceeds
        ``flag_threshold``; the likelier bug names it."""
        p = np.asarray(probabilities)[np.asarray(shown, bool)]
        if len(p) == 0:
            return False, 0, 0.0
        mean = p.mean(axis=0)
        bug = float(1.0 - mean[0])
        return bool(bug > self.config.flag_threshold), int(1 + np.argmax(mean[1:])), bug


def crops_of_shots(data: dict, config: TextureOracleConfig) -> dict:
    """Every object of the ``shots`` showing at least ``min_pixels`` pixels: ``crops``, ``label`` (0
    clean, 1 low-resolution, 2 stretched), ``shot`` (its frame's index)."""
    objects = {k: np.asarray(v) for k, v in data["objects"].items()}
    shot, slot = np.nonzero(objects["visible"] & (objects["pixels"] >= config.min_pixels))
    frames = jnp.asarray(data["frames"])[shot]
    crops = jax.jit(jax.vmap(lambda f, b: crop(f, b, config.crop)))(
        frames, jnp.asarray(objects["box"][shot, slot])
    )
    return {
        "crops": crops,
        "label": jnp.asarray(objects["bug"][shot, slot], jnp.int32),
        "shot": shot,
    }


def train(config: TextureOracleConfig, data: dict, key: jax.Array, seed: int = 0) -> dict:
    """Trains the classifier on crops of ``data`` (:func:`jgtest.envs.park_shots.shots`), split by
    shot.

    Returns:
      dict: ``oracle`` (:class:`TextureOracle`), ``history``, ``test_accuracy`` (per crop, test
        split).
    """
    samples = crops_of_shots(data, config)
    if len(samples["shot"]) == 0:
        raise ValueError(
            f"no object in the shots shows {config.min_pixels} pixels: nothing to train the "
            "texture oracle on"
        )
    shots = np.unique(samples["shot"])
    parts = split_indices(len(shots), config.fit.split, seed)
    train_idx, val_idx, test_idx = (
        np.flatnonzero(np.isin(samples["shot"], shots[p])) for p in parts
    )
    network = TextureNet(config.width)
    params = network.init(key, samples["crops"][:1])

    def loss_fn(params, crops, labels):
        return optax.softmax_cross_entropy_with_integer_labels(
            network.apply(params, crops), labels
        ).mean()

    take = lambda idx: (samples["crops"][idx], samples["label"][idx])
    out = fit_examples(loss_fn, params, take, train_idx, val_idx, config.fit, seed)
    params = out["state"][0]
    crops, labels = take(test_idx)
    accuracy = float(jnp.mean(jnp.argmax(network.apply(params, crops), -1) == labels))
    return {
        "oracle": TextureOracle(config, params),
        "history": out["history"],
        "test_accuracy": accuracy,
        "test_crops": int(len(test_idx)),
    }


def walk_precision_recall(flagged: np.ndarray, bugged: np.ndarray) -> dict:
    """Precision and recall of the flags over the walked objects (``bugged``: ground truth)."""
    flagged, bugged = np.asarray(flagged, bool), np.asarray(bugged, bool)
    tp = int((flagged & bugged).sum())
    return {
        "precision": tp / max(int(flagged.sum()), 1),
        "recall": tp / max(int(bugged.sum()), 1),
        "flagged": int(flagged.sum()),
        "bugged": int(bugged.sum()),
        "walked": int(flagged.size),
    }
