"""Block Maze: Wuji's small game (Zheng et al., ASE 2019, §V-A "Datasets").

A robot walks a grid maze to the gold coin; bugs at cells are "triggered if the robot has reached
the specific location of the map", and each test run redraws the bug and gold cells (§V-A), as
:meth:`BlockMaze.randomize` does on device. Rules: :class:`BlockMaze`.

* chosen: bugs uniform over the reachable free cells, because they "are randomly distributed"
  and Fig. 1 has some on the way to the gold (§V-A).
* chosen: 10 bugs on the default map, because our copy of the paper lost the number.
* chosen: a bug fires once per episode, because a re-triggered place gives no new information.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.envs.base import TestingEnv, check_shape
from jgtest.envs.grid import (
    NSEW,
    UNREACHABLE,
    check_cells,
    clip_pos,
    grid_distances,
    inside,
    parse_layout,
)
from jgtest.types import Telemetry

#: 16x16 default map: ``S`` start, ``G`` gold, ``b`` bugs (3 near the start,
#: 7 off the direct path), ``#`` blocks.
DEFAULT_LAYOUT = """
################
#S.b#.....#..b.#
#.#.#.###.#.##.#
#b..#...#...#..#
###.###.#####.##
#...#b..#.....b#
#.###.###.###..#
#.....#.b.#G#..#
#.###.#.###.#.##
#..b#...#......#
##.##.###.####.#
#...#.#b....#..#
#.#.#.#.###.#.##
#.#...#...#.#.b#
#b..#...#.#....#
################
"""


#: How :meth:`BlockMaze.randomize` draws bug cells.
PLACEMENTS = ("uniform", "near_far")


@struct.dataclass
class EnvState(environment.EnvState):
    pos: jax.Array  # int32[2] robot (row, col)
    bugs_seen: jax.Array  # bool[N] bugs already fired this episode
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    walls: jax.Array  # bool[H, W]
    start: jax.Array  # int32[2]
    gold: jax.Array  # int32[2]
    bug_pos: jax.Array  # int32[N, 2]
    gold_reward: float = 1.0
    step_cost: float = 0.01
    max_steps_in_episode: int = 200


class BlockMaze(TestingEnv):
    """Wuji's Block Maze: a robot walks a grid maze to the gold coin.

    Actions (``Discrete(4)``): north, south, east, west; "every movement leads the agent to move
    into a neighbor grid in the corresponding direction except that a collision on the block
    results in no movement" (§V-A). A traced out-of-range action is clipped into ``[0, 4)``.

    Each bug fires the first time per episode the robot stands on its cell. ``placement="near_far"``
    draws a harder mix than the paper's uniform one: bugs near the start and bugs far off the
    direct path.

    Observation: ``bool[H, W, 3]`` planes (blocks, robot, gold); bug cells are hidden. Reward:
    ``gold_reward`` on reaching the gold (which terminates), else ``-step_cost`` (also in
    ``telemetry.game_reward``).

    Args:
      layout: ASCII map (``#`` block, ``.`` floor, ``S`` start, ``G`` gold,
        ``b`` bug); its size sets the observation shape.
      num_bugs: number of injected bugs; default: the ``b`` cells of the
        layout. A different number draws the default placement with
        :meth:`randomize` (seed 0).
      placement: how :meth:`randomize` draws bugs: ``"uniform"`` over the
        reachable free cells (the paper's), or ``"near_far"``: ``num_near``
        near the start, the rest far off the direct path.
      near_radius: ``"near_far"``: a near bug is at most this many steps from the start.
      num_near: ``"near_far"``: how many drawn bugs are near the start (rest far).
      min_detour: ``"near_far"``: a far bug costs at least this many extra
        steps over the shortest start-to-gold path.

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("BlockMaze-v0")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> obs.shape, env.num_bugs
      ((16, 16, 3), 10)
    """

    env_id = "BlockMaze-v0"
    num_actions = 4

    def __init__(
        self,
        layout: str = DEFAULT_LAYOUT,
        num_bugs: int | None = None,
        placement: str = "uniform",
        near_radius: int = 4,
        num_near: int | None = None,
        min_detour: int = 4,
    ):
        super().__init__()
        parsed = parse_layout(layout)
        for mark in ("S", "G"):
            if mark not in parsed or len(parsed[mark]) != 1:
                raise ValueError(f"layout must have exactly one '{mark}' cell")
        layout_bugs = parsed.get("b", np.zeros((0, 2), np.int32))
        self._walls = parsed["walls"]
        self._start = parsed["S"][0]
        self._gold = parsed["G"][0]
        self._num_bugs = len(layout_bugs) if num_bugs is None else int(num_bugs)
        # the cells a bug may take: not a wall, the start or the gold
        free = int((~self._walls).sum()) - 2
        if not 1 <= self._num_bugs <= free:
            raise ValueError(
                f"num_bugs must be in [1, {free}] (the layout's free cells), got {self._num_bugs}"
            )
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
        self.placement = placement
        self.near_radius = int(near_radius)
        self.num_near = max(1, self._num_bugs // 4) if num_near is None else int(num_near)
        self.min_detour = int(min_detour)
        if not 0 <= self.num_near <= self._num_bugs:
            raise ValueError(f"num_near must be in [0, num_bugs], got {self.num_near}")
        base = EnvParams(
            walls=jnp.asarray(self._walls),
            start=jnp.asarray(self._start),
            gold=jnp.asarray(self._gold),
            bug_pos=jnp.asarray(
                layout_bugs if num_bugs is None else np.zeros((self._num_bugs, 2), np.int32)
            ),
        )
        if num_bugs is not None:
            base = jax.jit(self.randomize)(jax.random.key(0), base)
        self._default_params = base

    # ----- metadata ---------------------------------------------------------
    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ("logical",) * self._num_bugs

    @property
    def map_shape(self) -> tuple[int, int]:
        return tuple(self._walls.shape)

    def observation_space(self, params) -> spaces.Box:
        return spaces.Box(0, 1, (*self.map_shape, 3), jnp.bool_)

    # ----- dynamics ---------------------------------------------------------
    def reset_env(self, key, params: EnvParams):
        state = EnvState(
            pos=params.start.astype(jnp.int32),
            bugs_seen=jnp.zeros((self._num_bugs,), bool),
            time=0,
        )
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, 3)
        target = state.pos + jnp.asarray(NSEW)[action]
        rows, cols = self.map_shape
        blocked = ~inside(target, rows, cols) | params.walls[tuple(clip_pos(target, rows, cols))]
        pos = jnp.where(blocked, state.pos, target)

        at_bug = jnp.all(params.bug_pos == pos, axis=-1)
        fired = at_bug & ~state.bugs_seen
        at_gold = jnp.all(pos == params.gold)
        game_reward = jnp.where(at_gold, params.gold_reward, -params.step_cost)

        state = EnvState(pos=pos, bugs_seen=state.bugs_seen | at_bug, time=state.time + 1)
        telemetry = Telemetry.make(
            position=pos,
            cell=pos[0] * cols + pos[1],
            bugs_fired=fired,
            game_reward=game_reward,
        )
        return (
            self.get_obs(state, params),
            state,
            game_reward.astype(jnp.float32),
            at_gold,
            {"telemetry": telemetry},
        )

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        """``bool[H, W, 3]``: the blocks, the robot and the gold, one plane each.

        * chosen: booleans (as MinAtar's), because at 4096 games the observation is written to
          memory every step, and float32 planes made the game slower there than at 64 games;
          learners cast them (:func:`jgtest.nets.mlp.frames_to_float`).
        * chosen: each value is an elementwise function of its row, column and plane (no scatter,
          no stack), so that XLA can compute the planes inside what reads them.
        """
        params = self.default_params if params is None else params
        rows, cols = self.map_shape
        r = jnp.arange(rows)[:, None, None]
        c = jnp.arange(cols)[None, :, None]
        plane = jnp.arange(3)[None, None, :]
        robot = (r == state.pos[0]) & (c == state.pos[1])
        gold = (r == params.gold[0]) & (c == params.gold[1])
        return jnp.where(plane == 0, params.walls[..., None], jnp.where(plane == 1, robot, gold))

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return jnp.all(state.pos == params.gold)

    # ----- testing hooks ----------------------------------------------------
    def randomize(self, key, params: EnvParams) -> EnvParams:
        """Draws a new gold cell and bug cells (Wuji §V-A), jittable and vmappable.

        Gold: a reachable cell at least half the maze's largest distance from
        the start (our choice: the paper only says it is re-drawn; a far gold
        keeps winning a journey). Bugs, ``"uniform"``: distinct reachable free
        cells drawn uniformly; ``"near_far"``: ``num_near`` within
        ``near_radius`` steps of the start, the rest beyond it costing at
        least ``min_detour`` extra steps over the shortest start-to-gold path.
        Bug cells always differ from each other, the start and the gold.
        """
        key_gold, key_near, key_far = jax.random.split(key, 3)
        d_start = grid_distances(params.walls, params.start)
        reachable = d_start < UNREACHABLE
        far_enough = reachable & (d_start >= jnp.max(jnp.where(reachable, d_start, 0)) // 2)
        gold_flat = _pick(key_gold, far_enough.reshape(-1), 1)[0]
        cols = self.map_shape[1]
        gold = jnp.stack([gold_flat // cols, gold_flat % cols]).astype(jnp.int32)

        d_gold = grid_distances(params.walls, gold)
        detour = d_start + d_gold - d_start[gold[0], gold[1]]
        not_special = (d_start > 0) & (d_gold > 0)
        if self.placement == "uniform":
            ids = _pick(key_near, (reachable & not_special).reshape(-1), self._num_bugs)
            return params.replace(
                gold=gold, bug_pos=jnp.stack([ids // cols, ids % cols], axis=-1).astype(jnp.int32)
            )
        near = reachable & not_special & (d_start <= self.near_radius)
        far = reachable & not_special & (d_start > self.near_radius) & (detour >= self.min_detour)
        near_ids = _pick(key_near, near.reshape(-1), self.num_near)
        far_ids = _pick(key_far, far.reshape(-1), self._num_bugs - self.num_near)
        ids = jnp.concatenate([near_ids, far_ids])
        bug_pos = jnp.stack([ids // cols, ids % cols], axis=-1).astype(jnp.int32)
        return params.replace(gold=gold, bug_pos=bug_pos)

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        walls = self.check_map_shape("walls", params.walls)
        bugs = check_shape(self.name, "bug_pos", params.bug_pos, (self._num_bugs, 2))
        named = {"start": params.start, "gold": params.gold}
        named.update({f"bug {i}": b for i, b in enumerate(bugs)})
        check_cells(self.name, named, walls, wall_word="block")


def _pick(key: jax.Array, mask: jax.Array, k: int) -> jax.Array:
    """``k`` distinct indices drawn uniformly where ``mask`` is true (Gumbel top-k).

    If fewer than ``k`` cells qualify, the extra picks fall on masked-out cells
    (possibly blocks), which ``validate_params`` refuses; the default layout has
    room to spare for its 10 bugs.
    """
    scores = jax.random.gumbel(key, mask.shape) + jnp.where(mask, 0.0, -1e9)
    return jax.lax.top_k(scores, k)[1].astype(jnp.int32)
