"""Agent networks: actor-critic (PPO, A2C; Wuji's batch-normalised one), Q network, and the
cross-entropy method's policy, over an ``"mlp"`` torso (the trailing ``obs_ndim`` dims flattened)
or a ``"cnn"`` one (:class:`CNNEncoder` on ``[H, W, C]`` frames).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jgtest.nets.cnn import CNNEncoder
from jgtest.nets.mlp import MLP, dense_init, flatten_obs

#: ``(filters, kernel, stride)`` of the Nature-DQN convolutions (Mnih et al., 2015).
NATURE_CNN = ((32, 8, 4), (64, 4, 2), (64, 3, 1))

TORSOS = ("mlp", "cnn")


def _check_torso(owner: str, torso: str) -> None:
    if torso not in TORSOS:
        raise ValueError(f"{owner}: torso must be one of {TORSOS}, got {torso!r}")


def _frames(obs: jax.Array, obs_ndim: int) -> jax.Array:
    """Frames for the CNN torso: a channel axis is added to ``[..., H, W]`` observations."""
    return obs[..., None] if obs_ndim == 2 else obs


def _plain_mlp(net: nn.Module, obs: jax.Array, torch_init: bool = False) -> jax.Array:
    """The MLP torso of :class:`QNetwork` and :class:`PolicyNetwork`: ``obs`` (its ``obs_ndim``
    trailing dims flattened) through an :class:`MLP` named ``mlp`` of ``net``'s ``hidden_sizes`` and
    ``activation`` to ``[..., num_actions]``, flax's initialization (PyTorch's with
    ``torch_init``)."""
    x = flatten_obs(obs, net.obs_ndim)
    return MLP(
        net.hidden_sizes,
        net.activation,
        net.num_actions,
        orthogonal_init=False,
        torch_init=torch_init,
        name="mlp",
    )(x)


#: The fields of :class:`ActorCritic` and :class:`QNetwork` an agent's config names alike.
TORSO_SETTINGS = ("torso", "hidden_sizes", "activation", "cnn_layers", "cnn_dense", "conv_impl")


def torso_settings(config) -> dict:
    """The :data:`TORSO_SETTINGS` of an agent's ``config``, as keyword arguments of its network."""
    return {name: getattr(config, name) for name in TORSO_SETTINGS}


class TorsoNetwork(nn.Module):
    """The attributes :class:`ActorCritic` and :class:`QNetwork` share (documented there; each
    declares its ``conv_impl`` after its own fields), and their CNN torso, :meth:`cnn_features`."""

    num_actions: int
    torso: str = "mlp"
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    obs_ndim: int = 1
    cnn_layers: Sequence[tuple[int, int, int]] = NATURE_CNN
    cnn_dense: int = 512

    def cnn_features(self, obs: jax.Array, **encoder_options) -> jax.Array:
        """``obs`` through a :class:`CNNEncoder` named ``encoder`` with ``cnn_layers``,
        ``cnn_dense`` and ``encoder_options``."""
        channels, kernels, strides = zip(*self.cnn_layers)
        encoder = CNNEncoder(
            channels,
            kernels,
            strides,
            dense=self.cnn_dense,
            name="encoder",
            **encoder_options,
        )
        return encoder(_frames(obs, self.obs_ndim))


class ActorCritic(TorsoNetwork):
    """Separate-torso actor-critic of PPO / A2C.

    ``torso="mlp"``: two MLPs, one for the policy and one for the value, as in
    PureJaxRL's and CleanRL's PPO (Schulman et al., 2017, "Proximal Policy
    Optimization Algorithms"; Huang et al., 2022, "The 37 Implementation
    Details of PPO"): orthogonal weights, gain ``sqrt(2)`` in the hidden layers,
    ``0.01`` on the policy head (so the initial policy is near uniform) and
    ``1.0`` on the value head, zero biases.

    ``torso="cnn"``: one shared :class:`CNNEncoder` (Mnih et al., 2015, or the
    ``cnn_layers`` given) then a linear policy head (gain 0.01) and a linear
    value head (gain 1.0), as in the Atari PPO of the same implementations;
    ``hidden_sizes`` and ``activation`` are not used.

    Attributes:
      num_actions: number of discrete actions ``A``.
      torso: ``"mlp"`` or ``"cnn"``.
      hidden_sizes: hidden widths of each MLP torso.
      activation: hidden activation of the MLP torsos.
      obs_ndim: how many trailing dims form one observation (flattened by the
        MLP torso; 2 or 3 for the CNN torso).
      cnn_layers: ``(filters, kernel, stride)`` of the CNN torso's convolutions (Nature-DQN's).
      cnn_dense: width of the CNN torso's dense layer.
      conv_impl: ``"lax"`` or ``"im2col"`` (see :class:`CNNEncoder`).

    Returns from ``__call__(obs)``: ``(logits [..., A], value [...])`` where
    ``...`` are the leading dims of ``obs``.

    Example::

        net = ActorCritic(num_actions=2)
        params = net.init(jax.random.key(0), jnp.zeros(4))
        logits, value = net.apply(params, obs)        # obs [T, B, 4]
    """

    conv_impl: str = "lax"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        _check_torso("ActorCritic", self.torso)
        if self.torso == "mlp":
            x = flatten_obs(obs, self.obs_ndim)
            logits = MLP(
                self.hidden_sizes, self.activation, self.num_actions, out_gain=0.01, name="actor"
            )(x)
            value = MLP(self.hidden_sizes, self.activation, 1, out_gain=1.0, name="critic")(x)
        else:
            features = self.cnn_features(obs, conv_impl=self.conv_impl)
            logits = nn.Dense(self.num_actions, name="actor_head", **dense_init(True, 0.01))(
                features
            )
            value = nn.Dense(1, name="critic_head", **dense_init(True, 1.0))(features)
        return logits, jnp.squeeze(value, -1)


class QNetwork(TorsoNetwork):
    """Action-value network of DQN (Mnih et al., 2015).

    ``torso="mlp"``: an MLP with ReLU hidden layers of 120 and 84 units and a
    linear output of ``A`` values, the CartPole network of CleanRL's DQN (Huang
    et al., 2022, "CleanRL", JMLR 23). ``torso="cnn"``: a :class:`CNNEncoder`
    then a linear output; by default the Nature-DQN encoder (three convolutions,
    512 ReLU features), as in the paper; ``cnn_layers``, ``cnn_dense`` and
    ``cnn_padding`` size a smaller one for small frames. Both use flax's default
    initialization, as CleanRL's JAX DQN does.

    Attributes:
      num_actions: number of discrete actions ``A``.
      torso: ``"mlp"`` or ``"cnn"``.
      hidden_sizes: hidden widths of the MLP torso (unused by the CNN torso).
      activation: hidden activation of the MLP torso.
      obs_ndim: how many trailing dims form one observation.
      cnn_layers: ``(filters, kernel, stride)`` of each convolution of the CNN torso.
      cnn_dense: width of the CNN torso's ReLU dense layer.
      cnn_padding: ``"VALID"`` (Nature DQN) or ``"SAME"``.
      conv_impl: how the CNN torso convolves, ``"lax"`` or ``"im2col"`` (see
        :class:`CNNEncoder`).

    Returns from ``__call__(obs)``: ``q [..., A]``.

    Example::

        net = QNetwork(num_actions=2)
        params = net.init(jax.random.key(0), jnp.zeros(4))
        q = net.apply(params, obs)                    # obs [B, 4] -> q [B, 2]
    """

    hidden_sizes: Sequence[int] = (120, 84)
    activation: str = "relu"
    cnn_padding: str = "VALID"
    conv_impl: str = "lax"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        _check_torso("QNetwork", self.torso)
        if self.torso == "mlp":
            return _plain_mlp(self, obs)
        features = self.cnn_features(
            obs, padding=self.cnn_padding, orthogonal_init=False, conv_impl=self.conv_impl
        )
        return nn.Dense(self.num_actions, name="q_head")(features)


class PolicyNetwork(nn.Module):
    """Feed-forward policy of the cross-entropy method.

    The FNN that RELINE trains on CartPole with the cross-entropy method
    (Tufano et al., 2022, "Using Reinforcement Learning for Load Testing of
    Video Games", §3.1.2): game state in, action logits out. The paper leaves
    the size to the implementation it follows (Lapan, 2018, "Deep
    Reinforcement Learning Hands-On", ch. 4): one ReLU hidden layer of 128
    units and a linear output of ``A`` logits, the defaults here. flax's
    default initialization, or PyTorch's (``torch_init``), which RELINE's
    replication package ran with.

    Attributes:
      num_actions: number of discrete actions ``A``.
      hidden_sizes: hidden widths.
      activation: hidden activation.
      obs_ndim: how many trailing dims form one observation (flattened).
      torch_init: PyTorch's ``nn.Linear`` initialization (:func:`jgtest.nets.mlp.torch_linear_init`)
        instead of flax's (LeCun normal, zero bias).

    Returns from ``__call__(obs)``: ``logits [..., A]``.

    Example::

        net = PolicyNetwork(num_actions=2)
        params = net.init(jax.random.key(0), jnp.zeros(4))
        action = jax.random.categorical(key, net.apply(params, obs))
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (128,)
    activation: str = "relu"
    obs_ndim: int = 1
    torch_init: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return _plain_mlp(self, obs, self.torch_init)


__all__ = ["ActorCritic", "PolicyNetwork", "QNetwork", "TORSOS"]


class BatchNormActorCritic(nn.Module):
    """Wuji's A2C network (Zheng et al., 2019, §V-A4): "three fully connected linear layers",
    "normalized using batch normalization" with ReLU "between two consecutive layers".

    One shared torso of ``Dense → BatchNorm → ReLU`` per hidden size, then a
    linear policy head (``A`` logits) and a linear value head (the paper does
    not say whether actor and critic share layers; sharing halves the cost of
    a population). ``__call__(obs, train)``: with ``train=True`` batch
    statistics normalise and the running averages in the ``batch_stats``
    collection are updated (``mutable=["batch_stats"]``); with
    ``train=False`` (acting, evaluation) the running averages are used, so an
    action never depends on the other games of the batch. ``mask`` (``bool``, the
    observations' leading shape) leaves rows out of the batch statistics (a
    rollout's rows that are no steps).

    Example::

        net = BatchNormActorCritic(num_actions=4, hidden_sizes=(64, 64, 64))
        variables = net.init(jax.random.key(0), jnp.zeros((2, 20)))   # {"params", "batch_stats"}
        logits, value = net.apply(variables, obs)                       # acting
        (logits, value), updates = net.apply(variables, obs, train=True, mutable=["batch_stats"])
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (64, 64, 64)
    obs_ndim: int = 1
    momentum: float = 0.9

    @nn.compact
    def __call__(
        self, obs: jax.Array, train: bool = False, mask: jax.Array | None = None
    ) -> tuple[jax.Array, jax.Array]:
        x = flatten_obs(obs, self.obs_ndim)
        lead = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])  # batch norm over every leading dim at once
        rows = None if mask is None else mask.reshape(-1, 1)
        for i, size in enumerate(self.hidden_sizes):
            x = nn.Dense(size, name=f"hidden_{i}")(x)
            x = nn.relu(
                nn.BatchNorm(
                    use_running_average=not train, momentum=self.momentum, name=f"norm_{i}"
                )(x, mask=rows)
            )
        logits = nn.Dense(self.num_actions, name="actor", **dense_init(True, 0.01))(x)
        value = nn.Dense(1, name="critic", **dense_init(True, 1.0))(x)
        return logits.reshape(*lead, self.num_actions), value.reshape(lead)

    def layer_names(self) -> tuple[str, ...]:
        """The layers in the order they compute (``hidden_0, norm_0, …, actor, critic``), as
        PyTorch's ``parameters()`` lists a network's; pytrees list them by name instead."""
        torso = (
            name for i in range(len(self.hidden_sizes)) for name in (f"hidden_{i}", f"norm_{i}")
        )
        return (*torso, "actor", "critic")


def floored_log_probs(logits: jax.Array, min_prob) -> jax.Array:
    """``log π'`` with ``π' = (1 − A·ε)·softmax(logits) + ε``: every one of the ``A`` actions keeps
    probability at least ``ε = min_prob`` (Wuji §V-A4: "ensure at least [ε] possibility of each
    valid action being selected"). ``A·ε`` must be below 1. The result is a valid logits vector
    (``log_softmax`` leaves it unchanged), so samplers and losses take it as they take logits."""
    num_actions = logits.shape[-1]
    probs = (1.0 - num_actions * min_prob) * jax.nn.softmax(logits, axis=-1) + min_prob
    return jnp.log(probs)
