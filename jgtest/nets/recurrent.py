"""PPGTA's memory-augmented imitation policy (Abdelfattah, Brown & Zhang, §IV-B, §V-D, Fig. 3).

"A visual feature encoder (FE) encodes the last K adjacent frames ...; a local
bi-directional GRU cell that encodes temporal dynamics across the last K frames
into a state h^l; a global GRU cell that encodes temporal dynamics across the
whole trajectory till the current time point into state h^g; an action
prediction feed-forward head (MLP) that gets a concatenated state h^c from both
local and global GRU cells as input." Sizes (§V-D): local GRU 256, global GRU
1,024, MLP 512 → 256 "with layer-norm ... and a dropout of 0.2"; here
configurable and smaller by default for CPU (64, 128, 128 → 64), the FE a small
CNN (:class:`jgtest.nets.CNNEncoder`; the paper's AlexNet is not downloadable here).

One call is one time step of a batch of trajectories: ``frames [B, K, H, W, 3]``
(the last K frames) and the global GRU's carry ``[B, global_hidden]`` (zeros at
a trajectory's start, :meth:`ImitationPolicy.initial_carry`) give ``(logits [B, A],
h_c [B, 2·local_hidden + global_hidden], carry)``; ``h_c`` is what Eq. 4's
consistency term compares between student and teacher.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jgtest.nets.cnn import CNNEncoder


class ImitationPolicy(nn.Module):
    """The student (and, with EMA weights, the teacher) of §IV-B (module docstring).

    Attributes:
      num_actions: ``A``.
      cnn_layers: ``(filters, kernel, stride)`` of the FE's convolutions.
      cnn_dense: the FE's output width.
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

    def initial_carry(self, batch: int) -> jax.Array:
        """The global GRU's state at a trajectory's start."""
        return jnp.zeros((batch, self.global_hidden), jnp.float32)

    @nn.compact
    def __call__(self, frames: jax.Array, carry: jax.Array, train: bool = False):
        if frames.ndim != 5:
            raise ValueError(f"ImitationPolicy expects frames [B, K, H, W, C], got shape {frames.shape}")
        channels, kernels, strides = zip(*self.cnn_layers)
        features = CNNEncoder(channels, kernels, strides, dense=self.cnn_dense, conv_impl="im2col", name="fe")(frames)  # [B, K, F]
        local = nn.Bidirectional(
            nn.RNN(nn.GRUCell(self.local_hidden), name="local_forward"), nn.RNN(nn.GRUCell(self.local_hidden), name="local_backward")
        )(features)  # [B, K, 2L]: each step's forward and backward states
        h_local = local[:, -1]
        carry, h_global = nn.GRUCell(self.global_hidden, name="global")(carry, features[:, -1])
        h_c = jnp.concatenate([h_local, h_global], axis=-1)
        x = h_c
        for i, width in enumerate(self.mlp):
            x = nn.Dense(width, name=f"mlp_{i}")(x)
            x = nn.LayerNorm(name=f"norm_{i}")(x)
            x = nn.Dropout(self.dropout, deterministic=not train)(nn.relu(x))
        return nn.Dense(self.num_actions, name="logits")(x), h_c, carry
