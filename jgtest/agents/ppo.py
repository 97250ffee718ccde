"""PPO trained end to end on device (Schulman et al., 2017), PureJaxRL-style: GAE, then epochs of
minibatch steps on the clipped surrogate, all inside ``lax.scan``.

* chosen: PureJaxRL's CartPole-v1 defaults, on ``CartPoleBugs-v0`` capped at 500 steps.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jgtest.agents.base import Agent
from jgtest.agents.common import check_positive
from jgtest.agents.on_policy import OnPolicyConfig, advantages, build, learning_rate
from jgtest.losses import ppo_loss
from jgtest.types import Transition


@struct.dataclass
class PPOHyperparams:
    """Traced PPO hyperparameters (vmappable for sweeps): PureJaxRL's CartPole-v1 settings (with
    :class:`PPOConfig`'s 4 envs × 128 steps, 4 epochs of 4 minibatches; lr annealed)."""

    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    # > 0: AdamW (decoupled, scaled by the learning rate), as PPGTA trains (§V-D)
    weight_decay: float = 0.0


@dataclasses.dataclass(frozen=True)
class PPOConfig(OnPolicyConfig):
    """Static PPO settings: the on-policy ones plus epochs and minibatches."""

    update_epochs: int = 4
    num_minibatches: int = 4

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "update_epochs", "num_minibatches")
        if self.batch_size % self.num_minibatches:
            raise ValueError(
                f"num_minibatches={self.num_minibatches} does not divide the batch of "
                f"num_envs*num_steps={self.batch_size}"
            )


def optimizer(hparams: PPOHyperparams):
    """Adam on clipped gradients (PureJaxRL's), AdamW with ``weight_decay``; the learning rate is
    applied by the update."""
    return optax.chain(
        optax.clip_by_global_norm(hparams.max_grad_norm),
        optax.scale_by_adam(eps=1e-5),
        optax.add_decayed_weights(hparams.weight_decay),
    )


def make_update(config: PPOConfig, network):
    """``update((params, opt_state, update_idx), traj [T, N], hparams, key, valid=None)
    -> ((params, opt_state), metrics)``: GAE, then ``update_epochs`` epochs of
    ``num_minibatches`` clipped-surrogate steps. ``network`` is any object with
    ``apply(params, obs) -> (logits, value)`` over leading batch dims (observations may be pytrees,
    e.g. a recurrent policy's inputs and stored states). ``valid`` (``bool[T, N]``): the steps the
    policy acted in; the others are skipped by GAE and masked out of the loss
    (:func:`jgtest.losses.gae`, :func:`jgtest.losses.ppo_loss`)."""
    minibatch = config.batch_size // config.num_minibatches

    def update(learner, traj: Transition, hparams: PPOHyperparams, key, valid=None):
        params, opt_state, update_idx = learner
        advantage, returns = advantages(network, params, traj, hparams, valid)
        lr = learning_rate(config, hparams, update_idx)
        tx = optimizer(hparams)
        flat = jax.tree.map(
            lambda x: x.reshape(config.batch_size, *x.shape[2:]), (traj, advantage, returns, valid)
        )

        def loss_fn(p, batch):
            t, adv, ret, mask = batch
            logits, value = network.apply(p, t.obs)
            return ppo_loss(
                logits,
                value,
                t.action,
                t.log_prob,
                t.value,
                adv,
                ret,
                clip_eps=hparams.clip_eps,
                vf_clip=hparams.clip_eps,
                vf_coef=hparams.vf_coef,
                ent_coef=hparams.ent_coef,
                mask_t=mask,
            )

        def minibatch_step(carry, batch):
            p, o = carry
            (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, batch)
            updates, o = tx.update(grads, o, p)
            p = optax.apply_updates(p, jax.tree.map(lambda u: -lr * u, updates))
            return (p, o), {"loss": loss, **metrics}

        def epoch(carry, k):
            perm = jax.random.permutation(k, config.batch_size)
            shuffled = jax.tree.map(
                lambda x: x[perm].reshape(config.num_minibatches, minibatch, *x.shape[1:]), flat
            )
            return jax.lax.scan(minibatch_step, carry, shuffled)

        keys = jax.random.split(key, config.update_epochs)
        (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), keys)
        return (params, opt_state), jax.tree.map(jnp.mean, metrics)

    return update


def make_agent(config: PPOConfig, game=None) -> Agent:
    """Builds the PPO pieces for ``config`` (checked before anything compiles), on its game or on
    ``game = (env, env_params)`` (:func:`jgtest.agents.common.make_game`: a bridged game's spaces,
    :func:`jgtest.host_loop.spec_game`, for a learner the host loop steps)."""
    return build(
        config, PPOHyperparams(), optimizer, lambda network: make_update(config, network), game
    )


def make_train(config: PPOConfig):
    """``train(key, hparams=None) -> (final state, metrics per evaluation)``; jit- and vmap-able.
    The same jitted pieces drive a host loop over a bridged game: ``agent.act(params, obs, key)``
    and ``agent.update(state, transitions, key, hparams)`` (:func:`make_agent`)."""
    return make_agent(config).train
