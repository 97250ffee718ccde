"""Agents trained end to end on device: each algorithm has a frozen ``*Config``, a traced
``*Hyperparams`` pytree, ``make_agent`` (:class:`jgtest.agents.base.Agent`) and ``make_train``::

    train = jax.jit(ppo.make_train(ppo.PPOConfig(total_timesteps=100_000)))
    state, metrics = jax.vmap(train)(jax.random.split(jax.random.key(0), 8))
"""

from __future__ import annotations

import dataclasses
import difflib

from jgtest.agents import a2c, cem, dqn, ppo, random_agent
from jgtest.agents.base import ActOutput, Agent

#: name -> (module, config class, hyperparameter class)
ALGORITHMS = {
    "ppo": (ppo, ppo.PPOConfig, ppo.PPOHyperparams),
    "a2c": (a2c, a2c.A2CConfig, a2c.A2CHyperparams),
    "dqn": (dqn, dqn.DQNConfig, dqn.DQNHyperparams),
    "cem": (cem, cem.CEMConfig, cem.CEMHyperparams),
    "random": (random_agent, random_agent.RandomConfig, random_agent.RandomHyperparams),
}


def algorithm(name: str):
    """``(module, Config, Hyperparams)`` of a registered algorithm.

    Raises:
      ValueError: unknown name, with the known ones.
    """
    if name not in ALGORITHMS:
        close = difflib.get_close_matches(name, ALGORITHMS, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise ValueError(
            f"unknown algorithm {name!r}.{hint} Known: {', '.join(sorted(ALGORITHMS))}"
        )
    return ALGORITHMS[name]


def make_config(name: str, **overrides):
    """The default config of ``name`` with ``overrides``; unknown fields are refused."""
    _, config_cls, _ = algorithm(name)
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(
            f"{name}: unknown config field(s) {', '.join(unknown)}; fields: "
            f"{', '.join(sorted(fields))}"
        )
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
    return config_cls(**overrides)


def make_hparams(name: str, **overrides):
    """The default hyperparameters of ``name`` (its traced ``*Hyperparams`` pytree) with
    ``overrides``; unknown names and non-numbers are refused."""
    _, _, hparams_cls = algorithm(name)
    fields = {f.name: f for f in dataclasses.fields(hparams_cls)}
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise ValueError(
            f"{name}: unknown hyperparameter(s) {', '.join(unknown)}; hyperparameters: "
            f"{', '.join(sorted(fields))}"
        )
    for key, value in overrides.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name}: hyperparameter {key} must be a number, got {value!r}")
    return hparams_cls(**{k: type(fields[k].default)(v) for k, v in overrides.items()})


__all__ = [
    "ALGORITHMS",
    "ActOutput",
    "Agent",
    "a2c",
    "algorithm",
    "cem",
    "dqn",
    "make_config",
    "make_hparams",
    "ppo",
    "random_agent",
]
