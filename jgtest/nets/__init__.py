"""Networks (SPEC §2), as flax linen modules: MLPs, the Nature-DQN CNN, the agents' heads, and
PPGTA's recurrent imitation policy, each over any leading (batch, time) dims::

    net = ActorCritic(num_actions=4, obs_ndim=3)
    logits, value = net.apply(net.init(key, obs[0, 0]), obs)  # obs [T, B, 10, 10, 3]
"""

from jgtest.nets.cnn import CONV_IMPLS, CNNEncoder, PatchConv, image_patches
from jgtest.nets.heads import (
    TORSOS,
    ActorCritic,
    BatchNormActorCritic,
    PolicyNetwork,
    QNetwork,
    floored_log_probs,
)
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
