"""RELINE's rewards (Tufano et al., 2022): pure functions and the wrapper that trains on them.

RELINE trains on ``r = r_g + r_p``: the game reward teaches the agent to play, the performance
reward rewards slow frames (§2). Toy games (§3.1.3): ``r = r_g + 50 · #(bugs firing for the
first time this episode)`` (:func:`bug_bonus_reward`). SuperTuxKart (§4.1.1-4.1.2), ``x`` the
centering, ``δ_y`` the step's progress::

    r_g = −1 if |x| > θ, else max(min(δ_y, M), 0)       (θ = 20, M = 10)
    r_p = 10 if |x| ≤ θ and rT > t, else 0
    finish line: + 10 · Σ_episode r_p    (the game-only agent: +1,000)

The replication package pays ``r_p`` only while the kart advances (``SuperTuxKart_RELINE.py``,
``_reward2``): not once it has stood still (advanced at most 0.25) for more than a step
(:func:`kart_stalled_steps`); :class:`RelineReward`'s ``slow_bonus="advancing"``, the default, where
``"any"`` follows the paper's text.

* chosen: ``t`` is the game's ``params.threshold_ms``, because one jitted training function then
  serves any calibrated ``t`` (:class:`RelineReward`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.wrappers.purerl import GymnaxWrapper

#: RELINE's reward settings (§3.1.3, §4.1.1-4.1.2).
BUG_BONUS = 50.0
SLOW_FRAME_REWARD = 10.0
FINISH_FACTOR = 10.0
#: The package's least progress a step that counts as advancing (``_reward2``: ``0.25 < Δ``).
PACKAGE_MIN_ADVANCE = 0.25
#: When the slow-frame bonus is paid: the package's rule or the paper's text (module docstring).
SLOW_BONUS_RULES = ("advancing", "any")


def bug_bonus_reward(
    game_reward: jax.Array, bugs_fired: jax.Array, bonus: float = BUG_BONUS
) -> jax.Array:
    """Toy games' RELINE reward: ``r_g + bonus · Σ_k bugs_fired[..., k]`` (§3.1.3).

    ``bugs_fired`` is true only the first time per episode a bug shows (the
    games' convention), so the bonus is paid at most once per bug and episode.
    """
    return (game_reward + bonus * jnp.sum(bugs_fired, axis=-1)).astype(jnp.float32)


def kart_progress_reward(centering: jax.Array, delta_path_done: jax.Array, theta, cap) -> jax.Array:
    """SuperTuxKart's ``r_g`` without the finish bonus (§4.1.1):
    ``−1`` if ``|centering| > θ`` else ``max(min(Δpath_done, M), 0)``."""
    progress = jnp.clip(delta_path_done, 0.0, cap)
    return jnp.where(jnp.abs(centering) > theta, -1.0, progress).astype(jnp.float32)


def kart_stalled_steps(
    stalled_tm1: jax.Array,
    centering: jax.Array,
    delta_path_done: jax.Array,
    theta,
    min_advance: float = PACKAGE_MIN_ADVANCE,
) -> jax.Array:
    """Steps in a row the kart has advanced at most ``min_advance`` on the road: 0 once it
    advances more or leaves the road (the package's ``count_delta_path_small``)."""
    reset = (delta_path_done > min_advance) | (jnp.abs(centering) > theta)
    return jnp.where(reset, 0, stalled_tm1 + 1).astype(jnp.int32)


def kart_performance_reward(
    centering: jax.Array,
    frame_time_ms: jax.Array,
    threshold_ms,
    theta,
    value: float = SLOW_FRAME_REWARD,
    stalled: jax.Array = 0,
) -> jax.Array:
    """RELINE's ``r_p`` (§4.1.2): ``value`` (10) when ``|centering| ≤ θ`` and the
    step's render time exceeds ``t``, else 0 (no reward far from the road); with the package's
    rule, only while ``stalled`` (:func:`kart_stalled_steps`) is at most 1."""
    slow = (jnp.abs(centering) <= theta) & (frame_time_ms > threshold_ms) & (stalled <= 1)
    return jnp.where(slow, value, 0.0).astype(jnp.float32)


def kart_finish_bonus(
    performance_return: jax.Array, lap_done: jax.Array, factor: float = FINISH_FACTOR
) -> jax.Array:
    """RELINE's finish-line bonus (§4.1.2): ``factor · Σ_{i ≤ steps} r_p,i`` (10 ×) when the lap is
    done."""
    return jnp.where(lap_done, factor * performance_return, 0.0).astype(jnp.float32)


@struct.dataclass
class RelineRewardState:
    env_state: Any
    performance_return: jax.Array  # Σ r_p so far in the episode (kart)
    stalled: (
        jax.Array
    )  # steps in a row the kart has not advanced (kart, :func:`kart_stalled_steps`)


class RelineReward(GymnaxWrapper):
    """A game whose reward is RELINE's (the module docstring's formulas).

    Args:
      env: a jgtest game (or a wrapper of one).
      kind: ``"bugs"`` for the toy games (the +50 bug bonus over
        ``telemetry.bugs_fired``) or ``"kart"`` (``r_g + r_p`` and the
        performance finish bonus; the game must report ``info["centering"]``
        and ``info["delta_path_done"]``, as KartTrack-v0 does, and have
        ``theta``, ``progress_cap`` and ``threshold_ms`` params).
      bug_bonus: the toy games' bonus per bug.
      slow_bonus: the kart's ``r_p`` paid only while it advances (``"advancing"``, the
        package's) or whenever a frame is slow (``"any"``, the paper's text).

    ``telemetry.game_reward`` is unchanged (the game's own reward), so
    evaluations of a RELINE agent report how well it plays.
    """

    def __init__(self, env, kind: str, bug_bonus: float = BUG_BONUS, slow_bonus: str = "advancing"):
        super().__init__(env)
        if kind not in ("bugs", "kart"):
            raise ValueError(f"RelineReward kind must be 'bugs' or 'kart', got {kind!r}")
        if slow_bonus not in SLOW_BONUS_RULES:
            raise ValueError(
                f"RelineReward slow_bonus must be one of {SLOW_BONUS_RULES}, got {slow_bonus!r}"
            )
        self.kind = kind
        self.bug_bonus = float(bug_bonus)
        self.slow_bonus = slow_bonus

    @partial(jax.jit, static_argnames=("self",))
    def reset(self, key, params=None):
        obs, env_state = self._env.reset(key, params)
        return obs, RelineRewardState(
            env_state=env_state, performance_return=jnp.float32(0.0), stalled=jnp.int32(0)
        )

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key, state: RelineRewardState, action, params=None):
        params = self._env.default_params if params is None else params
        obs, env_state, _, terminated, truncated, info = self._env.step(
            key, state.env_state, action, params
        )
        tel = info["telemetry"]
        if self.kind == "bugs":
            reward = bug_bonus_reward(tel.game_reward, tel.bugs_fired, self.bug_bonus)
            performance_return, stalled = state.performance_return, state.stalled
        else:
            r_g = kart_progress_reward(
                info["centering"], info["delta_path_done"], params.theta, params.progress_cap
            )
            stalled = kart_stalled_steps(
                state.stalled, info["centering"], info["delta_path_done"], params.theta
            )
            r_p = kart_performance_reward(
                info["centering"],
                tel.frame_time_ms,
                params.threshold_ms,
                params.theta,
                stalled=stalled if self.slow_bonus == "advancing" else 0,
            )
            performance_return = state.performance_return + r_p
            reward = r_g + r_p + kart_finish_bonus(performance_return, terminated)
        done = terminated | truncated
        new_state = RelineRewardState(
            env_state=env_state,
            performance_return=jnp.where(done, 0.0, performance_return),
            stalled=jnp.where(done, 0, stalled),
        )
        return obs, new_state, reward, terminated, truncated, info
