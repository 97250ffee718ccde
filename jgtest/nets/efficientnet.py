"""EfficientNet-Lite0 (Tan & Le, ICML 2019; the Lite variants of TensorFlow's
``efficientnet/lite/efficientnet_lite_builder.py``) in Flax, for ImageNet-pretrained frame features.

The Lite variants drop squeeze-and-excitation, use ReLU6 and keep the stem (32) and head (1,280)
unscaled. Stages of inverted-residual (MBConv) blocks, ``(repeats, kernel, stride, expansion,
filters)`` (:data:`LITE0_STAGES`); TensorFlow's ``SAME`` padding throughout (``lax``'s, the same
split); a residual where a block keeps its stride 1 and width.

Batch norm is folded into the convolution before it (:func:`variables_from_state_dict`): the
pretrained statistics are inference-time constants, so a convolution with a bias computes the same
function, and fine-tuning trains the folded weights, as fine-tuning with frozen statistics does.

Example::

    net = EfficientNetLite0()
    variables = pretrained.efficientnet_lite0()           # jgtest.nets.pretrained
    logits = net.apply(variables, preprocess(images))     # uint8 [B, 224, 224, 3] -> [B, 1000]
    features = net.apply(variables, preprocess(frames), method="features")  # [B, 1280]
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

#: EfficientNet-Lite0's stages: (repeats, kernel, stride, expansion, output filters).
LITE0_STAGES = (
    (1, 3, 1, 1, 16),
    (2, 3, 2, 6, 24),
    (2, 5, 2, 6, 40),
    (3, 3, 2, 6, 80),
    (3, 5, 1, 6, 112),
    (4, 5, 2, 6, 192),
    (1, 3, 1, 6, 320),
)
STEM, HEAD = 32, 1280
#: The builder's input normalisation: ``(pixel − 127) / 128`` (``MEAN_RGB``, ``STDDEV_RGB``).
MEAN, STDDEV = 127.0, 128.0
#: Batch norm's epsilon in the builder (folded into the weights).
BN_EPSILON = 1e-3


def preprocess(images: jax.Array) -> jax.Array:
    """``uint8`` RGB pixels (or floats on the 0–255 scale) normalised as the weights were trained:
    ``(x − 127) / 128``."""
    return (jnp.asarray(images, jnp.float32) - MEAN) / STDDEV


def blocks() -> list[tuple[int, int, int, int, int]]:
    """Every MBConv block in order: ``(input filters, kernel, stride, expansion, output
    filters)``."""
    out, width = [], STEM
    for repeats, kernel, stride, expansion, filters in LITE0_STAGES:
        for i in range(repeats):
            out.append((width, kernel, stride if i == 0 else 1, expansion, filters))
            width = filters
    return out


class MBConv(nn.Module):
    """An inverted-residual block: a 1×1 expansion (when ``expansion`` > 1), a depthwise
    ``kernel`` convolution at ``stride``, each with ReLU6, then a linear 1×1 projection."""

    kernel: int
    stride: int
    expansion: int
    filters: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        inputs, width = x, x.shape[-1] * self.expansion
        if self.expansion != 1:
            x = nn.relu6(nn.Conv(width, (1, 1), name="expand")(x))
        x = nn.Conv(
            width,
            (self.kernel, self.kernel),
            (self.stride, self.stride),
            padding="SAME",
            feature_group_count=width,
            name="depthwise",
        )(x)
        x = nn.Conv(self.filters, (1, 1), name="project")(nn.relu6(x))
        if self.stride == 1 and inputs.shape[-1] == self.filters:
            x = x + inputs
        return x


class EfficientNetLite0(nn.Module):
    """EfficientNet-Lite0 on normalised frames ``[..., H, W, 3]`` (:func:`preprocess`): ImageNet
    logits ``[..., num_classes]`` from ``__call__``, the pooled 1,280 features from
    :meth:`features`. Any frame size works; 224 is the weights' (64 gives a 2×2 final map)."""

    num_classes: int = 1000

    def setup(self):
        self.stem = nn.Conv(STEM, (3, 3), (2, 2), padding="SAME")
        self.blocks = [MBConv(k, s, e, f) for _, k, s, e, f in blocks()]
        self.head = nn.Conv(HEAD, (1, 1))
        self.classifier = nn.Dense(self.num_classes)

    def features(self, x: jax.Array) -> jax.Array:
        lead = x.shape[:-3]
        x = nn.relu6(self.stem(x.reshape(-1, *x.shape[-3:])))
        for block in self.blocks:
            x = block(x)
        x = nn.relu6(self.head(x)).mean(axis=(1, 2))
        return x.reshape(*lead, HEAD)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.classifier(self.features(x))


def _folded(state: dict, conv: str, bn: str) -> dict:
    """A PyTorch convolution ``[out, in / groups, kh, kw]`` and its batch norm, folded into a Flax
    ``kernel [kh, kw, in / groups, out]`` and ``bias``: ``w γ / √(σ² + ε)`` and
    ``β − μ γ / √(σ² + ε)``."""
    scale = state[f"{bn}.weight"] / np.sqrt(state[f"{bn}.running_var"] + BN_EPSILON)
    kernel = state[f"{conv}.weight"] * scale[:, None, None, None]
    return {
        "kernel": np.transpose(kernel, (2, 3, 1, 0)).astype(np.float32),
        "bias": (state[f"{bn}.bias"] - state[f"{bn}.running_mean"] * scale).astype(np.float32),
    }


def variables_from_state_dict(state: dict[str, np.ndarray]) -> dict:
    """The :class:`EfficientNetLite0` variables of a state dict named as ``efficientnet_pytorch``
    (and ``efficientnet_lite_pytorch``) name it: ``_conv_stem``, ``_bn0``,
    ``_blocks.N._expand_conv`` / ``_bn0``, ``_depthwise_conv`` / ``_bn1``, ``_project_conv`` /
    ``_bn2``, ``_conv_head``, ``_bn1``, ``_fc``.

    Raises:
      ValueError: a tensor is missing or has another shape than EfficientNet-Lite0's.
    """
    try:
        params = _params(state)
    except KeyError as missing:
        raise ValueError(
            f"the state dict is not EfficientNet-Lite0's: it has no {missing}"
        ) from None
    expected = jax.eval_shape(
        EfficientNetLite0(params["classifier"]["bias"].shape[0]).init,
        jax.random.key(0),
        jnp.zeros((1, 32, 32, 3)),
    )["params"]
    if jax.tree.map(np.shape, params) != jax.tree.map(lambda s: s.shape, expected):
        raise ValueError("the state dict is not EfficientNet-Lite0's: its tensors' shapes differ")
    return {"params": params}


def _params(state: dict[str, np.ndarray]) -> dict:
    params = {
        "stem": _folded(state, "_conv_stem", "_bn0"),
        "head": _folded(state, "_conv_head", "_bn1"),
        "classifier": {
            "kernel": np.ascontiguousarray(state["_fc.weight"].T, np.float32),
            "bias": state["_fc.bias"].astype(np.float32),
        },
    }
    for i, (_, _, _, expansion, _) in enumerate(blocks()):
        block = f"_blocks.{i}"
        params[f"blocks_{i}"] = {
            **(
                {"expand": _folded(state, f"{block}._expand_conv", f"{block}._bn0")}
                if expansion != 1
                else {}
            ),
            "depthwise": _folded(state, f"{block}._depthwise_conv", f"{block}._bn1"),
            "project": _folded(state, f"{block}._project_conv", f"{block}._bn2"),
        }
    return params
