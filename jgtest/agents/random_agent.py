"""The random agent: uniform actions, the papers' baseline (Wuji "random", RELINE "random agent"),
evaluated every period so its curve sits beside the learners'.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jgtest.agents import base
from jgtest.agents.base import ActOutput, Agent
from jgtest.agents.common import GameSettings, check_positive, evaluate, game_spaces, make_game


@struct.dataclass
class RandomHyperparams:
    """No hyperparameters; kept for a uniform ``train(key, hparams)`` signature."""


@dataclasses.dataclass(frozen=True)
class RandomConfig(GameSettings):
    num_evals: int = 1
    eval_episodes: int = 16

    def __post_init__(self):
        check_positive(self, "num_evals", "eval_episodes")


@struct.dataclass
class RandomState:
    key: jax.Array
    env_steps: jax.Array
    params: Any = None  # random play has no parameters (every agent's state has ``params``)


def make_agent(config: RandomConfig) -> Agent:
    """The random :class:`jgtest.agents.base.Agent`: ``act`` draws uniform actions (log-probability
    ``-log n``, value 0), ``update`` learns nothing, and each period's step plays ``eval_episodes``
    random episodes (``train_return_mean``) before the evaluation plays as many again."""
    env, env_params, max_steps = make_game(config)
    num_actions, obs_ndim = game_spaces(env, env_params)

    def act(params, obs, key, hparams=None, timesteps=0):
        action = jax.random.randint(key, obs.shape[: obs.ndim - obs_ndim], 0, num_actions)
        return ActOutput(
            action, jnp.full(action.shape, -jnp.log(num_actions)), jnp.zeros(action.shape)
        )

    def init_learner(key, obs=None, hparams=None):
        return RandomState(key=key, env_steps=jnp.int32(0))

    def init(key, hparams=None):
        return init_learner(key)

    def update(state, batch, key, hparams=None):
        return state, {}

    uniform = lambda params: lambda obs, key: act(params, obs, key).action

    def play(state: RandomState, hparams):
        key, k_play = jax.random.split(state.key)
        mean, _ = evaluate(env, env_params, uniform(None), k_play, config.eval_episodes, max_steps)
        return state.replace(
            key=key, env_steps=state.env_steps + config.eval_episodes * max_steps
        ), {"return": mean}

    def summarize(state: RandomState, step_metrics):
        return {"env_steps": state.env_steps, "train_return_mean": step_metrics["return"].mean()}

    return base.build(
        config,
        None,
        (env, env_params, max_steps),
        RandomHyperparams(),
        init=init,
        init_learner=init_learner,
        act=act,
        update=update,
        step=play,
        steps_per_period=1,
        greedy=uniform,
        summarize=summarize,
    )


def make_train(config: RandomConfig):
    """``train(key, hparams=None) -> (final RandomState, metrics per period)``; jit- and
    vmap-able."""
    return make_agent(config).train
