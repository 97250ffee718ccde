"""A2C trained end to end on device (Mnih et al., 2016), the learner Wuji fine-tunes offspring with:
GAE with λ = 1 (A2C's n-step returns), one RMSprop step a rollout.

* chosen: Stable-Baselines3's CartPole-v1 defaults, the reference implementation's.
"""

from __future__ import annotations

import dataclasses

import jax
import optax
from flax import struct

from jgtest.agents.base import Agent
from jgtest.agents.on_policy import OnPolicyConfig, advantages, build, learning_rate
from jgtest.losses import a2c_loss
from jgtest.types import Transition


@struct.dataclass
class A2CHyperparams:
    """Stable-Baselines3's / rl-zoo's CartPole-v1 settings (with :class:`A2CConfig`'s 8 envs × 5
    steps): RMSprop α 0.99 ε 1e-5, no entropy bonus."""

    learning_rate: float = 7e-4
    gamma: float = 0.99
    gae_lambda: float = 1.0
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    rms_decay: float = 0.99
    rms_eps: float = 1e-5


@dataclasses.dataclass(frozen=True)
class A2CConfig(OnPolicyConfig):
    """Static A2C settings: 8 games stepped 5 times a rollout, no learning-rate annealing."""

    num_envs: int = 8
    num_steps: int = 5
    anneal_lr: bool = False


def _optimizer(hparams: A2CHyperparams):
    return optax.chain(
        optax.clip_by_global_norm(hparams.max_grad_norm),
        optax.scale_by_rms(decay=hparams.rms_decay, eps=hparams.rms_eps, eps_in_sqrt=False),
    )


def make_agent(config: A2CConfig) -> Agent:
    """Builds the A2C pieces for ``config`` (checked before anything compiles)."""

    def make_update(network):
        def update(learner, traj: Transition, hparams: A2CHyperparams, key):
            del key
            params, opt_state, update_idx = learner
            advantage, returns = advantages(network, params, traj, hparams)
            flat = jax.tree.map(
                lambda x: x.reshape(config.batch_size, *x.shape[2:]), (traj, advantage, returns)
            )

            def loss_fn(p):
                t, adv, ret = flat
                logits, value = network.apply(p, t.obs)
                return a2c_loss(
                    logits,
                    value,
                    t.action,
                    adv,
                    ret,
                    vf_coef=hparams.vf_coef,
                    ent_coef=hparams.ent_coef,
                )

            (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = _optimizer(hparams).update(grads, opt_state, params)
            lr = learning_rate(config, hparams, update_idx)
            params = optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates))
            return (params, opt_state), {"loss": loss, **metrics}

        return update

    return build(config, A2CHyperparams(), _optimizer, make_update)


def make_train(config: A2CConfig):
    """``train(key, hparams=None) -> (final state, metrics per evaluation)``; jit- and vmap-able."""
    return make_agent(config).train
