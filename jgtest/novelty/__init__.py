"""Novelty rewards for exploration (SPEC §2): Random Network Distillation with a vmapped ensemble."""

from jgtest.novelty.rnd import REWARDS, RND, RNDConfig, RNDNet, RNDState

__all__ = ["REWARDS", "RND", "RNDConfig", "RNDNet", "RNDState"]
