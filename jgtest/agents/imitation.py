"""PPGTA's imitation learning: the recurrent student, its EMA teacher, Eq. 4, early stopping (§IV-B, §V-D).

Training (§V-D): "a stack of 4 RGB frames ... as input, a learning rate with a
linear warm-up from 2e-3 to 1e-2 during the first 10 epochs, and a cosine decay
thereafter, a mini-batch size of 64, and a total of 40 epochs with early
stopping", AdamW, a 70/10/20 train/validation/test split of the demonstrations.
The student (:class:`jgtest.nets.ImitationPolicy`) sees OD-masked frames, the
teacher (an exponential moving average of the student, DINO's momentum 0.996)
the full frames; the loss is Eq. 4 (:func:`jgtest.losses.imitation_loss`).

Our choices where the paper is silent: λ = 1; a minibatch is ``batch_size``
whole trajectories (the global GRU runs over a trajectory from its start, so
steps of one trajectory are not shuffled apart; the paper's 64 is in samples);
early stopping when the validation cross-entropy has not improved for
``patience`` epochs, keeping the best epoch's weights.

:func:`train` returns the trained student and its history; :func:`act_distribution`
plays the policy on a trajectory's frames and returns its action distribution,
which :func:`jgtest.novelty.js_divergence` compares to the demonstration's (§VI-B).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jgtest.envs.wrappers import od_mask
from jgtest.losses.ppgta import ema_update, imitation_loss
from jgtest.nets.recurrent import ImitationPolicy


@dataclasses.dataclass(frozen=True)
class ImitationConfig:
    """Settings (module docstring for the paper's).

    Attributes:
      num_actions: the game's actions.
      k: frames the policy sees at each step (the paper's stack of 4).
      batch_size: trajectories per minibatch.
      epochs, warmup_epochs: the schedule's length and warm-up (40 and 10).
      lr_start, lr_peak: the warm-up's start and peak (2e-3 and 1e-2), then cosine decay to 0.
      weight_decay: AdamW's.
      lam: Eq. 4's λ.
      ema_decay: the teacher's momentum.
      patience: epochs without a better validation loss before stopping.
      split: train / validation / test fractions of the trajectories.
      policy: the network's sizes (``ImitationPolicy`` fields other than ``num_actions``).
    """

    num_actions: int = 9
    k: int = 4
    batch_size: int = 8
    epochs: int = 40
    warmup_epochs: int = 10
    lr_start: float = 2e-3
    lr_peak: float = 1e-2
    weight_decay: float = 1e-4
    lam: float = 1.0
    ema_decay: float = 0.996
    patience: int = 5
    split: tuple[float, float, float] = (0.7, 0.1, 0.2)
    policy: tuple[tuple[str, object], ...] = ()

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"k (frames per step) must be at least 1, got {self.k}")
        if self.lam < 0:
            raise ValueError(f"the consistency weight λ must be non-negative, got {self.lam}")
        if not 0 <= self.ema_decay <= 1:
            raise ValueError(f"ema_decay must be in [0, 1], got {self.ema_decay}")
        if self.epochs < 1 or self.batch_size < 1 or self.patience < 1:
            raise ValueError("epochs, batch_size and patience must be at least 1")
        if len(self.split) != 3 or min(self.split) < 0 or abs(sum(self.split) - 1) > 1e-6:
            raise ValueError(f"split must be three non-negative fractions summing to 1, got {self.split}")

    @property
    def network(self) -> ImitationPolicy:
        return ImitationPolicy(num_actions=self.num_actions, **dict(self.policy))


def split_indices(n: int, fractions, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random train / validation / test split of ``n`` trajectories (each part at least one when
    ``n >= 3``)."""
    if n < 3:
        raise ValueError(f"a train/validation/test split needs at least 3 trajectories, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    n_val = max(1, int(round(fractions[1] * n)))
    n_test = max(1, int(round(fractions[2] * n)))
    n_train = n - n_val - n_test
    if n_train < 1:
        raise ValueError(f"{n} trajectories leave none to train on with split {fractions}")
    return order[:n_train], order[n_train : n_train + n_val], order[n_train + n_val :]


def _windows(frames: jax.Array, t, k: int) -> jax.Array:
    """``[B, K, ...]``: frames ``t − K + 1 … t`` of each trajectory ``frames [B, T, ...]`` (the first frame
    repeated before the start)."""
    idx = jnp.clip(t - k + 1 + jnp.arange(k), 0, frames.shape[1] - 1)
    return frames[:, idx]


def _run(network, params, frames, k: int, key=None):
    """The policy over whole trajectories ``frames [B, T, H, W, 3]``: ``(logits [B, T, A], h_c [B, T, D])``."""
    batch, steps = frames.shape[:2]
    train = key is not None

    def body(carry, t):
        rngs = {"dropout": jax.random.fold_in(key, t)} if train else {}
        logits, h_c, carry = network.apply(params, _windows(frames, t, k), carry, train=train, rngs=rngs)
        return carry, (logits, h_c)

    _, (logits, h_c) = jax.lax.scan(body, network.initial_carry(batch), jnp.arange(steps))
    return jnp.moveaxis(logits, 0, 1), jnp.moveaxis(h_c, 0, 1)


def _masked(frames, boxes, visible):
    """Each frame OD-masked around its box (all grayscale where no object is in view)."""
    box = jnp.where(visible[..., None], boxes, 0)
    flat = jax.vmap(od_mask)(frames.reshape(-1, *frames.shape[2:]), box.reshape(-1, 4))
    return flat.reshape(frames.shape)


def make_loss(config: ImitationConfig):
    """``loss(student, teacher, batch, key) -> (loss, metrics)``: Eq. 4 over a minibatch of whole
    trajectories (``batch``: ``frames``, ``actions``, ``od_box``, ``od_visible``, ``[B, T, ...]``)."""
    network = config.network

    def loss(student, teacher, batch, key):
        masked = _masked(batch["frames"], batch["od_box"], batch["od_visible"])
        logits, h_s = _run(network, student, masked, config.k, key)
        _, h_t = _run(network, jax.lax.stop_gradient(teacher), batch["frames"], config.k)
        flat = lambda x: x.reshape(-1, *x.shape[2:])
        return imitation_loss(flat(logits), flat(batch["actions"]), flat(h_s), flat(h_t), config.lam)

    return loss


def train(config: ImitationConfig, demos: dict, key: jax.Array, seed: int = 0) -> dict:
    """Trains the student on ``demos`` (``frames``, ``actions``, ``od_box``, ``od_visible``,
    ``[N, T, ...]``, as :func:`jgtest.envs.park_experts.demonstrations` returns them).

    Returns:
      dict: ``params`` (the best epoch's student), ``teacher``, ``history`` (per epoch
      ``train_loss``, ``val_ce``), ``best_epoch``, ``stopped_early`` and the split's indices.

    Raises:
      ValueError: an empty demonstration set, or one too small to split.
    """
    frames = demos.get("frames")
    if frames is None or frames.shape[0] == 0 or frames.shape[1] == 0:
        raise ValueError("the demonstration set is empty")
    train_idx, val_idx, test_idx = split_indices(int(frames.shape[0]), config.split, seed)
    data = {k: jnp.asarray(demos[k]) for k in ("frames", "actions", "od_box", "od_visible")}
    batches_per_epoch = max(1, len(train_idx) // config.batch_size)
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=config.lr_start, peak_value=config.lr_peak, warmup_steps=config.warmup_epochs * batches_per_epoch,
        decay_steps=max(config.epochs * batches_per_epoch, config.warmup_epochs * batches_per_epoch + 1),
    )  # fmt: skip
    tx = optax.adamw(schedule, weight_decay=config.weight_decay)
    k_init, k_run = jax.random.split(key)
    network = config.network
    sample = data["frames"][:1, :1]
    student = network.init(k_init, _windows(sample, 0, config.k), network.initial_carry(1))
    teacher, opt_state = student, tx.init(student)
    loss_fn = make_loss(config)

    @jax.jit
    def step(student, teacher, opt_state, batch, key):
        (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(student, teacher, batch, key)
        updates, opt_state = tx.update(grads, opt_state, student)
        student = optax.apply_updates(student, updates)
        return student, ema_update(teacher, student, config.ema_decay), opt_state, loss

    @jax.jit
    def validation_ce(student, batch):
        logits, _ = _run(network, student, _masked(batch["frames"], batch["od_box"], batch["od_visible"]), config.k)
        log_p = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(log_p, batch["actions"][..., None], axis=-1))

    take = lambda idx: {k: v[idx] for k, v in data.items()}
    history, best, best_params, waited, rng = [], np.inf, student, 0, np.random.default_rng(seed)
    for epoch in range(config.epochs):
        order = rng.permutation(train_idx)
        losses = []
        for b in range(batches_per_epoch):
            idx = order[b * config.batch_size : (b + 1) * config.batch_size]
            student, teacher, opt_state, loss = step(student, teacher, opt_state, take(idx), jax.random.fold_in(k_run, epoch * 10_000 + b))
            losses.append(float(loss))
        val = float(validation_ce(student, take(val_idx)))
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "val_ce": val})
        if val < best:
            best, best_params, waited = val, student, 0
        else:
            waited += 1
            if waited >= config.patience:
                break
    return {
        "params": best_params, "teacher": teacher, "history": history, "best_epoch": int(np.argmin([h["val_ce"] for h in history])),
        "stopped_early": len(history) < config.epochs, "train_idx": train_idx, "val_idx": val_idx, "test_idx": test_idx,
    }  # fmt: skip


def act_distribution(config: ImitationConfig, params, frames: jax.Array, od_box, od_visible) -> jax.Array:
    """The policy's mean action distribution over a trajectory (``frames [T, H, W, 3]``), OD-masked as in training."""
    masked = _masked(frames[None], od_box[None], od_visible[None])
    logits, _ = _run(config.network, params, masked, config.k)
    return jnp.mean(jax.nn.softmax(logits[0]), axis=0)
