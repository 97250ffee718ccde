"""The random agent: uniform actions, the papers' baseline (Wuji "random", RELINE "random agent").

It learns nothing; ``train`` evaluates uniformly random play every period so
its curve sits beside the learners' in the same format.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
from flax import struct

from jgtest.agents.common import check_positive, evaluate, make_game, run_periods


@struct.dataclass
class RandomHyperparams:
    """No hyperparameters; kept for a uniform ``train(key, hparams)`` signature."""


@dataclasses.dataclass(frozen=True)
class RandomConfig:
    game: str = "CartPoleBugs-v0"
    game_kwargs: tuple[tuple[str, Any], ...] = (("max_steps_in_episode", 500),)
    num_evals: int = 1
    eval_episodes: int = 16

    def __post_init__(self):
        check_positive(self, "num_evals", "eval_episodes")


@struct.dataclass
class RandomState:
    key: jax.Array
    env_steps: jax.Array


class RandomAgent(NamedTuple):
    config: RandomConfig
    init: Any
    period: Any
    train: Any
    act: Any  # (obs, key) -> action


def make_agent(config: RandomConfig) -> RandomAgent:
    env, env_params, max_steps = make_game(config)
    space = env.action_space(env_params)

    def act(obs, key):
        return jax.random.randint(key, obs.shape[: obs.ndim - len(env.observation_space(env_params).shape)], 0, space.n)

    def init(key, hparams=None):
        return RandomState(key=key, env_steps=jax.numpy.int32(0))

    def period(state, hparams=None):
        key, k_eval = jax.random.split(state.key)
        mean, std = evaluate(env, env_params, act, k_eval, config.eval_episodes, max_steps)
        steps = state.env_steps + config.eval_episodes * max_steps
        metrics = {"env_steps": steps, "eval_return_mean": mean, "eval_return_std": std, "train_return_mean": mean}
        return RandomState(key=key, env_steps=steps), metrics

    def train(key, hparams=None):
        return run_periods(lambda s: period(s, hparams), init(key, hparams), config.num_evals)

    return RandomAgent(config, init, period, train, jax.jit(act))


def make_train(config: RandomConfig):
    return make_agent(config).train
