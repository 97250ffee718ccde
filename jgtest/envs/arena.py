"""What Wuji's two combat scenarios share (:mod:`jgtest.envs.combat`,
:mod:`jgtest.envs.nsh_arena`): pure steps of a fight against a boss on a grid (countdowns, phases,
the boss's turn, a boss hit, the freeze of a stuck player) and :class:`ArenaGame`, their common
surface.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from jgtest.envs.base import TestingEnv
from jgtest.envs.grid import distance
from jgtest.types import Telemetry


def countdown(timer: jax.Array) -> jax.Array:
    """One step off a timer or cooldown, down to 0 (where it has run out)."""
    return jnp.maximum(timer - 1, 0)


def phase_bounds(fractions: jax.Array, boss_max_hp) -> jax.Array:
    """``int32``: the boss hp at each phase boundary, ``fractions`` (float32) of its maximum,
    floored."""
    return jnp.floor(fractions * boss_max_hp).astype(jnp.int32)


def regen_cap(bounds: jax.Array, boss_hp: jax.Array, boss_max_hp) -> jax.Array:
    """The most hp the boss regenerates to from ``boss_hp``: the lowest phase boundary at or above
    it, else its maximum (phases keep what the player has broken)."""
    return jnp.min(jnp.where(bounds >= boss_hp, bounds, boss_max_hp))


class BossTurn(NamedTuple):
    """What the boss did in its turn (:func:`boss_turn`)."""

    boss_pos: jax.Array  #: int32[2] where it stands after its move
    hit: jax.Array  #: bool: it hit the player
    atk: jax.Array  #: int32: its attack roll (counts only where ``hit``)


def boss_turn(
    keys, boss_pos: jax.Array, target: jax.Array, acts: jax.Array, reach, params
) -> BossTurn:
    """The boss's turn, where ``acts``: with probability ``params.boss_move_prob`` one step toward
    ``target`` (along the longer axis of the gap; rows on a tie) when farther than ``reach``
    (Manhattan), then, within ``reach``, a hit with probability ``params.boss_attack_prob``,
    rolling an attack uniformly in ``[boss_atk_min, boss_atk_max]``.

    Args:
      keys: ``(k_move, k_attack, k_roll)``.
      boss_pos: the boss's cell.
      target: the player's cell after the player's turn.
      acts: whether the boss acts this step.
      reach: the boss's attack reach.
      params: the game's ``EnvParams``.
    """
    k_move, k_attack, k_roll = keys
    gap = target - boss_pos
    along_rows = jnp.abs(gap[0]) >= jnp.abs(gap[1])
    step = jnp.where(along_rows, jnp.array([1, 0]), jnp.array([0, 1])) * jnp.sign(gap)
    far = distance(target, boss_pos) > reach
    moves = acts & far & (jax.random.uniform(k_move) < params.boss_move_prob)
    boss_pos = jnp.where(moves, boss_pos + step, boss_pos).astype(jnp.int32)
    in_range = distance(target, boss_pos) <= reach
    hit = acts & in_range & (jax.random.uniform(k_attack) < params.boss_attack_prob)
    atk = jax.random.randint(k_roll, (), params.boss_atk_min, params.boss_atk_max + 1)
    return BossTurn(boss_pos, hit, atk)


def boss_hurt(hit: jax.Array, atk: jax.Array, up: jax.Array, reduction: jax.Array) -> jax.Array:
    """The hp a boss hit takes: ``atk`` less the reduction of every buff ``up``, 0 without a hit.

    The fix ``hurt = max(hurt, 0)`` is missing (Wuji §V-D): enough reduction turns a low roll into
    a heal, the logical bug of both arenas.
    """
    return jnp.where(hit, atk - jnp.sum(jnp.where(up, reduction, 0)), 0)


def hold_if_stuck(frozen, held, new_state, fired: jax.Array, reward: jax.Array):
    """A stuck player's world no longer changes, only the clock runs (Wuji's stuck oracle, §III):
    where ``frozen``, the state is ``held``, no bug fires and the reward is 0.

    Returns:
      ``(state, fired, reward)``.
    """
    state = jax.tree.map(lambda a, b: jnp.where(frozen, a, b), held, new_state)
    reward = jnp.where(frozen, 0.0, reward).astype(jnp.float32)
    return state, jnp.where(frozen, False, fired), reward


def check_range(game: str, params, fields, minimum: int) -> None:
    """Refuses an integer field of ``params`` below ``minimum`` (1: "at least 1", 0:
    "non-negative")."""
    wanted = "at least 1" if minimum == 1 else "non-negative"
    for what in fields:
        value = int(np.asarray(getattr(params, what)))
        if value < minimum:
            raise ValueError(f"{game}: {what} must be {wanted}, got {value}")


def check_boss(game: str, params) -> None:
    """Refuses a boss attack range that is empty or negative and move or attack probabilities
    outside ``[0, 1]``."""
    atk_min, atk_max = int(np.asarray(params.boss_atk_min)), int(np.asarray(params.boss_atk_max))
    if atk_min < 0 or atk_max < atk_min:
        raise ValueError(
            f"{game}: boss attack range [{atk_min}, {atk_max}] must satisfy "
            "0 <= boss_atk_min <= boss_atk_max"
        )
    for what in ("boss_move_prob", "boss_attack_prob"):
        value = float(np.asarray(getattr(params, what)))
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{game}: {what} must be a probability in [0, 1], got {value}")


class ArenaGame(TestingEnv):
    """The common surface of the two arenas: reset, observation bounds, termination and Wuji's game
    state. A subclass sets the class attributes below and writes ``step_env`` and ``get_obs``."""

    #: The game's ``EnvState`` class.
    state_type: type
    #: Name of the player's position field in ``state_type``.
    position_field: str
    #: Number of buffs (``buff_timer``) and of cooldown slots (``cooldowns``).
    num_buffs: int
    num_cooldowns: int
    #: Observation length and the slot of the player's hp (up to 2: a logical bug over-heals).
    obs_size: int
    hp_slot: int
    #: Observation slots of Wuji's game state (:meth:`state_features`) and of the buff timers.
    state_slots: np.ndarray
    buff_slots: slice
    #: Further state fields that start at 0, as ``(name, dtype)`` pairs.
    start_zeros: tuple[tuple[str, type], ...] = ()

    def observation_space(self, params) -> spaces.Box:
        """``float32[obs_size]`` in ``[0, 1]``, the player's hp slot in ``[0, 2]``."""
        high = np.ones((self.obs_size,), np.float32)
        high[self.hp_slot] = 2.0
        size = (self.obs_size,)
        return spaces.Box(jnp.zeros(size, jnp.float32), jnp.asarray(high), size, jnp.float32)

    def reset_env(self, key, params):
        """Both fighters on their start cells at full hp, no buff up, every action ready."""
        state = self.state_type(
            **{self.position_field: jnp.asarray(params.player_start, jnp.int32)},
            boss_pos=jnp.asarray(params.boss_start, jnp.int32),
            player_hp=jnp.asarray(params.player_max_hp, jnp.int32),
            boss_hp=jnp.asarray(params.boss_max_hp, jnp.int32),
            facing=jnp.int32(0),
            buff_timer=jnp.zeros((self.num_buffs,), jnp.int32),
            cooldowns=jnp.zeros((self.num_cooldowns,), jnp.int32),
            frozen=jnp.bool_(False),
            crashed=jnp.bool_(False),
            bugs_seen=jnp.zeros((self.num_bugs,), bool),
            time=0,
            **{name: dtype(0) for name, dtype in self.start_zeros},
        )
        return self.get_obs(state, params), state

    def finish_step(self, state, held, new_state, fired, reward, ended, params):
        """``step_env``'s ``(obs, state, reward, terminated, info)`` from the step's ``new_state``,
        or ``held`` where the player was stuck already (:func:`hold_if_stuck`); ``ended``: the
        fight ended (a crash, a win or a loss)."""
        new_state, fired, reward = hold_if_stuck(state.frozen, held, new_state, fired, reward)
        terminated = ~state.frozen & ended
        telemetry = Telemetry.make(
            position=getattr(new_state, self.position_field)[-2:],
            cell=self.cell_id(new_state, params),
            bugs_fired=fired,
            game_reward=reward,
            crashed=new_state.crashed,
        )
        obs = self.get_obs(new_state, params)
        return obs, new_state, reward, terminated, {"telemetry": telemetry}

    def is_terminated(self, state, params) -> jax.Array:
        return state.crashed | (state.boss_hp <= 0) | (state.player_hp <= 0)

    def state_features(self, obs: jax.Array) -> jax.Array:
        """Wuji's game state (Def. 3): the observation's ``state_slots`` and which buffs are up.

        Our choice (the paper lists no features for its games): without the buff timers,
        cooldowns and facing, which tick or flip nearly every step.
        """
        buffs = (obs[..., self.buff_slots] > 0).astype(jnp.float32)
        return jnp.concatenate([obs[..., self.state_slots], buffs], axis=-1)

    def state_feature_bounds(self, params) -> tuple[np.ndarray, np.ndarray]:
        low, high = super().state_feature_bounds(params)
        slots, n = self.state_slots, self.num_buffs
        return (
            np.r_[low[slots], np.zeros(n, np.float32)],
            np.r_[high[slots], np.ones(n, np.float32)],
        )
