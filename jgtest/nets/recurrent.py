"""PPGTA's memory-augmented imitation policy (§IV-B, §V-D, Fig. 3): an FE over the last K
frames, a local bi-GRU, a global GRU over the trajectory, and an MLP head.

* chosen: a small random CNN as the FE, because the paper's AlexNet cannot be downloaded.
* chosen: smaller sizes than §V-D's by default, for CPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jgtest.nets import frame_encoder


class ImitationPolicy(nn.Module):
    """The student (and, with EMA weights, the teacher) of §IV-B: "a visual feature encoder (FE)
    encodes the last K adjacent frames ...; a local bi-directional GRU cell that encodes temporal
    dynamics across the last K frames into a state h^l; a global GRU cell that encodes temporal
    dynamics across the whole trajectory till the current time point into state h^g; an action
    prediction feed-forward head (MLP) that gets a concatenated state h^c from both local and
    global GRU cells as input."

    One call is one time step of a batch of trajectories: ``frames [B, K, H, W, 3]`` (the last K
    frames) and the global GRU's carry ``[B, global_hidden]`` (zeros at a trajectory's start,
    :meth:`initial_carry`) give ``(logits [B, A], h_c [B, 2·local_hidden + global_hidden],
    carry)``.

    Attributes:
      num_actions: ``A``.
      cnn_layers: ``(filters, kernel, stride)`` of the scratch FE's convolutions.
      cnn_dense: the FE's output width.
      encoder: the FE (:data:`jgtest.nets.frame_encoder.FRAME_ENCODERS`).
      local_hidden: each direction of the local bi-directional GRU (paper: 256).
      global_hidden: the global GRU (paper: 1,024).
      mlp: the head's hidden widths, each with layer norm, ReLU and dropout (paper: 512, 256).
      dropout: the head's dropout rate (paper: 0.2).
    """

    num_actions: int
    cnn_layers: Sequence[tuple[int, int, int]] = ((16, 8, 4), (32, 4, 2), (32, 3, 1))
    cnn_dense: int = 128
    local_hidden: int = 64
    global_hidden: int = 128
    mlp: Sequence[int] = (128, 64)
    dropout: float = 0.2
    encoder: str = frame_encoder.FRAME_ENCODERS[0]

    def initial_carry(self, batch: int) -> jax.Array:
        """The global GRU's state at a trajectory's start."""
        return jnp.zeros((batch, self.global_hidden), jnp.float32)

    def setup(self):
        self.fe = frame_encoder.make(self.encoder, self.cnn_layers, self.cnn_dense)
        self.local = nn.Bidirectional(
            nn.RNN(nn.GRUCell(self.local_hidden)), nn.RNN(nn.GRUCell(self.local_hidden))
        )
        self.global_cell = nn.GRUCell(self.global_hidden)
        self.mlp_dense = [nn.Dense(width) for width in self.mlp]
        self.mlp_norm = [nn.LayerNorm() for _ in self.mlp]
        self.mlp_dropout = nn.Dropout(self.dropout)
        self.head = nn.Dense(self.num_actions)

    def encode(self, frames: jax.Array) -> jax.Array:
        """The FE: ``[..., H, W, 3]`` frames to ``[..., cnn_dense]`` features (one pass per frame,
        so a trajectory's frames can be encoded once and windowed after)."""
        return self.fe(frames)

    def step(self, features: jax.Array, carry: jax.Array, train: bool = False):
        """One step from the last K frames' features ``[B, K, F]``: ``(logits, h_c, carry)``."""
        local = self.local(features)  # [B, K, 2L], each direction's output in the frames' order
        # The window's two summaries: the forward GRU's after reading up to frame t (the last
        # output), the backward GRU's after reading from t back to t − K + 1 (the first output; its
        # last has read frame t only).
        h_local = jnp.concatenate(
            [local[:, -1, : self.local_hidden], local[:, 0, self.local_hidden :]], axis=-1
        )
        carry, h_global = self.global_cell(carry, features[:, -1])
        h_c = jnp.concatenate([h_local, h_global], axis=-1)
        x = h_c
        for dense, norm in zip(self.mlp_dense, self.mlp_norm):
            x = self.mlp_dropout(nn.relu(norm(dense(x))), deterministic=not train)
        return self.head(x), h_c, carry

    def __call__(self, frames: jax.Array, carry: jax.Array, train: bool = False):
        if frames.ndim != 5:
            raise ValueError(
                f"ImitationPolicy expects frames [B, K, H, W, C], got shape {frames.shape}"
            )
        return self.step(self.encode(frames), carry, train)
