"""Probe policies that calibrate ``NSHArena-v0`` (:mod:`jgtest.envs.nsh_arena`), and the probe run.

A twin's free parameters are set with probes, never with the methods it compares: random, a
scripted fighter, the fighter with a share of random actions (the noisy play a game's human
testers and scripts produce), a fighter that retreats to a ledge to heal, and plain A2C (the
``drl`` strategy) as a learned probe. :func:`probe_run` plays a scripted probe for an env-step
budget, every game in parallel, and reports the step at which each bug was first found, the wins
and how far the fights went; :func:`reach_classes` sorts the bugs by which probes reach them.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.base import step_with_reset
from jgtest.envs.nsh_arena import (
    BUFF0,
    BUFF_TIME,
    BURST,
    COOLDOWN,
    COOLDOWN_ACTIONS,
    DROP,
    EXPOSE,
    HEAL,
    LEAP,
    STAGGER,
    STRIKE,
    SWEEP,
    THRUST,
    NSHArena,
)
from jgtest.rollout import action_key, episode_key, reset_key, step_key

#: The observation's cooldown slots (``NSHArena`` obs ``[12:25]``) of the actions the fighter uses.
_CD_THRUST, _CD_SWEEP, _CD_BURST, _CD_HEAL, _CD_BUFF, _CD_LEAP, _CD_DROP = (
    12,
    13,
    14,
    17,
    18,
    23,
    24,
)


def random_policy(params, obs, key):
    """A uniform action of the 19."""
    return jax.random.randint(key, (), 0, 19)


def make_fighter(env: NSHArena, explore: float = 0.0):
    """A scripted fighter: back to floor 0 (off the boss's cell first), close in, heal below 40% hp,
    then the combo (sweep a staggered boss, burst an exposed one, thrust), a reduction buff (Iron,
    Ward, Guard) when none will be up on the boss's next turn, else strike; a uniform random action
    with probability ``explore``. It reads the observation as the next step will find it: timers
    and cooldowns tick down before the action, so a reading of 1 has run out (a cooldown of 1 is
    ready)."""
    span = jnp.array([env.rows - 1, env.cols - 1], jnp.float32)
    lengths = jnp.asarray(COOLDOWN[list(COOLDOWN_ACTIONS)], jnp.float32)

    def policy(params, obs, key):
        floor, gap = obs[0], jnp.round((obs[3:5] - obs[1:3]) * span)
        dist = jnp.sum(jnp.abs(gap))
        ready = jnp.round(obs[12:25] * lengths) <= 1
        staggered, exposed = jnp.round(obs[25] * STAGGER) > 1, jnp.round(obs[26] * EXPOSE) > 1
        move = jnp.where(
            jnp.abs(gap[0]) >= jnp.abs(gap[1]),
            jnp.where(gap[0] < 0, 0, 1),
            jnp.where(gap[1] > 0, 2, 3),
        )
        reduction_up = jnp.any(jnp.round(obs[7:10] * BUFF_TIME) > 1)
        buff_ready = ready[_CD_BUFF - 12 : _CD_BUFF - 12 + 3]
        can_drop = ready[_CD_DROP - 12] & ~(
            (dist == 0) & (obs[29] > 0)
        )  # not onto the boss in phase 1
        action = jnp.select(
            [
                (floor > 0) & can_drop,
                floor > 0,
                (dist == 2) & exposed & ready[_CD_BURST - 12],
                dist > 1,
                (obs[5] < 0.4) & ready[_CD_HEAL - 12],
                staggered & ready[_CD_SWEEP - 12],
                exposed & ready[_CD_BURST - 12],
                ~staggered & ready[_CD_THRUST - 12],
                ~reduction_up & jnp.any(buff_ready),
            ],
            [
                DROP,
                jnp.where(dist == 0, 1, move),
                BURST,
                move,
                HEAL,
                SWEEP,
                BURST,
                THRUST,
                BUFF0 + jnp.argmax(buff_ready),
            ],
            STRIKE,
        )
        k_explore, k_action = jax.random.split(key)
        return jnp.where(
            jax.random.uniform(k_explore) < explore, jax.random.randint(k_action, (), 0, 19), action
        )

    return policy


def make_retreating_fighter(
    env: NSHArena, explore: float = 0.0, low: float = 0.3, high: float = 0.9
):
    """The scripted fighter (:func:`make_fighter`) that leaps to a ledge below ``low`` of its hp
    and stays there, healing as the heal's cooldown allows, until it is back above ``high``: the
    long fights with trips to the ledges a learner plays, which the plain fighter never does; a
    uniform random action with probability ``explore``."""
    fighter = make_fighter(env)

    def policy(params, obs, key):
        hp, on_ledge = obs[5], obs[0] > 0
        heal_ready = jnp.round(obs[_CD_HEAL] * COOLDOWN[HEAL]) <= 1
        leap_ready = jnp.round(obs[_CD_LEAP] * COOLDOWN[LEAP]) <= 1
        k_explore, k_action, k_fight = jax.random.split(key, 3)
        action = jnp.select(
            [
                on_ledge & (hp < high) & heal_ready,
                on_ledge & (hp < high),
                ~on_ledge & (hp < low) & leap_ready,
            ],
            [HEAL, 0, LEAP],  # 0: a step north on the ledge, waiting
            fighter(params, obs, k_fight),
        )
        return jnp.where(
            jax.random.uniform(k_explore) < explore, jax.random.randint(k_action, (), 0, 19), action
        )

    return policy


#: Where a bug sits among the probes: ``start`` (random reaches it), ``path`` (a scripted fighter
#: or plain A2C does), ``off`` (none does).
REACH = ("start", "path", "off")


def reach_classes(found: dict[str, list[bool]]) -> tuple[str, ...]:
    """Each bug's class from the probes that found it (``found[probe][bug]``): ``start`` if
    ``random`` found it, else ``path`` if any other probe did, else ``off``."""
    num_bugs = len(found["random"])
    others = [name for name in found if name != "random"]
    return tuple(
        "start"
        if found["random"][bug]
        else ("path" if any(found[name][bug] for name in others) else "off")
        for bug in range(num_bugs)
    )


@partial(jax.jit, static_argnames=("env", "policy", "num_envs", "num_steps"))
def _probe(env, params, policy, seed, num_envs: int, num_steps: int):
    slots = jnp.arange(num_envs)

    def start(b):
        return env.reset_env(reset_key(episode_key(seed, b, 0)), params)

    obs, state = jax.vmap(start)(slots)
    first = jnp.full((env.num_bugs,), -1, jnp.int32)
    zeros = jnp.zeros(num_envs, jnp.int32)
    tallies = jnp.zeros(4, jnp.int32)  # episodes ended, wins, reached phase 2, reached phase 3

    def body(carry, t):
        obs, state, episode, step, deepest, first, tallies = carry

        def one(b, o, s, e, k):
            ep = episode_key(seed, b, e)
            a = policy(None, o, action_key(ep, k))
            return step_with_reset(
                env, params, s, a, step_key(ep, k), reset_key(episode_key(seed, b, e + 1))
            )

        obs, state_next, reward, terminated, truncated, info = jax.vmap(one)(
            slots, obs, state, episode, step
        )
        fired = jnp.any(info["telemetry"].bugs_fired, axis=0)
        first = jnp.where(fired & (first < 0), (t + 1) * num_envs, first)
        final = info["final_observation"]
        deepest = jnp.maximum(
            deepest,
            jax.vmap(env.phase, in_axes=(0, None))(
                jnp.round(final[:, 6] * params.boss_max_hp), params
            ),
        )
        done = terminated | truncated
        won = terminated & (final[:, 6] <= 0) & ~info["telemetry"].crashed
        tallies = tallies + jnp.stack(
            [
                jnp.sum(done),
                jnp.sum(won),
                jnp.sum(done & (deepest >= 2)),
                jnp.sum(done & (deepest >= 3)),
            ]
        ).astype(jnp.int32)
        deepest = jnp.where(done, 1, deepest)
        return (
            obs,
            state_next,
            episode + done,
            jnp.where(done, 0, step + 1),
            deepest,
            first,
            tallies,
        ), None

    carry = (obs, state, zeros, zeros, jnp.ones(num_envs, jnp.int32), first, tallies)
    (_, _, _, _, _, first, tallies), _ = jax.lax.scan(body, carry, jnp.arange(num_steps))
    return first, tallies


def probe_run(
    env: NSHArena, params, policy, budget_steps: int, num_envs: int = 1000, seed: int = 0
) -> dict:
    """``policy`` on ``num_envs`` games in parallel for ``budget_steps`` env steps (rounded down to
    a multiple of ``num_envs``), keyed as a campaign's episodes.

    Returns ``first_found`` (the env step at which each bug first fired, ``-1``: never), the
    episodes, the win rate and the share of fights that reached phase 2 and phase 3 (of the
    episodes that ended within the budget).
    """
    first, tallies = _probe(env, params, policy, seed, num_envs, budget_steps // num_envs)
    first, (episodes, wins, phase2, phase3) = np.asarray(first), np.asarray(tallies).tolist()
    return {
        "first_found": first.tolist(),
        "episodes": episodes,
        "win_rate": wins / max(episodes, 1),
        "reached_phase2": phase2 / max(episodes, 1),
        "reached_phase3": phase3 / max(episodes, 1),
    }
