"""PPGTA's feature distillation by masked inverse dynamics (§IV-A, Eq. 3, §V-B): an FE on two
adjacent frames, one OD-masked, predicts the action between them; it becomes the imitation
policy's backbone.

* chosen: a random FE, because the paper's ImageNet AlexNet cannot be downloaded here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jgtest.losses.ppgta import inverse_dynamics_loss
from jgtest.nets.cnn import CNNEncoder
from jgtest.supervised import FitSettings, fit_adamw, split_indices


class InverseDynamics(nn.Module):
    """``φ_θ(s_{t−1}, s_t) -> logits``: the FE on each frame, a ReLU layer on the concatenated
    features."""

    num_actions: int
    cnn_layers: Sequence[tuple[int, int, int]] = ((16, 8, 4), (32, 4, 2), (32, 3, 1))
    cnn_dense: int = 128
    hidden: int = 256

    @nn.compact
    def __call__(self, frames_tm1: jax.Array, frames_t: jax.Array) -> jax.Array:
        channels, kernels, strides = zip(*self.cnn_layers)
        fe = CNNEncoder(
            channels, kernels, strides, dense=self.cnn_dense, conv_impl="im2col", name="fe"
        )
        x = jnp.concatenate([fe(frames_tm1), fe(frames_t)], axis=-1)
        return nn.Dense(self.num_actions)(nn.relu(nn.Dense(self.hidden)(x)))


@dataclasses.dataclass(frozen=True)
class InverseDynamicsConfig:
    """Settings. ``cnn_layers`` and ``cnn_dense`` must match the imitation policy's. The 70/10/20
    split by trajectory is §V-B's; ours where the paper is silent: AdamW at 1e-3, minibatches of
    128 pairs, at most 10 epochs, patience 3 on the validation loss, a 256-unit ReLU head on the
    two frames' concatenated features."""

    num_actions: int = 9
    cnn_layers: tuple[tuple[int, int, int], ...] = ((16, 8, 4), (32, 4, 2), (32, 3, 1))
    cnn_dense: int = 128
    fit: FitSettings = FitSettings(batch_size=128, epochs=10, patience=3)

    @property
    def network(self) -> InverseDynamics:
        return InverseDynamics(self.num_actions, self.cnn_layers, self.cnn_dense)


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
      dict: ``encoder`` (the FE's parameters), ``params`` (the whole model), ``history``,
      ``test_accuracy`` (action accuracy on the test trajectories' pairs, frames masked at random as
      in training), ``chance`` (the most frequent action's share there).
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
    flat = {k: jnp.asarray(np.concatenate([p[k] for p in parts])) for k in parts[0]}
    bounds = np.cumsum([0] + [len(p["a"]) for p in parts])
    train_idx, val_idx, test_idx = (np.arange(bounds[i], bounds[i + 1]) for i in range(3))

    network = config.network
    k_init, k_run, k_eval = jax.random.split(key, 3)
    params = network.init(k_init, flat["tm1"][:1], flat["t"][:1])
    loss_of = lambda p, b, k: inverse_dynamics_loss(
        network.apply, p, b["tm1"], b["t"], b["a"], b["box"], k
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
    return {
        "encoder": params["params"]["fe"],
        "params": params,
        "history": out["history"],
        "test_accuracy": mean_over(params, test_idx, k_eval)[1],
        "chance": float(np.bincount(test_actions).max() / len(test_actions)),
    }
