"""The loop PPO and A2C share: collect a rollout, learn from it, evaluate every period; an
algorithm supplies its optimizer and ``learn`` step, :func:`build` the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jgtest.agents import base
from jgtest.agents.base import ActOutput, Agent
from jgtest.agents.common import (
    GameSettings,
    batched,
    check_positive,
    collect_rollout,
    episode_means,
    game_spaces,
    initializers,
    make_game,
    sample_action,
    training_game,
)
from jgtest.losses import gae
from jgtest.nets import ActorCritic
from jgtest.nets.heads import NATURE_CNN, torso_settings
from jgtest.types import Transition


@dataclasses.dataclass(frozen=True)
class OnPolicyConfig(GameSettings):
    """Static settings every on-policy agent has: game, rollout shape, network, budget."""

    num_envs: int = 4
    num_steps: int = 128
    total_timesteps: int = 500_000
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    torso: str = "mlp"
    # (filters, kernel, stride), torso "cnn"
    cnn_layers: tuple[tuple[int, int, int], ...] = NATURE_CNN
    cnn_dense: int = 512
    conv_impl: str = "lax"  # "im2col": the same convolutions, faster on CPU for small frames
    anneal_lr: bool = True
    num_evals: int = 20
    eval_episodes: int = 16
    track_coverage: bool = True  # distinct cells per training episode (metric train_cells_mean)

    def __post_init__(self):
        check_positive(
            self, "num_envs", "num_steps", "total_timesteps", "num_evals", "eval_episodes"
        )
        if self.updates_per_eval < 1:
            raise ValueError(
                f"total_timesteps={self.total_timesteps} is too small for {self.num_evals} "
                "evaluations of "
                f"at least one update of {self.batch_size} steps"
            )

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def updates_per_eval(self) -> int:
        return self.total_timesteps // (self.batch_size * self.num_evals)

    @property
    def num_updates(self) -> int:
        return self.updates_per_eval * self.num_evals

    @property
    def env_steps(self) -> int:
        """Env steps actually played (the budget rounded down to whole updates)."""
        return self.num_updates * self.batch_size


@struct.dataclass
class OnPolicyState:
    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    key: jax.Array
    update: jax.Array  # int32, updates done


def advantages(network, params, traj: Transition, hparams, valid=None):
    """GAE over each env's stream of ``traj`` [T, N], bootstrapping from ``traj.next_obs``; over its
    ``valid`` steps alone when given (``bool[T, N]``, :func:`jgtest.losses.gae`'s ``valid_t``)."""
    _, v_tp1 = network.apply(params, traj.next_obs)
    stream_gae = jax.vmap(gae, in_axes=(1, 1, 1, 1, 1, None, None, 1), out_axes=1)
    return stream_gae(
        traj.reward,
        traj.value,
        v_tp1,
        traj.terminated,
        traj.truncated,
        hparams.gamma,
        hparams.gae_lambda,
        valid,
    )


def learning_rate(config, hparams, update_idx):
    """``hparams.learning_rate``, linearly annealed to 0 over the run if ``config.anneal_lr``."""
    frac = 1.0 - update_idx / config.num_updates if config.anneal_lr else 1.0
    return hparams.learning_rate * frac


def build(
    config, default_hparams, make_optimizer: Callable, make_update: Callable, game=None
) -> Agent:
    """Assembles an on-policy :class:`jgtest.agents.base.Agent`.

    Its ``update(state, traj, key, hparams, valid=None)`` learns from a rollout ``traj``
    (:class:`jgtest.types.Transition` ``[T, N]``) with the algorithm's step, from its ``valid``
    steps alone when given (``bool[T, N]``; an algorithm whose step takes ``valid``: PPO's).

    Args:
      config: frozen config with game, num_envs, num_steps, num_evals,
        eval_episodes, updates_per_eval, batch_size, network fields.
      default_hparams: the hyperparameters used when ``None`` is passed.
      make_optimizer: ``hparams -> optax.GradientTransformation``.
      make_update: ``network -> learn``, the algorithm's step
        ``learn((params, opt_state, update_idx), traj, hparams, key) -> ((params, opt_state),
        metrics)``.
      game: ``(env, env_params)`` instead of ``config.game``
        (:func:`jgtest.agents.common.make_game`).
    """
    game, env_params, max_steps = make_game(config, game)
    num_actions, obs_ndim = game_spaces(game, env_params)
    network = ActorCritic(num_actions, obs_ndim=obs_ndim, **torso_settings(config))
    reset, step = batched(training_game(game, config), env_params)
    learn = make_update(network)

    def act(params, obs, key, hparams=None, timesteps=0):
        logits, value = network.apply(params, obs)
        return ActOutput(*sample_action(key, logits), value)

    def initial_state(k_net, k_run, obs, env_state, hparams):
        params = network.init(k_net, obs[0])
        opt_state = make_optimizer(base.or_default(hparams, default_hparams)).init(params)
        return OnPolicyState(
            params=params,
            opt_state=opt_state,
            env_state=env_state,
            obs=obs,
            key=k_run,
            update=jnp.int32(0),
        )

    init, init_learner = initializers(initial_state, reset, config.num_envs)

    def update(state: OnPolicyState, traj: Transition, key, hparams=None, valid=None):
        learner = (state.params, state.opt_state, state.update)
        skipping = (
            {} if valid is None else {"valid": valid}
        )  # the steps the policy acted in (PPO's update takes them)
        (params, opt_state), metrics = learn(
            learner, traj, base.or_default(hparams, default_hparams), key, **skipping
        )
        return state.replace(params=params, opt_state=opt_state, update=state.update + 1), metrics

    def one_update(state: OnPolicyState, hparams):
        key, k_roll, k_upd = jax.random.split(state.key, 3)
        obs, env_state, traj, episodes = collect_rollout(
            act,
            step,
            state.params,
            state.obs,
            state.env_state,
            k_roll,
            config.num_steps,
            config.num_envs,
        )
        state, metrics = update(state, traj, k_upd, hparams)
        return state.replace(env_state=env_state, obs=obs, key=key), (
            metrics,
            jax.tree.map(jnp.sum, episodes),
        )

    def summarize(state: OnPolicyState, step_metrics):
        metrics, episodes = step_metrics
        return {
            "env_steps": state.update * config.batch_size,
            **episode_means(episodes),
            **jax.tree.map(jnp.mean, metrics),
        }

    return base.build(
        config,
        network,
        (game, env_params, max_steps),
        default_hparams,
        init=init,
        init_learner=init_learner,
        act=act,
        update=update,
        step=one_update,
        steps_per_period=config.updates_per_eval,
        greedy=lambda params: lambda obs, k: jnp.argmax(network.apply(params, obs)[0], axis=-1),
        summarize=summarize,
    )
