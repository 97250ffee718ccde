"""Reproducible on-device rollouts: every episode's randomness comes from its own key.

Episode ``e`` of slot ``b`` uses ``episode_key(seed, b, e)``, whence its reset, step and action
keys; :func:`replay_trace` replays a bug record from its seed, slot, episode and actions alone.

* chosen: the reset key is given explicitly (:func:`jgtest.envs.base.step_with_reset`), because
  one derived from the step key would tie an episode's start to the last one's end.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from jgtest.types import PRNGKey


def episode_key(
    seed: int | jax.Array, env_index: int | jax.Array, episode: int | jax.Array
) -> PRNGKey:
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


@partial(jax.jit, static_argnames=("env", "observations"))
def replay_trace(
    env, params, seed, env_index, episode, actions: jax.Array, observations: bool = False
):
    """Re-runs an episode's action trace with the campaign's keys.

    Returns the stacked telemetry of every step and the terminated/truncated flags (and, with
    ``observations``, the observation after each step: a game's frames, for a clip of the replay).
    """
    ep_key, state = replay_start(env, params, seed, env_index, episode)

    def body(state, xs):
        obs, state_next, telemetry, terminated, truncated = replay_step(
            env, params, ep_key, state, *xs
        )
        return state_next, (telemetry, terminated, truncated, *((obs,) if observations else ()))

    _, out = jax.lax.scan(body, state, (jnp.arange(actions.shape[0]), actions))
    return out


def replay_start(env, params, seed, env_index, episode):
    """``(ep_key, state)``: a recorded episode's key and its game's first state
    (:func:`replay_trace`)."""
    ep_key = episode_key(seed, env_index, episode)
    return ep_key, env.reset_env(reset_key(ep_key), params)[1]


def replay_step(env, params, ep_key, state, t, action):
    """Step ``t`` of a recorded episode with its key: ``(obs, state, telemetry, terminated,
    truncated)``, the bare game's step, for a replay that reduces its steps as they come
    (:func:`replay_trace` stacks them)."""
    obs, state, _, terminated, info = env.step_env(step_key(ep_key, t), state, action, params)
    return obs, state, info["telemetry"], terminated, env.is_truncated(state, params)


def play_episodes(
    env,
    params,
    policy,
    policy_params,
    seed,
    num_episodes: int,
    max_steps: int,
    info_keys=(),
    first_slot=0,
    with_transitions: bool = False,
):
    """Plays one episode in each of ``num_episodes`` slots with the campaign's keys.

    Slot ``b`` (``first_slot + 0 … first_slot + E − 1``) plays episode 0 of run ``seed``: reset with
    ``reset_key(episode_key(seed, b, 0))``, step ``t`` with ``step_key`` and the
    policy's action drawn with ``action_key``, so an episode's action trace
    replays exactly with :func:`replay_trace` (and ``jgtest replay``) on the
    bare game. ``env`` may wrap the game (frame stacking, a method's reward):
    the policy sees the wrapped observation, the game inside gets the same keys.
    Jit- and vmap-able (``seed`` may be traced, e.g. one per trained model).

    Args:
      env: the game or a wrapper of it (gymnax ``reset``/``step``).
      params: the game's params.
      policy: ``(policy_params, obs, key) -> action`` for one observation.
      policy_params: the policy's parameters.
      seed: run seed (int or traced int32).
      num_episodes: ``E``, parallel slots.
      max_steps: ``T``, the episode cap (steps after an episode's end are masked).
      info_keys: extra ``info`` entries to stack per step (e.g. ``"delta_path_done"``).
      first_slot: the first slot's index (may be traced): batches of one long
        evaluation played in turn (a learner updated between them) keep
        distinct, replayable slots.
      with_transitions: also return ``obs`` (the observation each action was
        chosen on) and ``rewards``, what a learner fits to.

    Returns:
      dict of ``[E, T]`` arrays: ``actions``, ``valid`` (the step is inside the
      episode), ``telemetry`` (a stacked :class:`jgtest.types.Telemetry`), the
      ``info_keys``, and with ``with_transitions`` ``obs`` and ``rewards``.
    """
    slots = first_slot + jnp.arange(num_episodes)
    ep_keys = jax.vmap(lambda b: episode_key(seed, b, 0))(slots)
    obs, state = jax.vmap(lambda k: env.reset(reset_key(k), params))(ep_keys)

    def one(ep_key, obs, state, running, t):
        action = policy(policy_params, obs, action_key(ep_key, t))
        next_obs, state, reward, terminated, truncated, info = env.step(
            step_key(ep_key, t), state, action, params
        )
        out = {
            "actions": action,
            "valid": running,
            "telemetry": info["telemetry"],
            **{k: info[k] for k in info_keys},
        }
        if with_transitions:
            out.update(obs=obs, rewards=reward)
        return next_obs, state, running & ~(terminated | truncated), out

    def body(carry, t):
        obs, state, running = carry
        obs, state, running, out = jax.vmap(one, in_axes=(0, 0, 0, 0, None))(
            ep_keys, obs, state, running, t
        )
        return (obs, state, running), out

    _, out = jax.lax.scan(body, (obs, state, jnp.ones(num_episodes, bool)), jnp.arange(max_steps))
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), out)


@struct.dataclass
class BugCatch:
    """The first firing of each injected bug in a stretch of keyed rollouts, with its trace.

    Attributes:
      found: ``bool[K]``, bug ``k`` fired.
      where: ``int32[K, 3]``: ``(slot, episode, step)`` of its first firing.
      actions: ``int32[K, T]``: that episode's actions up to and including
        ``step`` (the rest is padding), so a bug record replays with
        :func:`replay_trace`.
      tick: ``int32[K]``: the stretch's lockstep index (its ``clock`` argument to :meth:`add`)
        at the first firing: with the number of games stepped together, the env steps the
        stretch had played when it fired.
    """

    found: jax.Array
    where: jax.Array
    actions: jax.Array
    tick: jax.Array

    @classmethod
    def empty(cls, num_bugs: int, max_steps: int) -> BugCatch:
        zeros = jnp.zeros(num_bugs, jnp.int32)
        return cls(
            jnp.zeros(num_bugs, bool),
            jnp.zeros((num_bugs, 3), jnp.int32),
            jnp.zeros((num_bugs, max_steps), jnp.int32),
            zeros,
        )

    def add(
        self,
        fired: jax.Array,
        slot_traces: jax.Array,
        episode: jax.Array,
        t: jax.Array,
        clock: jax.Array | int = 0,
    ) -> BugCatch:
        """Records bugs fired this step: ``fired bool[B, K]`` over slots, each slot's episode
        actions so far ``slot_traces int32[B, T]`` (this step's included), ``episode``/``t
        int32[B]``, and the step's lockstep index in the stretch, ``clock``."""
        new = jnp.any(fired, axis=0) & ~self.found
        slot = jnp.argmax(fired, axis=0)  # first slot that fired each bug
        where = jnp.stack([slot, episode[slot], t[slot]], axis=-1).astype(jnp.int32)
        return BugCatch(
            found=self.found | new,
            where=jnp.where(new[:, None], where, self.where),
            actions=jnp.where(new[:, None], slot_traces[slot], self.actions),
            tick=jnp.where(new, jnp.asarray(clock, jnp.int32), self.tick),
        )
