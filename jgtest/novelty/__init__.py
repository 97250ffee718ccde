"""Exploration rewards (SPEC §2): Random Network Distillation with a vmapped ensemble, and PPGTA's
preference reward with its adaptive mixing and Jensen–Shannon test judge.
"""

from jgtest.novelty.preference import (
    AlphaSchedule,
    action_distribution,
    adapt_alpha,
    combined_reward,
    js_divergence,
    preference_reward,
    trajectory_preference_reward,
)
from jgtest.novelty.rnd import REWARDS, RND, RNDConfig, RNDNet, RNDState

__all__ = [
    "REWARDS",
    "RND",
    "AlphaSchedule",
    "RNDConfig",
    "RNDNet",
    "RNDState",
    "action_distribution",
    "adapt_alpha",
    "combined_reward",
    "js_divergence",
    "preference_reward",
    "trajectory_preference_reward",
]
