"""Multi-layer perceptron, activation lookup and observation flattening."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

#: Activations accepted by name in every jgtest network.
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": nn.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "silu": nn.silu,
    "swish": nn.swish,
    "leaky_relu": nn.leaky_relu,
    "sigmoid": nn.sigmoid,
}


def get_activation(name: str) -> Callable[[jax.Array], jax.Array]:
    """Returns the activation function called ``name``.

    Args:
      name: one of :data:`ACTIVATIONS` (``"tanh"``, ``"relu"``, ``"elu"``,
        ``"gelu"``, ``"silu"``, ``"swish"``, ``"leaky_relu"``, ``"sigmoid"``).

    Raises:
      ValueError: for an unknown name, listing the known ones.
    """
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown activation {name!r}; choose one of {sorted(ACTIVATIONS)}"
        ) from None


def frames_to_float(frames: jax.Array) -> jax.Array:
    """``uint8`` frames scaled to ``[0, 1]`` by 1/255 (as Lapan's ``ScaledFloatFrame``);
    other dtypes cast to float32 as they are."""
    if frames.dtype == jnp.uint8:
        return frames.astype(jnp.float32) * (1.0 / 255.0)
    return jnp.asarray(frames, jnp.float32)


def flatten_obs(obs: jax.Array, obs_ndim: int = 1) -> jax.Array:
    """Flattens the trailing ``obs_ndim`` dims (one observation) into one, as float32.

    ``[..., H, W, C]`` with ``obs_ndim=3`` becomes ``[..., H*W*C]``; leading
    (batch, time) dims are kept. ``uint8`` pixels are scaled to ``[0, 1]``
    (:func:`frames_to_float`: raw 0-255 inputs made the MLP's DQN on PacMaze
    unlearn, eating fewer dots than a random agent); other values are cast to
    ``float32`` unscaled.

    Args:
      obs: observations ``[..., *obs_shape]`` with ``len(obs_shape) == obs_ndim``.
      obs_ndim: how many trailing dims form one observation (>= 1).

    Returns:
      ``float32[..., prod(obs_shape)]``.

    Raises:
      ValueError: if ``obs_ndim < 1`` or ``obs`` has fewer than ``obs_ndim`` dims.
    """
    if obs_ndim < 1:
        raise ValueError(f"obs_ndim must be >= 1, got {obs_ndim}")
    if obs.ndim < obs_ndim:
        raise ValueError(
            f"observation of shape {obs.shape} has fewer than obs_ndim={obs_ndim} dims"
        )
    obs = frames_to_float(jnp.asarray(obs))
    if obs_ndim == 1:
        return obs
    lead = obs.shape[: obs.ndim - obs_ndim]
    return obs.reshape(*lead, math.prod(obs.shape[obs.ndim - obs_ndim :]))


def dense_init(orthogonal_init: bool, gain: float) -> dict:
    """Kernel/bias initializers: orthogonal with ``gain`` and zero bias, or flax's defaults."""
    if orthogonal_init:
        return {"kernel_init": nn.initializers.orthogonal(gain), "bias_init": nn.initializers.zeros}
    return {}


def torch_linear_init(fan_in: int) -> dict:
    """PyTorch's ``nn.Linear`` initialization: weights and biases uniform in ``±1/√fan_in``
    (``kaiming_uniform_(a=√5)`` and its bias rule), for ports of PyTorch code."""
    bound = 1.0 / math.sqrt(fan_in)
    return {
        "kernel_init": nn.initializers.variance_scaling(
            1.0 / 3.0, "fan_in", "uniform"
        ),  # √(3 · 1/3 / fan_in) = 1/√fan_in
        "bias_init": lambda key, shape, dtype=jnp.float32: jax.random.uniform(
            key, shape, dtype, -bound, bound
        ),
    }


class MLP(nn.Module):
    """A stack of dense layers over the last axis, optionally ending in a linear output.

    With ``orthogonal_init`` (the default) hidden layers get orthogonal weights
    with gain ``hidden_gain`` (``sqrt(2)``) and zero biases, and the output
    layer gain ``out_gain``, the initialization of PPO implementations
    (Engstrom et al., 2020, "Implementation Matters in Deep Policy Gradients";
    Huang et al., 2022, "The 37 Implementation Details of PPO"). Without it,
    flax's defaults (LeCun normal, zero bias); with ``torch_init``, PyTorch's
    (:func:`torch_linear_init`).

    Attributes:
      hidden_sizes: width of each hidden layer; each is followed by ``activation``.
      activation: name of the hidden activation (see :func:`get_activation`).
      out_size: if set, a final linear layer (no activation) of this width.
      orthogonal_init: orthogonal initialization as above.
      torch_init: PyTorch's ``nn.Linear`` initialization instead (overrides ``orthogonal_init``).
      hidden_gain: orthogonal gain of the hidden layers.
      out_gain: orthogonal gain of the output layer.

    Input ``[..., D]``, output ``[..., out_size]`` (or ``[..., hidden_sizes[-1]]``
    without ``out_size``; the input itself, as float32, if there is no layer).

    Example::

        mlp = MLP((64, 64), "tanh", out_size=2)
        params = mlp.init(jax.random.key(0), jnp.zeros(4))
        y = mlp.apply(params, jnp.ones((8, 4)))      # [8, 2]
    """

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    out_size: int | None = None
    orthogonal_init: bool = True
    torch_init: bool = False
    hidden_gain: float = math.sqrt(2.0)
    out_gain: float = 1.0

    def _init(self, fan_in: int, gain: float) -> dict:
        return (
            torch_linear_init(fan_in) if self.torch_init else dense_init(self.orthogonal_init, gain)
        )

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = get_activation(self.activation)
        x = jnp.asarray(x, jnp.float32)
        for i, size in enumerate(self.hidden_sizes):
            x = act(
                nn.Dense(size, name=f"hidden_{i}", **self._init(x.shape[-1], self.hidden_gain))(x)
            )
        if self.out_size is not None:
            x = nn.Dense(self.out_size, name="out", **self._init(x.shape[-1], self.out_gain))(x)
        return x
