"""The Nature-DQN frame encoder."""

from __future__ import annotations

import math
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jgtest.nets.mlp import dense_init, frames_to_float


class CNNEncoder(nn.Module):
    """Convolutional frame encoder of DQN (Mnih et al., 2015, "Human-level
    control through deep reinforcement learning", Nature 518).

    Three ReLU convolutions (32 filters 8×8 stride 4, 64 filters 4×4 stride 2,
    64 filters 3×3 stride 1, ``VALID`` padding as in the paper), flattened, then
    a ReLU dense layer of 512 units. ``uint8`` frames are scaled by 1/255; float
    frames are used as they are. Any number of leading batch dims is accepted
    (they are merged for the convolutions and restored on the output).

    With ``orthogonal_init`` the layers get orthogonal weights with gain
    ``sqrt(2)`` and zero biases, as in PPO's Atari implementations (Huang et
    al., 2022); otherwise flax's defaults (as in CleanRL's DQN).

    Attributes:
      channels: filters of each convolution.
      kernels: square kernel size of each convolution.
      strides: stride of each convolution.
      dense: width of the final ReLU dense layer; ``None`` returns the
        flattened convolution features.
      padding: ``"VALID"`` (the paper) or ``"SAME"`` (keeps small frames, e.g.
        10×10 game grids, from shrinking to nothing).
      orthogonal_init: orthogonal initialization as above.

    Input ``[..., H, W, C]`` (``uint8`` or float), output ``float32[..., dense]``.

    Example::

        enc = CNNEncoder()
        params = enc.init(jax.random.key(0), jnp.zeros((84, 84, 4), jnp.uint8))
        feats = enc.apply(params, frames)             # [T, B, 84, 84, 4] -> [T, B, 512]
    """

    channels: Sequence[int] = (32, 64, 64)
    kernels: Sequence[int] = (8, 4, 3)
    strides: Sequence[int] = (4, 2, 1)
    dense: int | None = 512
    padding: str = "VALID"
    orthogonal_init: bool = True

    @nn.compact
    def __call__(self, frames: jax.Array) -> jax.Array:
        if not len(self.channels) == len(self.kernels) == len(self.strides):
            raise ValueError(
                f"CNNEncoder: channels, kernels and strides must have the same length, got "
                f"{len(self.channels)}, {len(self.kernels)}, {len(self.strides)}"
            )
        if self.padding not in ("VALID", "SAME"):
            raise ValueError(f"CNNEncoder: padding must be 'VALID' or 'SAME', got {self.padding!r}")
        if frames.ndim < 3:
            raise ValueError(f"CNNEncoder expects frames [..., H, W, C], got shape {frames.shape}")
        h, w = frames.shape[-3], frames.shape[-2]
        for k, s in zip(self.kernels, self.strides):
            if self.padding == "VALID":
                h, w = (h - k) // s + 1 if h >= k else 0, (w - k) // s + 1 if w >= k else 0
            else:
                h, w = -(-h // s), -(-w // s)
        if h < 1 or w < 1:
            raise ValueError(
                f"CNNEncoder: frames of shape {frames.shape[-3:]} are too small for these convolutions; "
                "use larger frames or padding='SAME'"
            )
        lead = frames.shape[:-3]
        x = frames_to_float(frames).reshape(-1, *frames.shape[-3:])
        init = dense_init(self.orthogonal_init, math.sqrt(2.0))
        for i, (c, k, s) in enumerate(zip(self.channels, self.kernels, self.strides)):
            x = nn.Conv(c, (k, k), strides=(s, s), padding=self.padding, name=f"conv_{i}", **init)(x)
            x = nn.relu(x)
        x = x.reshape(x.shape[0], -1)
        if self.dense is not None:
            x = nn.relu(nn.Dense(self.dense, name="dense", **init)(x))
        return x.reshape(*lead, x.shape[-1])
