"""Random Network Distillation with an ensemble of predictors (Burda et al., 2019; PPGTA §IV-C).

The reward is the ensemble's disagreement ``r_e = Var(ô_1, …, ô_N)`` on 64×64 OD-masked frames
(PPGTA), or one predictor's error ``‖ô − o_tn‖²`` (Inspector); :class:`RND` is pure functions.

* chosen: rewards over a running sd of the raw rewards, so that no discount is needed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jgtest.frames import od_mask, resize
from jgtest.nets import MLP, CNNEncoder

REWARDS = ("variance", "error")


@dataclasses.dataclass(frozen=True)
class RNDConfig:
    """RND's settings: the paper's 64×64 frames, replay buffer of 1,024 transitions and AdamW
    (§V-D); the target and predictor MLPs of 512 and 256 on the FE (§V-D).

    Attributes:
      members: predictors ``N`` (PPGTA: an ensemble; Inspector: 1).
      reward: ``"variance"`` (ensemble disagreement, PPGTA) or ``"error"`` (member 0's error
        to the target, the original RND).
      shared_backbone: one frozen CNN under target and predictors, only the MLPs per member
        (PPGTA's FE, :class:`RND`); ``False``: whole networks, as the original RND.
      input_size: frames are resized to this (the paper's 64×64).
      channels, kernels, strides: the CNN backbone.
      hidden: the MLP after the backbone; its last width is the projection's size (512, 256).
      buffer_size: replay buffer of recent frames (1,024).
      batch_size: frames per update (one minibatch shared by the members).
      learning_rate, weight_decay: AdamW.
    """

    members: int = 8
    reward: str = "variance"
    shared_backbone: bool = True
    input_size: tuple[int, int] = (64, 64)
    channels: Sequence[int] = (16, 32, 32)
    kernels: Sequence[int] = (8, 4, 3)
    strides: Sequence[int] = (4, 2, 1)
    hidden: Sequence[int] = (512, 256)
    buffer_size: int = 1024
    batch_size: int = 64
    learning_rate: float = 1e-4
    weight_decay: float = 1e-4

    def __post_init__(self):
        if self.members < 1:
            raise ValueError(f"RND needs at least one predictor, got members={self.members}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {self.reward!r}")
        if self.reward == "variance" and self.members < 2:
            raise ValueError(
                "the ensemble-variance reward needs at least 2 members (use reward='error' for one)"
            )
        if self.batch_size < 1 or self.buffer_size < self.batch_size:
            raise ValueError(
                f"the replay buffer ({self.buffer_size}) must hold at least one batch "
                f"({self.batch_size})"
            )
        if not self.hidden:
            raise ValueError("hidden must give at least one layer (the projection's size)")


class RNDNet(nn.Module):
    """Backbone CNN then a ReLU MLP; the output is the projection ``[..., hidden[-1]]``. With
    ``backbone=False`` only the MLP, on features."""

    channels: Sequence[int]
    kernels: Sequence[int]
    strides: Sequence[int]
    hidden: Sequence[int]
    backbone: bool = True

    @nn.compact
    def __call__(self, x):
        if self.backbone:
            x = CNNEncoder(
                self.channels, self.kernels, self.strides, dense=None, conv_impl="im2col"
            )(x)
        return MLP(tuple(self.hidden[:-1]), "relu", out_size=self.hidden[-1])(x)


class RNDState(struct.PyTreeNode):
    """Backbone, target and predictors, optimiser, replay buffer and reward scale."""

    backbone: dict | None  # the frozen shared CNN (None without shared_backbone)
    target: dict
    predictors: dict  # stacked [N, ...]
    opt_state: optax.OptState
    buffer: jax.Array  # uint8[buffer_size, H, W, 3]
    filled: jax.Array  # int32, frames in the buffer
    cursor: jax.Array  # int32, next slot to write
    scale_count: jax.Array  # float32, raw rewards seen by the running scale
    scale_mean: jax.Array
    scale_m2: jax.Array


@dataclasses.dataclass(frozen=True)
class RND:
    """The pure functions of RND for one :class:`RNDConfig`.

    A fixed, randomly initialised **target** network maps a frame to a projection ``o_tn``; each
    **predictor** of the ensemble is trained (MSE) to output the same; frames they have not learned
    yet have a large error, and the members disagree on them. The members are one stacked
    parameter pytree (leading axis ``N``) applied with ``vmap``, so N members cost one batched
    call. They regress the target on one shared minibatch (``batch_size`` frames drawn with
    replacement from the last ``buffer_size``), and differ by their initialisation, as the paper's
    Fig. 4 feeds every predictor the same input. Rewards are divided by a running standard
    deviation of the raw rewards (Burda et al. divide by that of the intrinsic returns).

    With ``shared_backbone`` one frozen backbone computes the features once per frame and only the
    MLPs differ (the target's fixed and random, each predictor's trained): PPGTA passes its masked
    inverse-dynamics FE's convolutions (``init(key, backbone=...)``); without one, a fixed random
    CNN stands in. Without ``shared_backbone`` (the original RND, Inspector's) target and
    predictors are whole networks and each predictor trains its CNN too. Usage::

        rnd = RND(RNDConfig(members=8))
        state = rnd.init(jax.random.key(0))
        inputs = rnd.preprocess(frames, boxes)   # [B, 64, 64, 3] uint8, OD-masked
        r = rnd.reward(state, inputs)            # [B], normalised
        state = rnd.observe(state, inputs)       # into the buffer, scale updated
        state, metrics = rnd.update(state, key)  # one AdamW step of every member
    """

    config: RNDConfig = RNDConfig()

    def _net(self, backbone: bool) -> RNDNet:
        c = self.config
        return RNDNet(
            tuple(c.channels), tuple(c.kernels), tuple(c.strides), tuple(c.hidden), backbone
        )

    @property
    def net(self) -> RNDNet:
        """The target's and each predictor's network: the MLP on features (shared backbone) or the
        whole network."""
        return self._net(not self.config.shared_backbone)

    @property
    def optimizer(self) -> optax.GradientTransformation:
        return optax.adamw(self.config.learning_rate, weight_decay=self.config.weight_decay)

    def init(self, key: jax.Array, backbone: dict | None = None) -> RNDState:
        """A fresh state; ``backbone``: the shared backbone's parameters (``shared_backbone``; e.g.
        a trained FE's convolutions, in :attr:`backbone_net`'s shape), a random one when
        ``None``."""
        c = self.config
        k_backbone, k_target, k_members = jax.random.split(key, 3)
        dummy = jnp.zeros((*c.input_size, 3), jnp.uint8)
        if backbone is not None and not c.shared_backbone:
            raise ValueError(
                "a backbone was given, but this RND has no shared backbone (shared_backbone=False)"
            )
        if c.shared_backbone:
            backbone = self.backbone_net.init(k_backbone, dummy) if backbone is None else backbone
            dummy = self.backbone_net.apply(backbone, dummy)
        target = self.net.init(k_target, dummy)
        predictors = jax.vmap(lambda k: self.net.init(k, dummy))(
            jax.random.split(k_members, c.members)
        )
        return RNDState(
            backbone=backbone,
            target=target,
            predictors=predictors,
            opt_state=self.optimizer.init(predictors),
            buffer=jnp.zeros((c.buffer_size, *c.input_size, 3), jnp.uint8),
            filled=jnp.int32(0),
            cursor=jnp.int32(0),
            scale_count=jnp.float32(0),
            scale_mean=jnp.float32(0),
            scale_m2=jnp.float32(0),
        )

    @property
    def backbone_net(self) -> CNNEncoder:
        """The shared backbone (``shared_backbone``): the CNN of :class:`RNDNet`, frozen."""
        c = self.config
        return CNNEncoder(
            tuple(c.channels), tuple(c.kernels), tuple(c.strides), dense=None, conv_impl="im2col"
        )

    def embed(self, state: RNDState, inputs: jax.Array) -> jax.Array:
        """What the target and the predictors read: the shared backbone's features (computed once,
        no gradient), or the inputs themselves."""
        if not self.config.shared_backbone:
            return inputs
        return jax.lax.stop_gradient(self.backbone_net.apply(state.backbone, inputs))

    def preprocess(
        self,
        frames: jax.Array,
        boxes: jax.Array | None = None,
        box_visible: jax.Array | None = None,
    ) -> jax.Array:
        """``uint8[..., H, W, 3]`` frames to the networks' input: resized to ``input_size``, then
        OD-masked around ``boxes`` (``int32[..., 4]`` in the frames' pixels, where ``box_visible``;
        grayscale everywhere where no object is in view). Without ``boxes``, only resized."""
        c = self.config
        lead = frames.shape[:-3]
        flat = frames.reshape(-1, *frames.shape[-3:])
        same = tuple(frames.shape[-3:-1]) == tuple(c.input_size)
        small = flat if same else jax.vmap(lambda f: resize(f, c.input_size))(flat)
        if boxes is None:
            return small.reshape(*lead, *c.input_size, 3)
        scale = jnp.asarray(
            [c.input_size[0] / frames.shape[-3], c.input_size[1] / frames.shape[-2]] * 2
        )
        box = jnp.round(boxes.reshape(-1, 4) * scale).astype(jnp.int32)
        visible = jnp.ones(box.shape[0], bool) if box_visible is None else box_visible.reshape(-1)
        box = jnp.where(visible[:, None], box, 0)  # an empty box: all grayscale
        masked = jax.vmap(od_mask)(small, box)
        return masked.reshape(*lead, *c.input_size, 3)

    def _predict(self, state: RNDState, inputs: jax.Array):
        x = self.embed(state, inputs)
        predictions = jax.vmap(lambda p: self.net.apply(p, x))(state.predictors)  # [N, ..., D]
        return x, predictions

    def raw_reward(self, state: RNDState, inputs: jax.Array) -> jax.Array:
        """Unscaled novelty of each input ``[...]``: the members' variance (mean over the
        projection) or member 0's squared error to the target."""
        x, predictions = self._predict(state, inputs)
        if self.config.reward == "variance":
            return jnp.mean(jnp.var(predictions, axis=0), axis=-1)
        return jnp.mean((predictions[0] - self.net.apply(state.target, x)) ** 2, axis=-1)

    def reward(self, state: RNDState, inputs: jax.Array) -> jax.Array:
        """:meth:`raw_reward` divided by the running standard deviation of the raw rewards seen by
        :meth:`observe` (1 before any)."""
        var = jnp.where(
            state.scale_count > 1, state.scale_m2 / jnp.maximum(state.scale_count - 1, 1), 1.0
        )
        return self.raw_reward(state, inputs) / jnp.sqrt(var + 1e-8)

    def observe(self, state: RNDState, inputs: jax.Array) -> RNDState:
        """Adds ``inputs [B, H, W, 3]`` to the replay buffer (oldest overwritten) and their raw
        rewards to the running scale (Chan et al.'s parallel mean/variance update)."""
        c = self.config
        inputs = inputs.reshape(-1, *c.input_size, 3)
        n = inputs.shape[0]
        if n > c.buffer_size:
            raise ValueError(
                f"observe got {n} frames at once, more than the replay buffer holds "
                f"({c.buffer_size})"
            )
        slots = (state.cursor + jnp.arange(n)) % c.buffer_size
        buffer = state.buffer.at[slots].set(inputs)
        raw = self.raw_reward(state, inputs)
        count = state.scale_count + n
        delta = jnp.mean(raw) - state.scale_mean
        mean = state.scale_mean + delta * n / count
        m2 = (
            state.scale_m2
            + jnp.sum((raw - jnp.mean(raw)) ** 2)
            + delta**2 * state.scale_count * n / count
        )
        return state.replace(
            buffer=buffer,
            filled=jnp.minimum(state.filled + n, c.buffer_size),
            cursor=(state.cursor + n) % c.buffer_size,
            scale_count=count,
            scale_mean=mean,
            scale_m2=m2,
        )

    def loss(self, predictors: dict, target: dict, x: jax.Array) -> jax.Array:
        """Sum over members of each member's MSE to the target on the batch ``x`` (embedded)."""
        goal = jax.lax.stop_gradient(self.net.apply(target, x))
        guess = jax.vmap(lambda p: self.net.apply(p, x))(predictors)
        return jnp.sum(jnp.mean((guess - goal[None]) ** 2, axis=(1, 2)))

    def update(self, state: RNDState, key: jax.Array) -> tuple[RNDState, dict]:
        """One AdamW step of every member on ``batch_size`` frames drawn from the buffer (with
        replacement, one minibatch for all). Before any frame is observed it does nothing."""
        c = self.config
        index = jax.random.randint(key, (c.batch_size,), 0, jnp.maximum(state.filled, 1))
        x = self.embed(state, state.buffer[index])
        loss, grads = jax.value_and_grad(self.loss)(state.predictors, state.target, x)
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.predictors)
        predictors = optax.apply_updates(state.predictors, updates)
        ready = state.filled > 0
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(ready, a, b), new, old)
        state = state.replace(
            predictors=keep(predictors, state.predictors),
            opt_state=keep(opt_state, state.opt_state),
        )
        return state, {"rnd_loss": loss / c.members}
