"""Pieces every agent shares: config checks, the batched game, evaluation, the period loop.

Settings split in two (DESIGN.md): a frozen static ``Config`` and a traced ``Hyperparams`` pytree,
so ``jax.vmap`` sweeps seeds and hyperparameters together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.registration import make
from jgtest.envs.wrappers import EpisodeStatistics
from jgtest.types import Transition


def check_positive(config, *names: str) -> None:
    """Raises ``ValueError`` naming the first field of ``config`` that is not a positive integer."""
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(
                f"{type(config).__name__}.{name} must be a positive integer, got {value!r}"
            )


@dataclasses.dataclass(frozen=True)
class GameSettings:
    """The game an agent's config names (:func:`make_game`): its first fields."""

    game: str = "CartPoleBugs-v0"
    game_kwargs: tuple[tuple[str, Any], ...] = (("max_steps_in_episode", 500),)


def make_game(config, game=None):
    """The game of ``config`` (or ``game``), its params, and the concrete episode cap.

    Args:
      config: an agent config; ``config.game`` and ``config.game_kwargs`` name the game.
      game: ``(env, env_params)`` to use instead, e.g. a game in wrappers (frame
        stacking, a reward of a method); ``config.game`` is then only a label.

    Raises:
      ValueError: unknown game or option (from ``jgtest.make``).
    """
    env, params = make(config.game, **dict(config.game_kwargs)) if game is None else game
    return env, params, int(np.asarray(params.max_steps_in_episode))


def game_spaces(env, env_params) -> tuple[int, int]:
    """``(num_actions, obs_ndim)``: the game's discrete actions, and how many trailing dims form one
    observation."""
    return env.action_space(env_params).n, len(env.observation_space(env_params).shape)


def training_game(env, config) -> EpisodeStatistics:
    """``env`` with episode statistics for training rollouts; distinct cells
    are counted when ``config.track_coverage`` (evaluation plays the bare game)."""
    return EpisodeStatistics(env, cells=None if config.track_coverage else False)


def finished_episodes(info: dict) -> dict:
    """Sums over the episodes that ended at this step: count, return and, if tracked, distinct
    cells."""
    ended = info["returned_episode"]
    sums = {"episodes": ended.sum(), "return_sum": jnp.sum(info["returned_episode_return"] * ended)}
    if "episode_cells" in info:
        sums["cells_sum"] = jnp.sum(info["returned_episode_cells"] * ended)
    return sums


def episode_means(sums: dict) -> dict:
    """``train_return_mean`` (and ``train_cells_mean``) from stacked :func:`finished_episodes`
    sums."""
    episodes = jnp.maximum(sums["episodes"].sum(), 1)
    means = {"train_return_mean": sums["return_sum"].sum() / episodes}
    if "cells_sum" in sums:
        means["train_cells_mean"] = sums["cells_sum"].sum() / episodes
    return means


def batched(env, params):
    """``(reset(keys), step(keys, states, actions))`` vmapped over envs."""
    reset = jax.vmap(env.reset, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    return (lambda keys: reset(keys, params)), (
        lambda keys, states, actions: step(keys, states, actions, params)
    )


def evaluate(
    env,
    params,
    policy: Callable[[jax.Array, jax.Array], jax.Array],
    key,
    num_episodes: int,
    max_steps: int,
):
    """Mean and std of the game return of ``num_episodes`` episodes played by ``policy(obs, key)``.

    Each episode is played to its end (at most ``max_steps`` steps); the game
    return is the sum of ``telemetry.game_reward`` (bonuses excluded).
    """
    reset, step = batched(env, params)
    k_reset, k_run = jax.random.split(key)
    obs, state = reset(jax.random.split(k_reset, num_episodes))

    def body(carry, k):
        obs, state, ret, running = carry
        k_act, k_step = jax.random.split(k)
        action = policy(obs, k_act)
        obs, state, _, term, trunc, info = step(
            jax.random.split(k_step, num_episodes), state, action
        )
        ret = ret + running * info["telemetry"].game_reward
        running = running * (1.0 - (term | trunc))
        return (obs, state, ret, running), None

    init = (obs, state, jnp.zeros(num_episodes), jnp.ones(num_episodes))
    (_, _, returns, _), _ = jax.lax.scan(body, init, jax.random.split(k_run, max_steps))
    return jnp.mean(returns), jnp.std(returns)


def sample_action(key: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(action, log_prob)``: an action sampled from ``logits [..., A]`` and its
    log-probability."""
    action = jax.random.categorical(key, logits)
    log_probs = jax.nn.log_softmax(logits)
    return action, jnp.take_along_axis(log_probs, action[..., None], axis=-1)[..., 0]


def initializers(initial_state: Callable, reset: Callable, num_envs: int):
    """An agent's ``(init, init_learner)`` from its
    ``initial_state(k_net, k_run, obs, env_state, hparams)``: ``init`` resets ``num_envs`` games
    with :func:`batched`'s ``reset``, ``init_learner`` takes their first ``obs`` (no game state)."""

    def init(key, hparams=None):
        k_net, k_env, k_run = jax.random.split(key, 3)
        obs, env_state = reset(jax.random.split(k_env, num_envs))
        return initial_state(k_net, k_run, obs, env_state, hparams)

    def init_learner(key, obs, hparams=None):
        k_net, k_run = jax.random.split(key)
        return initial_state(k_net, k_run, obs, None, hparams)

    return init, init_learner


def run_periods(period: Callable, state, num_periods: int):
    """``lax.scan`` of ``period(state) -> (state, metrics)`` over ``num_periods``."""
    return jax.lax.scan(lambda s, _: period(s), state, None, length=num_periods)


def config_to_json(config) -> dict[str, Any]:
    """A JSON-ready dict of a frozen config (tuples as lists)."""
    out = dataclasses.asdict(config)
    out["game_kwargs"] = dict(config.game_kwargs)
    return out


def true_next_obs(next_obs: jax.Array, info: dict, done: jax.Array) -> jax.Array:
    """The next observation before any auto-reset: ``final_observation`` where ``done``."""
    mask = done.reshape(-1, *([1] * (next_obs.ndim - 1)))
    return jnp.where(mask, info["final_observation"], next_obs)


def collect_rollout(act, step, params, obs, env_state, key, num_steps: int, num_envs: int):
    """``num_steps`` steps of ``num_envs`` games with
    ``act(params, obs, key) -> (action, log_prob, value)`` (an agent's
    :class:`jgtest.agents.base.ActOutput`).

    Returns ``(obs, env_state, Transition [T, N], finished-episode sums [T])``
    (see :func:`finished_episodes`).
    """

    def body(carry, k):
        obs, env_state = carry
        k_act, k_step = jax.random.split(k)
        action, log_prob, value = act(params, obs, k_act)
        next_obs, env_state, reward, term, trunc, info = step(
            jax.random.split(k_step, num_envs), env_state, action
        )
        t = Transition(
            obs,
            action,
            reward,
            term,
            trunc,
            true_next_obs(next_obs, info, term | trunc),
            value,
            log_prob,
        )
        return (next_obs, env_state), (t, finished_episodes(info))

    (obs, env_state), (traj, episodes) = jax.lax.scan(
        body, (obs, env_state), jax.random.split(key, num_steps)
    )
    return obs, env_state, traj, episodes


def scan_then_evaluate(
    state, one_step, length: int, greedy, env, env_params, eval_episodes: int, max_steps: int
):
    """One evaluation period: ``one_step`` scanned ``length`` times, then the greedy policy
    evaluated.

    Args:
      state: agent state with a ``key`` field.
      one_step: ``state -> (state, metrics)``.
      greedy: ``params -> policy(obs, key)`` evaluated on ``state.params``.

    Returns:
      ``(state, stacked step metrics, eval_return_mean, eval_return_std)``.
    """
    state, metrics = jax.lax.scan(lambda s, _: one_step(s), state, None, length=length)
    key, k_eval = jax.random.split(state.key)
    mean, std = evaluate(env, env_params, greedy(state.params), k_eval, eval_episodes, max_steps)
    return state.replace(key=key), metrics, mean, std
