"""The supervised training loop PPGTA's learned parts share: epochs of shuffled minibatches,
validation after each epoch, early stopping that keeps the best epoch (§V-D: "a total of 40 epochs
with early stopping").

The inverse-dynamics encoder (:mod:`jgtest.agents.inverse_dynamics`), the imitation policies
(:mod:`jgtest.agents.imitation`), the object detector (:mod:`jgtest.vision.detector`) and the
texture oracle (:mod:`jgtest.oracles.texture`) each give a jitted ``step`` and ``validate`` and
train with :func:`fit` (the last three through :func:`fit_adamw`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax


@dataclasses.dataclass(frozen=True)
class FitSettings:
    """How :func:`fit_adamw` fits a model: AdamW at ``learning_rate`` with ``weight_decay``,
    minibatches of ``batch_size``, at most ``epochs`` epochs, stopping after ``patience`` epochs
    without a better validation loss, on a train/validation/test ``split`` (§V-B's 70/10/20).

    Each model's config holds one (``config.fit``) with the defaults it chose::

        TextureOracleConfig(fit=FitSettings(learning_rate=2e-3, epochs=30))
    """

    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    batch_size: int = 64
    epochs: int = 40
    patience: int = 5
    split: tuple[float, float, float] = (0.7, 0.1, 0.2)

    def __post_init__(self):
        if self.epochs < 1 or self.batch_size < 1 or self.patience < 1:
            raise ValueError("epochs, batch_size and patience must be at least 1")
        if len(self.split) != 3 or min(self.split) < 0 or abs(sum(self.split) - 1) > 1e-6:
            raise ValueError(
                f"split must be three non-negative fractions summing to 1, got {self.split}"
            )


def fit(
    state: Any,
    step: Callable,
    validate: Callable[[Any], float],
    train_idx: np.ndarray,
    batch_size: int,
    epochs: int,
    patience: int,
    seed: int = 0,
    min_epochs: int = 0,
) -> dict:
    """Trains ``state`` (any pytree: parameters, optimiser state, ...).

    Args:
      step: ``step(state, idx, step_index) -> (state, loss)`` on the minibatch of examples ``idx``
        (a numpy array of indices into the training data).
      validate: ``validate(state) -> float``, lower is better.
      train_idx: the training examples' indices.
      batch_size: examples per minibatch (the last, smaller one is dropped; at least one per epoch).
      epochs: at most this many epochs.
      patience: stop after this many epochs without a better validation.
      min_epochs: the warm-up (e.g. a learning rate's, in which the loss may rise while the rate
        does): no stop and no kept weights before this many epochs; the best epoch is the best after
        it (capped at ``epochs``).

    Returns:
      dict: ``state`` (the best epoch's), ``last_state``, ``history`` (per epoch ``train_loss`` and
      ``val``), ``best_epoch``, ``stopped_early``.
    """
    if len(train_idx) == 0:
        raise ValueError("no training examples")
    if batch_size < 1 or epochs < 1 or patience < 1:
        raise ValueError(
            f"batch_size, epochs and patience must be at least 1, got {batch_size}, {epochs}, "
            f"{patience}"
        )
    rng = np.random.default_rng(seed)
    batches = max(1, len(train_idx) // batch_size)
    history, best, best_state, waited = [], np.inf, state, 0
    warmup = min(
        max(min_epochs, 1), epochs
    )  # the first epoch whose weights may be kept is warmup - 1
    for epoch in range(epochs):
        order = rng.permutation(train_idx)
        losses = []
        for b in range(batches):
            state, loss = step(
                state, order[b * batch_size : (b + 1) * batch_size], epoch * batches + b
            )
            losses.append(float(loss))
        val = float(validate(state))
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "val": val})
        if epoch + 1 < warmup:
            continue
        if val < best:
            best, best_state, waited = val, state, 0
        else:
            waited += 1
            if waited >= patience:
                break
    best_epoch = warmup - 1 + int(np.argmin([h["val"] for h in history[warmup - 1 :]]))
    return {
        "state": best_state,
        "last_state": state,
        "history": history,
        "best_epoch": best_epoch,
        "stopped_early": len(history) < epochs,
    }


def split_indices(
    n: int, fractions=(0.7, 0.1, 0.2), seed: int = 0, strata: np.ndarray | None = None
):
    """A random train / validation / test split of ``n`` examples (PPGTA §V-B: 70/10/20), each part
    at least one when ``n >= 3``: ``(train_idx, val_idx, test_idx)``. With ``strata`` (a label per
    example) the split is stratified: each label is split in the same fractions (§V-B's detector
    data)."""
    if strata is not None:
        strata = np.asarray(strata)
        if strata.shape != (n,):
            raise ValueError(
                f"strata must give one label per example ({n}), got shape {strata.shape}"
            )
        parts = [
            split_indices(int((strata == s).sum()), fractions, seed) for s in np.unique(strata)
        ]
        members = [np.flatnonzero(strata == s) for s in np.unique(strata)]
        return tuple(np.concatenate([m[p[i]] for m, p in zip(members, parts)]) for i in range(3))
    if n < 3:
        raise ValueError(f"a train/validation/test split needs at least 3 examples, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    n_val = max(1, int(round(fractions[1] * n)))
    n_test = max(1, int(round(fractions[2] * n)))
    n_train = n - n_val - n_test
    if n_train < 1:
        raise ValueError(f"{n} examples leave none to train on with split {fractions}")
    return order[:n_train], order[n_train : n_train + n_val], order[n_train + n_val :]


def batches_per_epoch(num_train: int, batch_size: int) -> int:
    """Minibatches :func:`fit` runs per epoch (for learning-rate schedules counted in steps)."""
    return max(1, num_train // batch_size)


def make_step(
    loss_fn: Callable, tx: optax.GradientTransformation, has_aux: bool = False
) -> Callable:
    """A jitted minibatch step for :func:`fit`: ``step((params, opt_state), *batch) -> ((params,
    opt_state), loss)``, the gradient of ``loss_fn(params, *batch)`` (which returns ``(loss, aux)``
    with ``has_aux``) through ``tx``."""

    @jax.jit
    def step(state, *batch):
        params, opt_state = state
        out, grads = jax.value_and_grad(loss_fn, has_aux=has_aux)(params, *batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), (out[0] if has_aux else out)

    return step


def fit_adamw(
    loss_fn: Callable,
    params: Any,
    batch: Callable,
    validate: Callable[[Any], float],
    train_idx: np.ndarray,
    settings: FitSettings,
    seed: int = 0,
    has_aux: bool = False,
) -> dict:
    """:func:`fit` of ``params`` by AdamW steps (:func:`make_step`) on
    ``loss_fn(params, *batch(idx, step_index))``, validated by ``validate(params)``.

    ``settings`` gives AdamW's ``learning_rate`` and ``weight_decay``, and :func:`fit`'s
    ``batch_size``, ``epochs`` and ``patience``. The returned ``state`` is
    ``(params, opt_state)``.
    """
    tx = optax.adamw(settings.learning_rate, weight_decay=settings.weight_decay)
    step = make_step(loss_fn, tx, has_aux)
    return fit(
        (params, tx.init(params)),
        lambda state, idx, i: step(state, *batch(idx, i)),
        lambda state: validate(state[0]),
        train_idx,
        settings.batch_size,
        settings.epochs,
        settings.patience,
        seed,
    )


def fit_examples(
    loss_fn: Callable,
    params: Any,
    take: Callable,
    train_idx: np.ndarray,
    val_idx: np.ndarray,
    settings: FitSettings,
    seed: int = 0,
) -> dict:
    """:func:`fit_adamw` of ``loss_fn(params, *take(idx))`` over indexed examples, validated by
    the loss of the examples ``val_idx``."""
    val_loss = jax.jit(loss_fn)
    validate = lambda params: val_loss(params, *take(val_idx))
    return fit_adamw(loss_fn, params, lambda idx, i: take(idx), validate, train_idx, settings, seed)
