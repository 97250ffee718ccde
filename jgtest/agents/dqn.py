"""DQN trained end to end on device (Mnih et al., 2015), with a flashbax replay buffer (RELINE
§3.1.2: "10k steps saved"); truncated steps bootstrap.

* chosen: PureJaxRL's / CleanRL's CartPole-v1 defaults; :func:`lapan_config` gives RELINE's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flashbax as fbx
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jgtest.agents import base
from jgtest.agents.base import ActOutput, Agent
from jgtest.agents.common import (
    GameSettings,
    batched,
    check_positive,
    episode_means,
    finished_episodes,
    game_spaces,
    initializers,
    make_game,
    training_game,
    true_next_obs,
)
from jgtest.losses import dqn_loss
from jgtest.nets import QNetwork
from jgtest.nets.heads import NATURE_CNN, torso_settings


@struct.dataclass
class DQNHyperparams:
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_anneal_steps: float = 250_000.0
    tau: float = 1.0  # target update: 1 = hard copy


@dataclasses.dataclass(frozen=True)
class DQNConfig(GameSettings):
    """Static DQN settings: PureJaxRL's / CleanRL's CartPole-v1 ones by default
    (:func:`lapan_config` for RELINE's). Each iteration steps ``num_envs`` games once; once
    ``learning_starts`` steps are in, one gradient step every ``train_interval`` env steps; the
    target network is copied every ``target_update_interval`` env steps."""

    num_envs: int = 10
    total_timesteps: int = 500_000
    buffer_size: int = 10_000
    batch_size: int = 128
    learning_starts: int = 10_000
    train_interval: int = 10
    target_update_interval: int = 500
    double_q: bool = False
    # squared TD error, as CleanRL and PureJaxRL (Huber diverged here)
    huber_delta: float | None = None
    hidden_sizes: tuple[int, ...] = (120, 84)
    activation: str = "relu"
    torso: str = "mlp"
    # (filters, kernel, stride), torso "cnn"
    cnn_layers: tuple[tuple[int, int, int], ...] = NATURE_CNN
    cnn_dense: int = 512
    cnn_padding: str = "VALID"
    conv_impl: str = "lax"  # "im2col": the same convolutions, faster on CPU for small frames
    num_evals: int = 20
    eval_episodes: int = 16
    track_coverage: bool = True  # distinct cells per training episode (metric train_cells_mean)

    def __post_init__(self):
        check_positive(
            self,
            "num_envs",
            "total_timesteps",
            "buffer_size",
            "batch_size",
            "train_interval",
            "target_update_interval",
            "num_evals",
            "eval_episodes",
        )
        if self.learning_starts < 0:
            raise ValueError(f"DQNConfig.learning_starts must be >= 0, got {self.learning_starts}")
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"batch_size={self.batch_size} is larger than buffer_size={self.buffer_size}"
            )
        if self.iterations_per_eval < 1:
            raise ValueError(
                f"total_timesteps={self.total_timesteps} is too small for {self.num_evals} "
                "evaluations"
            )

    @property
    def iterations_per_eval(self) -> int:
        return self.total_timesteps // (self.num_envs * self.num_evals)

    @property
    def env_steps(self) -> int:
        return self.iterations_per_eval * self.num_evals * self.num_envs


@struct.dataclass
class DQNState:
    params: Any
    target_params: Any
    opt_state: Any
    buffer: Any
    env_state: Any
    obs: jax.Array
    key: jax.Array
    timesteps: jax.Array  # int32 env steps so far
    updates: jax.Array  # int32 gradient steps so far


def lapan_config(game: str, **overrides) -> DQNConfig:
    """RELINE's DQN settings (§3.1.2: "10k steps saved", updates "at each step"
    once 10k are in; the rest from the implementation it cites, Lapan 2018,
    "Deep Reinforcement Learning Hands-On", ch. 6: batch 32, target synced
    every 1,000 steps), one game per agent; ``overrides`` replace any field."""
    settings = dict(
        game=game,
        num_envs=1,
        buffer_size=10_000,
        batch_size=32,
        learning_starts=10_000,
        train_interval=1,
        target_update_interval=1_000,
    )
    return DQNConfig(**{**settings, **overrides})


#: Lapan's (2018, ch. 6) learning rate, discount and ε schedule (1 → 0.02 over 100k steps).
LAPAN_HYPERPARAMS = DQNHyperparams(
    learning_rate=1e-4,
    gamma=0.99,
    epsilon_start=1.0,
    epsilon_end=0.02,
    epsilon_anneal_steps=100_000.0,
)


def epsilon_at(timesteps, hparams: DQNHyperparams):
    """ε after ``timesteps`` env steps: linear from ``epsilon_start`` to ``epsilon_end`` over
    ``epsilon_anneal_steps``."""
    frac = jnp.clip(timesteps / hparams.epsilon_anneal_steps, 0.0, 1.0)
    return hparams.epsilon_start + frac * (hparams.epsilon_end - hparams.epsilon_start)


def make_agent(config: DQNConfig, game=None) -> Agent:
    """The DQN :class:`jgtest.agents.base.Agent` of ``config`` on its game, or on
    ``game = (env, env_params)`` (see :func:`make_game`).

    ``act`` is ε-greedy at the ε of ``timesteps`` (:func:`epsilon_at`); its ``value`` is the greedy
    action's Q-value. ``update(state, items, key, hparams)`` adds a batch of transitions (dict of
    ``obs, action, reward, terminated, next_obs``) to the replay buffer and, when due, takes a
    gradient step on a replayed batch drawn with ``key`` and syncs the target network: the same
    function steps the on-device iteration and the host loop (:mod:`jgtest.host_loop`).
    """
    game, env_params, max_steps = make_game(config, game)
    num_actions, obs_ndim = game_spaces(game, env_params)
    network = QNetwork(
        num_actions, obs_ndim=obs_ndim, cnn_padding=config.cnn_padding, **torso_settings(config)
    )
    reset, step = batched(training_game(game, config), env_params)
    buffer = fbx.make_item_buffer(
        max_length=config.buffer_size,
        min_length=config.batch_size,
        sample_batch_size=config.batch_size,
        add_batches=True,
    )

    def act(params, obs, key, hparams=None, timesteps=0):
        epsilon = epsilon_at(timesteps, base.or_default(hparams, DQNHyperparams()))
        q = network.apply(params, obs)
        k_explore, k_random = jax.random.split(key)
        random_action = jax.random.randint(k_random, q.shape[:-1], 0, num_actions)
        explore = jax.random.uniform(k_explore, q.shape[:-1]) < epsilon
        greedy = jnp.argmax(q, axis=-1)
        action = jnp.where(explore, random_action, greedy)
        prob = epsilon / num_actions + (1.0 - epsilon) * (action == greedy)
        return ActOutput(action, jnp.log(prob), jnp.max(q, axis=-1))

    def gradient_step(params, target_params, opt_state, batch, hparams: DQNHyperparams):
        tx = optax.adam(hparams.learning_rate)

        def loss_fn(p):
            q_tm1 = network.apply(p, batch["obs"])
            q_t_target = network.apply(target_params, batch["next_obs"])
            q_t_online = network.apply(p, batch["next_obs"]) if config.double_q else None
            discount = hparams.gamma * (1.0 - batch["terminated"].astype(jnp.float32))
            return dqn_loss(
                q_tm1,
                batch["action"],
                batch["reward"],
                discount,
                q_t_target,
                q_t_online,
                huber_delta=config.huber_delta,
            )

        (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, {"loss": loss, **metrics}

    def initial_state(k_net, k_run, obs, env_state, hparams):
        params = network.init(k_net, obs[0])
        item = {
            "obs": obs[0],
            "action": jnp.int32(0),
            "reward": jnp.float32(0),
            "terminated": jnp.bool_(False),
            "next_obs": obs[0],
        }
        return DQNState(
            params=params,
            target_params=params,
            opt_state=optax.adam(base.or_default(hparams, DQNHyperparams()).learning_rate).init(
                params
            ),
            buffer=buffer.init(item),
            env_state=env_state,
            obs=obs,
            key=k_run,
            timesteps=jnp.int32(0),
            updates=jnp.int32(0),
        )

    init, init_learner = initializers(initial_state, reset, config.num_envs)

    def update(state: DQNState, items: dict, key, hparams=None):
        hparams = base.or_default(hparams, DQNHyperparams())
        buf = buffer.add(state.buffer, items)
        timesteps = state.timesteps + items["action"].shape[0]

        # The batch is drawn outside the cond: a branch closing over the buffer makes XLA
        # copy the whole buffer every step (2x slower for a 10k buffer of 21x21x4 frames).
        batch = buffer.sample(buf, key).experience

        def learn_batch(args):
            params, opt_state, batch = args
            return gradient_step(params, state.target_params, opt_state, batch, hparams)

        def skip(args):
            params, opt_state, _ = args
            return (
                params,
                opt_state,
                {"loss": jnp.float32(0), "td_error": jnp.float32(0), "q_mean": jnp.float32(0)},
            )

        ready = (
            (timesteps >= config.learning_starts)
            & buffer.can_sample(buf)
            & (timesteps % config.train_interval < config.num_envs)
        )
        params, opt_state, metrics = jax.lax.cond(
            ready, learn_batch, skip, (state.params, state.opt_state, batch)
        )
        sync = (timesteps % config.target_update_interval) < config.num_envs
        target = optax.incremental_update(params, state.target_params, hparams.tau)
        target_params = jax.tree.map(
            lambda new, old: jnp.where(sync, new, old), target, state.target_params
        )
        state = state.replace(
            params=params,
            target_params=target_params,
            opt_state=opt_state,
            buffer=buf,
            timesteps=timesteps,
            updates=state.updates + ready,
        )
        return state, {**metrics, "learned": ready}

    def iteration(state: DQNState, hparams: DQNHyperparams):
        key, k_act, k_step, k_sample = jax.random.split(state.key, 4)
        action = act(state.params, state.obs, k_act, hparams, state.timesteps).action
        next_obs, env_state, reward, term, trunc, info = step(
            jax.random.split(k_step, config.num_envs), state.env_state, action
        )
        true_next = true_next_obs(next_obs, info, term | trunc)
        items = {
            "obs": state.obs,
            "action": action.astype(jnp.int32),
            "reward": reward,
            "terminated": term,
            "next_obs": true_next,
        }
        state, metrics = update(state, items, k_sample, hparams)
        return state.replace(env_state=env_state, obs=next_obs, key=key), (
            metrics,
            finished_episodes(info),
        )

    def summarize(state: DQNState, step_metrics):
        m, episodes = step_metrics
        loss = jnp.sum(m["loss"] * m["learned"]) / jnp.maximum(m["learned"].sum(), 1)
        return {"env_steps": state.timesteps, **episode_means(episodes), "loss": loss}

    return base.build(
        config,
        network,
        (game, env_params, max_steps),
        DQNHyperparams(),
        init=init,
        init_learner=init_learner,
        act=act,
        update=update,
        step=iteration,
        steps_per_period=config.iterations_per_eval,
        greedy=lambda params: lambda obs, k: jnp.argmax(network.apply(params, obs), axis=-1),
        summarize=summarize,
    )


def make_train(config: DQNConfig, game=None):
    """``train(key, hparams=None) -> (final DQNState, metrics per evaluation)``; jit- and
    vmap-able."""
    return make_agent(config, game).train
