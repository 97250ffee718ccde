"""Reproducible on-device rollouts: every episode's randomness comes from its own key.

A campaign's episode ``e`` in parallel slot ``b`` uses
``episode_key(seed, b, e)``, from which the reset key, the step keys and the
agent's action keys are derived. Replaying a bug record therefore needs only
``(seed, env_index, episode)`` and the action trace: :func:`replay` re-runs the
same jitted step function with the same keys.

Campaigns step with :func:`jgtest.envs.base.step_with_reset`, the games'
auto-resetting ``step`` with the reset key given explicitly (``step`` derives
it from the step key, which would tie an episode's start to the previous
episode's last step).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from jgtest.types import PRNGKey


def episode_key(seed: int | jax.Array, env_index: int | jax.Array, episode: int | jax.Array) -> PRNGKey:
    """The key of episode ``episode`` in slot ``env_index`` of a run with ``seed``."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), env_index), episode)


def reset_key(ep_key: PRNGKey) -> PRNGKey:
    return jax.random.fold_in(ep_key, 0)


def step_key(ep_key: PRNGKey, t: int | jax.Array) -> PRNGKey:
    """Key of the game's step ``t`` (0-based) of the episode."""
    return jax.random.fold_in(jax.random.fold_in(ep_key, 1), t)


def action_key(ep_key: PRNGKey, t: int | jax.Array) -> PRNGKey:
    """Key for the agent's action at step ``t`` of the episode."""
    return jax.random.fold_in(jax.random.fold_in(ep_key, 2), t)


@partial(jax.jit, static_argnames=("env",))
def replay_trace(env, params, seed, env_index, episode, actions: jax.Array):
    """Re-runs an episode's action trace with the campaign's keys.

    Returns the stacked telemetry of every step and the terminated/truncated flags.
    """
    ep_key = episode_key(seed, env_index, episode)
    _, state = env.reset_env(reset_key(ep_key), params)

    def body(state, xs):
        t, action = xs
        _, state_next, _, terminated, info = env.step_env(step_key(ep_key, t), state, action, params)
        truncated = env.is_truncated(state_next, params)
        return state_next, (info["telemetry"], terminated, truncated)

    _, out = jax.lax.scan(body, state, (jnp.arange(actions.shape[0]), actions))
    return out
