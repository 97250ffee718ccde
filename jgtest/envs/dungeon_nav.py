"""DungeonNav: reaching targets in random Dungeon levels, the Explicit Plans article's RL task.

The article's navigator, "trained to navigate towards a target location", observes "a grid
sensor as well as the direction towards its current target". Each episode: a random level and
a reachable target.

* chosen: most targets are legs of a plan suite, because the article trains its models "to
  follow suites of explicit plans".
* chosen: reward 1 on arrival, a step cost and shortest-path shaping, because the article gives
  no reward.
* chosen: still enemies, because they move in the plans the navigator then follows.

Rules: :class:`DungeonNav`; notes: ``docs/twins/dungeon.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.envs import dungeon as d
from jgtest.envs.base import TestingEnv
from jgtest.envs.grid import UNREACHABLE, grid_distances, walk_distances
from jgtest.signals import DEVICE_DEFAULT
from jgtest.types import Telemetry


@struct.dataclass
class EnvState(environment.EnvState):
    level: d.EnvState
    target: jax.Array  # int32[2]
    radius: jax.Array  # int32
    field: (
        jax.Array
    )  # int32[H, W] steps from each cell to the target (the level is still during an episode)
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    level: d.EnvParams
    arrival_reward: float = 1.0
    step_cost: float = 0.01
    shaping: float = 0.05
    plan_share: float = 0.75
    max_steps_in_episode: int = 60


def navigator_input(sensor: jax.Array, pos: jax.Array, target: jax.Array) -> jax.Array:
    """What a navigator reads: the grid ``sensor`` with the target's plane
    (:func:`jgtest.envs.dungeon.target_plane`), flattened, and the direction from ``pos`` to
    ``target`` (:func:`jgtest.envs.dungeon.target_direction`)."""
    plane = d.target_plane(pos, target, (sensor.shape[0] - 1) // 2)
    return jnp.concatenate(
        [sensor.reshape(-1).astype(jnp.float32), plane.reshape(-1), d.target_direction(pos, target)]
    )


def _pick(key: jax.Array, ok: jax.Array) -> jax.Array:
    """A uniform index where ``ok`` holds (Gumbel argmax)."""
    return jnp.argmax(jax.random.gumbel(key, ok.shape) + jnp.where(ok, 0.0, -1e9))


class DungeonNav(TestingEnv):
    """Target reaching in random Dungeon levels.

    A reset draws a random level, a random free cell for the player and a target reachable from
    it (:meth:`reset_env`). With probability ``plan_share`` (0.75) the target is a leg of the
    plan suite: the switch from the first room (door shut), the lava pit's edge from the first
    room (door open: the leg that must find the door), the shrine from beyond the pit, or an
    enemy; otherwise the door is open or shut at random and the target is any actor but an
    enemy, or a free cell. A standing actor is reached beside it (radius 1), anything else by
    standing on it.

    Actions: the four moves. Observation (:func:`navigator_input`): the grid sensor
    (``Dungeon``'s; radius 8, the whole 9×17 level from anywhere in it, so that the way round a
    wall or through the door is in view) with a plane marking the target in it, flattened, and
    the target's direction. Reward: ``arrival_reward`` (1) on arrival, which ends the episode,
    ``-step_cost`` (0.01) a step, and ``shaping`` (0.05) per step the walking distance to the
    target shrinks (potential-based, on the level's shortest paths computed once per episode).

    Args:
      sensor_radius: the grid sensor's reach (cells each side).
    """

    #: Signals (:mod:`jgtest.signals`): a navigation task without injected bugs, so no oracle
    #: inputs.
    signals = DEVICE_DEFAULT - {"oracle_inputs"}

    env_id = "DungeonNav-v0"
    num_actions = 4
    bugs_found_by_tests = True

    def __init__(self, sensor_radius: int = 8):
        super().__init__()
        self.dungeon = d.Dungeon(variant="random_layout", sensor_radius=sensor_radius)
        self._default_params = EnvParams(
            level=self.dungeon.default_params.replace(enemy_move_prob=0.0, enemy_hit_prob=0.0)
        )

    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ()

    @property
    def map_shape(self) -> tuple[int, int]:
        return self.dungeon.map_shape

    def observation_space(self, params) -> spaces.Box:
        side = 2 * self.dungeon.sensor_radius + 1
        return spaces.Box(-1.0, 1.0, (side * side * 8 + 3,), jnp.float32)

    def observe(self, level: d.EnvState, target: jax.Array) -> jax.Array:
        return navigator_input(self.dungeon.get_obs(level), level.pos, target)

    def reset_env(self, key, params: EnvParams):
        """A random level, the player on a random free cell and a reachable target."""
        keys = jax.random.split(key, 8)
        k_level, k_door, k_start, k_kind, k_cell, k_actor, k_plan, k_stage = keys
        _, level = self.dungeon.reset_env(k_level, params.level)
        h, w = self.map_shape
        grid = jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij")
        cells = jnp.stack(grid, -1).reshape(-1, 2)
        # A plan's leg (the suite's: to the switch, through the door to the pit, beyond it to the
        # shrine, to an enemy) or a random target.
        plan_leg = jax.random.bernoulli(k_plan, params.plan_share)
        stage = jax.random.randint(k_stage, (), 0, 4)
        door_open = jnp.where(plan_leg, stage > 0, jax.random.bernoulli(k_door))
        # The switch holds the door open (Dungeon's step).
        level = level.replace(door_open=door_open, switch_on=door_open)
        passable = ~self.dungeon.solid(level)
        region = self._leg_region(level, cells, stage)
        allowed = passable.reshape(-1) & jnp.where(plan_leg, region, True)
        start = cells[_pick(k_start, allowed)]
        level = level.replace(pos=start.astype(jnp.int32))
        target, radius = self._target(
            level, passable, cells, plan_leg, stage, k_kind, k_cell, k_actor
        )
        field = grid_distances(~passable.at[target[0], target[1]].set(True), target)
        field = jnp.minimum(field, 4 * (h + w))
        state = EnvState(level=level, target=target, radius=radius, field=field, time=0)
        return self.observe(level, target), state

    def _leg_region(self, level: d.EnvState, cells: jax.Array, stage: jax.Array) -> jax.Array:
        """``bool[H*W]``: where a plan leg's player starts: west of the door for the switch and
        the pit, east of the pit for the shrine, anywhere for an enemy."""
        first = lambda kind: level.actor_pos[int(self.dungeon.actor_ids(kind)[0])]
        west_of = lambda col: cells[:, 1] < col
        return jnp.select(
            [stage == 0, stage == 1, stage == 2],
            [west_of(first(d.DOOR)[1]), west_of(first(d.DOOR)[1]), ~west_of(first(d.LAVA)[1])],
            True,
        )

    def _target(self, level, passable, cells, plan_leg, stage, k_kind, k_cell, k_actor):
        """``(target, radius)``: an actor (the leg's type on a plan leg; any but an enemy
        otherwise, or a free cell) reachable from the player and not beside it."""
        types = jnp.asarray(self.dungeon.actor_types)
        # One search for both.
        blocked = ~passable.at[level.pos[0], level.pos[1]].set(True)
        from_player = grid_distances(blocked, level.pos)
        actor_walk = walk_distances(passable, level.pos, level.actor_pos, from_player)
        reach = (actor_walk < UNREACHABLE) & (jnp.abs(level.actor_pos - level.pos).sum(-1) > 1)
        leg_type = jnp.asarray([d.SWITCH, d.LAVA, d.SHRINE, d.ENEMY])[stage]
        actor_ok = reach & jnp.where(plan_leg, types == leg_type, types != d.ENEMY)
        cell_walk = walk_distances(passable, level.pos, cells, from_player)
        cell_ok = (
            passable.reshape(-1)
            & (cell_walk < UNREACHABLE)
            & (jnp.abs(cells - level.pos).sum(-1) > 1)
        )
        actor = _pick(k_actor, actor_ok)
        cell = cells[_pick(k_cell, cell_ok)]
        use_actor = (plan_leg | jax.random.bernoulli(k_kind)) & actor_ok.any()
        target = jnp.where(use_actor, level.actor_pos[actor], cell).astype(jnp.int32)
        radius = jnp.where(use_actor & (types[actor] != d.COLLECTABLE), 1, 0).astype(jnp.int32)
        return target, radius

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, 3)
        _, level, _, _, info = self.dungeon.step_env(key, state.level, action, params.level)
        before = state.field[state.level.pos[0], state.level.pos[1]]
        after = state.field[level.pos[0], level.pos[1]]
        arrived = jnp.abs(state.target - level.pos).sum() <= state.radius
        reward = jnp.where(arrived, params.arrival_reward, -params.step_cost) + params.shaping * (
            before - after
        )
        state = state.replace(level=level, time=state.time + 1)
        w = self.map_shape[1]
        telemetry = Telemetry.make(
            position=level.pos,
            cell=level.pos[0] * w + level.pos[1],
            bugs_fired=jnp.zeros((0,), bool),
            game_reward=reward,
        )
        return (
            self.observe(level, state.target),
            state,
            reward.astype(jnp.float32),
            arrived | level.dead,
            {"telemetry": telemetry},
        )

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return (jnp.abs(state.target - state.level.pos).sum() <= state.radius) | state.level.dead
