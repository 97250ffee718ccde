"""PPGTA's feature distillation by masked inverse dynamics (§IV-A, Eq. 3, §V-B): an FE on two
adjacent frames, one OD-masked, predicts the action between them; it becomes the imitation
policy's backbone.

The FE (:mod:`jgtest.nets.frame_encoder`) is a CNN learned from scratch or, as the paper's
ImageNet AlexNet, a pretrained EfficientNet-Lite0 whose trunk is frozen or fine-tuned.

* chosen: a frozen trunk's features of every frame, masked and not, are computed once before
  training (the same function as encoding them in each step: the trunk does not change), because
  the trunk costs about fifty times the scratch CNN a frame on CPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jgtest.frames import od_mask
from jgtest.losses.ppgta import inverse_dynamics_loss
from jgtest.nets import frame_encoder
from jgtest.supervised import FitSettings, fit_adamw, split_indices


class InverseDynamics(nn.Module):
    """``φ_θ(s_{t−1}, s_t) -> logits``: the FE (``encoder``, :mod:`jgtest.nets.frame_encoder`) on
    each frame, a ReLU layer on the concatenated features. With ``on_trunk_features`` the inputs are
    a pretrained FE's trunk features, and only its projection is applied."""

    num_actions: int
    cnn_layers: Sequence[tuple[int, int, int]] = ((16, 8, 4), (32, 4, 2), (32, 3, 1))
    cnn_dense: int = 128
    hidden: int = 256
    encoder: str = "scratch"
    on_trunk_features: bool = False

    @nn.compact
    def __call__(self, frames_tm1: jax.Array, frames_t: jax.Array) -> jax.Array:
        fe = frame_encoder.make(self.encoder, self.cnn_layers, self.cnn_dense, name="fe")
        embed = fe.project if self.on_trunk_features else fe
        x = jnp.concatenate([embed(frames_tm1), embed(frames_t)], axis=-1)
        return nn.Dense(self.num_actions)(nn.relu(nn.Dense(self.hidden)(x)))


@dataclasses.dataclass(frozen=True)
class InverseDynamicsConfig:
    """Settings. ``cnn_layers``, ``cnn_dense`` and ``encoder`` must match the imitation policy's;
    ``trunk_tuning``: a pretrained FE's trunk ``"frozen"`` or ``"fine-tuned"`` by this loss (§IV-A
    fine-tunes). The 70/10/20 split by trajectory is §V-B's; ours where the paper is silent: AdamW
    at 1e-3, minibatches of 128 pairs, at most 10 epochs, patience 3 on the validation loss, a
    256-unit ReLU head on the two frames' concatenated features."""

    num_actions: int = 9
    cnn_layers: tuple[tuple[int, int, int], ...] = ((16, 8, 4), (32, 4, 2), (32, 3, 1))
    cnn_dense: int = 128
    fit: FitSettings = FitSettings(batch_size=128, epochs=10, patience=3)
    encoder: str = frame_encoder.FRAME_ENCODERS[0]
    trunk_tuning: str = frame_encoder.TRUNK_TUNING[0]

    def __post_init__(self):
        frame_encoder.check(self.encoder, self.trunk_tuning)

    @property
    def frozen_trunk(self) -> bool:
        return frame_encoder.is_pretrained(self.encoder) and self.trunk_tuning == "frozen"

    @property
    def network(self) -> InverseDynamics:
        return InverseDynamics(
            self.num_actions,
            self.cnn_layers,
            self.cnn_dense,
            encoder=self.encoder,
            on_trunk_features=self.frozen_trunk,
        )


def trunk_features(frames: np.ndarray, chunk: int = 256) -> np.ndarray:
    """``float32 [..., 1280]``: the pretrained trunk's features of ``uint8`` frames ``[..., H, W,
    3]``, computed ``chunk`` frames a call."""
    fe = frame_encoder.PretrainedFrameEncoder()
    params = {"params": frame_encoder.with_pretrained_trunk({})}
    encode = jax.jit(lambda f: fe.apply(params, f, method="trunk_features"))
    flat = frames.reshape(-1, *frames.shape[-3:])
    out = [np.asarray(encode(flat[i : i + chunk])) for i in range(0, len(flat), chunk)]
    return np.concatenate(out).reshape(*frames.shape[:-3], -1)


def _trunk_pairs(pairs: dict) -> dict:
    """``pairs`` (:func:`_pairs`) as a frozen trunk sees them: the features of each pair's frames
    (``tm1``, ``t``) and of both masked around the pair's box (``masked_tm1``, ``masked_t``)."""
    mask = jax.jit(jax.vmap(od_mask))
    masked = lambda frames: np.concatenate(
        [
            np.asarray(mask(frames[i : i + 1024], pairs["box"][i : i + 1024]))
            for i in range(0, len(frames), 1024)
        ]
    )
    return {
        **pairs,
        "masked_tm1": trunk_features(masked(pairs["tm1"])),
        "masked_t": trunk_features(masked(pairs["t"])),
        "tm1": trunk_features(pairs["tm1"]),
        "t": trunk_features(pairs["t"]),
    }


def _pairs(demos: dict, trajectories: np.ndarray) -> dict:
    """Every adjacent pair of the ``trajectories``: ``tm1 = frames[t]``, ``t = frames[t + 1]``,
    ``a = actions[t]``, ``box`` the first frame's OD box (empty where no object is in view: all
    grayscale)."""
    steps = demos["frames"].shape[1] - 1
    traj, step = np.repeat(trajectories, steps), np.tile(np.arange(steps), len(trajectories))
    box = np.where(demos["od_visible"][traj, step][:, None], demos["od_box"][traj, step], 0)
    return {
        "tm1": demos["frames"][traj, step],
        "t": demos["frames"][traj, step + 1],
        "a": demos["actions"][traj, step],
        "box": box,
    }


def train(
    config: InverseDynamicsConfig, demos: list[dict] | dict, key: jax.Array, seed: int = 0
) -> dict:
    """Trains the FE on the pairs of ``demos`` (one dict or a list of them, e.g. both behaviours;
    each ``frames``, ``actions``, ``od_box``, ``od_visible`` ``[N, T, ...]``).

    Returns:
      dict: ``encoder`` (the FE's parameters, a frozen trunk's included), ``params`` (the whole
      model), ``history``, ``test_accuracy`` (action accuracy on the test trajectories' pairs,
      frames masked at random as in training), ``chance`` (the most frequent action's share
      there).
    """
    sets = [demos] if isinstance(demos, dict) else list(demos)
    if not sets or any(d["frames"].shape[0] == 0 or d["frames"].shape[1] < 2 for d in sets):
        raise ValueError(
            "the demonstration set is empty (inverse dynamics needs trajectories of at least 2 "
            "frames)"
        )
    parts = [[], [], []]  # train / validation / test pairs, each behaviour split by trajectory
    for d in sets:
        d = {k: np.asarray(d[k]) for k in ("frames", "actions", "od_box", "od_visible")}
        for part, idx in zip(parts, split_indices(d["frames"].shape[0], config.fit.split, seed)):
            part.append(_pairs(d, idx))
    parts = [{k: np.concatenate([p[k] for p in part]) for k in part[0]} for part in parts]
    flat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if config.frozen_trunk:
        flat = _trunk_pairs(flat)
    flat = {k: jnp.asarray(v) for k, v in flat.items()}
    bounds = np.cumsum([0] + [len(p["a"]) for p in parts])
    train_idx, val_idx, test_idx = (np.arange(bounds[i], bounds[i + 1]) for i in range(3))

    network = config.network
    k_init, k_run, k_eval = jax.random.split(key, 3)
    params = network.init(k_init, flat["tm1"][:1], flat["t"][:1])
    if frame_encoder.is_pretrained(config.encoder) and not config.frozen_trunk:
        fe = frame_encoder.with_pretrained_trunk(params["params"]["fe"])
        params = {**params, "params": {**params["params"], "fe": fe}}
    masked = lambda b: (b["masked_tm1"], b["masked_t"]) if config.frozen_trunk else None
    loss_of = lambda p, b, k: inverse_dynamics_loss(
        network.apply, p, b["tm1"], b["t"], b["a"], b["box"], k, masked=masked(b)
    )
    take = lambda idx: {k: v[idx] for k, v in flat.items()}
    evaluate = jax.jit(loss_of)

    def mean_over(params, idx, key):
        chunks = np.array_split(idx, max(1, len(idx) // 1024))
        out = [evaluate(params, take(c), jax.random.fold_in(key, i)) for i, c in enumerate(chunks)]
        weights = np.array([len(c) for c in chunks]) / len(idx)
        return float(np.dot(weights, [o[0] for o in out])), float(
            np.dot(weights, [o[1]["accuracy"] for o in out])
        )

    batch = lambda idx, i: (take(idx), jax.random.fold_in(k_run, i))
    validate = lambda params: mean_over(params, val_idx, k_eval)[0]
    out = fit_adamw(loss_of, params, batch, validate, train_idx, config.fit, seed, has_aux=True)
    params = out["state"][0]
    test_actions = np.asarray(flat["a"])[test_idx]
    encoder = params["params"]["fe"]
    return {
        "encoder": frame_encoder.with_pretrained_trunk(encoder) if config.frozen_trunk else encoder,
        "params": params,
        "history": out["history"],
        "test_accuracy": mean_over(params, test_idx, k_eval)[1],
        "chance": float(np.bincount(test_actions).max() / len(test_actions)),
    }
