"""Networks (SPEC §2), as flax linen modules.

* :class:`MLP` — dense stack over the last axis, PPO-style orthogonal init;
* :class:`CNNEncoder` — the Nature-DQN frame encoder (Mnih et al., 2015);
* :class:`PatchConv` — a convolution as patches × kernel (``flax.linen.Conv``'s function, faster on CPU);
* :class:`ActorCritic` — separate actor and critic MLPs (or a shared CNN) for PPO / A2C;
* :class:`BatchNormActorCritic` — Wuji's A2C network (batch-normalised ReLU layers), with
  :func:`floored_log_probs` for its floor on every action's probability;
* :class:`QNetwork` — DQN's action values (CleanRL's 120-84 MLP, or the Nature CNN);
* :class:`PolicyNetwork` — the cross-entropy method's one-hidden-layer policy (RELINE);
* :class:`ImitationPolicy` — PPGTA's imitation policy: FE over the last K frames, local bi-GRU,
  global GRU, MLP head with layer norm and dropout.

Every module takes observations with any leading (batch, time) dims. The
MLP-torso modules flatten the trailing ``obs_ndim`` dims (one observation), so
``[..., H, W, 3]`` grids work with ``obs_ndim=3``.

Example::

    from jgtest.nets import ActorCritic

    net = ActorCritic(num_actions=4, obs_ndim=3)
    params = net.init(jax.random.key(0), jnp.zeros((10, 10, 3)))
    logits, value = net.apply(params, obs)    # obs [T, B, 10, 10, 3] -> [T, B, 4], [T, B]
"""

from jgtest.nets.cnn import CONV_IMPLS, CNNEncoder, PatchConv, image_patches
from jgtest.nets.heads import TORSOS, ActorCritic, BatchNormActorCritic, PolicyNetwork, QNetwork, floored_log_probs
from jgtest.nets.mlp import ACTIVATIONS, MLP, flatten_obs, frames_to_float, get_activation
from jgtest.nets.recurrent import ImitationPolicy

__all__ = [
    "ACTIVATIONS",
    "ImitationPolicy",
    "ActorCritic",
    "BatchNormActorCritic",
    "CNNEncoder",
    "CONV_IMPLS",
    "MLP",
    "PatchConv",
    "PolicyNetwork",
    "QNetwork",
    "TORSOS",
    "flatten_obs",
    "floored_log_probs",
    "frames_to_float",
    "get_activation",
    "image_patches",
]
