"""Dungeon: the level of the Explicit Plans article (Eidos Sherbrooke, Fig. 9).

"A simplistic dungeon level with a locked door and an opening switch, a lava pit and an
activable end-of-level shrine", completed by a plan of three nodes: "toggle the switch, then
jump over the lava pit, and finally activate the shrine". Each step reports the game's events
(``info["events"]``), which plans validate.

* chosen: a 9×17 level of two rooms, two enemies and two collectables, because the article
  shows it only in Fig. 9 and its rules attack enemies and collect items.
* chosen: a ``wait`` action, because a plan node may wait.
* chosen: a grid sensor of radius 8, because the article's agent uses a grid sensor and 8
  shows the whole level.
* chosen: bugs as variants, because the article's Video 1 moves a switch out of reach.

Rules: :class:`Dungeon`; notes: ``docs/twins/dungeon.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.envs.base import TestingEnv, check_shape
from jgtest.envs.grid import NSEW, UNREACHABLE, check_cells, grid_distances, parse_layout
from jgtest.signals import DEVICE_DEFAULT
from jgtest.types import Telemetry

#: ``P`` start, ``s`` switch, ``D`` door, ``L`` the lava pit's actor cell (``~`` the rest of the
#: pit), ``S`` shrine, ``e`` enemy, ``c`` collectable.
DEFAULT_LAYOUT = """
#################
#.......#...~...#
#.P.....#...~...#
#.......#...~...#
#..s....D...L..S#
#.......#...~...#
#...c...#.e.~.c.#
#.......#...~..e#
#################
"""

ACTIONS = (
    "move_north",
    "move_south",
    "move_east",
    "move_west",
    "interact",
    "attack",
    "jump",
    "wait",
)
INTERACT, ATTACK, JUMP, WAIT = 4, 5, 6, 7
ACTOR_TYPES = ("switch", "door", "lava", "shrine", "enemy", "collectable")
SWITCH, DOOR, LAVA, SHRINE, ENEMY, COLLECTABLE = range(6)
_MARKS = {"s": SWITCH, "D": DOOR, "L": LAVA, "S": SHRINE, "e": ENEMY, "c": COLLECTABLE}
EVENTS = (
    "switch_toggled",
    "door_opened",
    "enemy_killed",
    "item_collected",
    "shrine_activated",
    "player_hurt",
    "player_died",
)
#: The actors of a random level (:func:`random_level`): the default level's.
RANDOM_CAST = (SWITCH, DOOR, LAVA, SHRINE, ENEMY, ENEMY, COLLECTABLE, COLLECTABLE)
VARIANTS = (
    "normal",
    "switch_out_of_reach",
    "door_stuck",
    "shrine_out_of_reach",
    "enemies_immortal",
    "random_enemies",
    "random_layout",
)
#: The variants that are ``EnvParams`` (an injected bug or a spawn rule), which combine with ``+``.
PARAM_VARIANTS = (
    "switch_out_of_reach",
    "door_stuck",
    "shrine_out_of_reach",
    "enemies_immortal",
    "random_enemies",
)
#: The player's reach: an actor higher than this cannot be interacted with.
REACH = 1
#: The grid sensor's planes, in order: wall, closed door, lava, switch, shrine, enemy, collectable.
SENSOR_PLANES = 7
#: Each sensed actor type's plane (a closed door; switches and shrines; living enemies and
#: collectables), and the lava's.
SENSED_ACTOR_BITS = {DOOR: 1, SWITCH: 3, SHRINE: 4, ENEMY: 5, COLLECTABLE: 6}
LAVA_BIT = 2


@struct.dataclass
class EnvState(environment.EnvState):
    walls: jax.Array  # bool[H, W] the level (drawn at reset with random layouts)
    lava: jax.Array  # bool[H, W]
    start: jax.Array  # int32[2]
    actor_pos: jax.Array  # int32[A, 2]
    alive: jax.Array  # bool[A] enemies and collectables still there (others: True)
    pos: jax.Array  # int32[2] the player (row, col)
    facing: jax.Array  # int32 direction index into NSEW
    health: jax.Array  # int32
    kills: jax.Array  # int32
    items: jax.Array  # int32
    switch_on: jax.Array  # bool
    door_open: jax.Array  # bool
    shrine_active: jax.Array  # bool
    dead: jax.Array  # bool
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    walls: jax.Array  # bool[H, W]
    lava: jax.Array  # bool[H, W]
    start: jax.Array  # int32[2]
    actor_pos: jax.Array  # int32[A, 2]
    switch_height: int = 1
    door_stuck: bool = False
    shrine_height: int = 1
    enemies_immortal: bool = False
    random_enemies: bool = False
    health: int = 10
    chase_radius: int = 2
    enemy_move_prob: float = 0.3
    enemy_hit_prob: float = 0.2
    max_steps_in_episode: int = 300


class Dungeon(TestingEnv):
    """The article's dungeon (Fig. 9).

    The default level (:data:`DEFAULT_LAYOUT`, 9×17 cells): the start room with the switch; the
    locked door into the second room, crossed from wall to wall by a one-cell lava pit; the
    shrine beyond it; two enemies and two collectables.

    Actions (8, :data:`ACTIONS`): move north, south, east, west (a move sets the facing; into a
    wall, a closed door, an actor or the lava's edge it only turns: the character stops at the
    ledge), ``interact`` (the adjacent switch or shrine, when its height is within reach),
    ``attack`` (kills an adjacent enemy), ``jump`` (two cells in the facing direction, over
    anything but a wall, a closed door or an actor; landing in lava kills) and ``wait`` (no
    input). The switch holds the door open. Enemies step toward the player when it is within
    ``chase_radius`` (else wander), each move with probability ``enemy_move_prob``, and hit an
    adjacent player with probability ``enemy_hit_prob``. The episode ends when the shrine is
    activated (game reward 1) or the player dies.

    Actors have ids (their row in the actor table: the layout's switches, doors, lava pits,
    shrines, enemies, collectables, in that order) and types (:data:`ACTOR_TYPES`); each step's
    ``info["events"]`` says which happened (:data:`EVENTS`) and ``info["event_actor"]`` the
    actor involved.

    Observation, for learned navigation: ``bool[2r+1, 2r+1, 7]``, the cells around the
    player (``sensor_radius`` r) as planes: wall, closed door, lava, switch, shrine, enemy,
    collectable (outside the map: wall). The direction to a target is the plan agent's to add
    (:func:`target_direction`), since the game does not know the plan.

    Variants (``variant=``; all but the last as ``EnvParams``, so they vmap):
    ``"switch_out_of_reach"`` (the article's Video 1: interacting with the switch does nothing),
    ``"door_stuck"`` (the switch toggles, the door stays shut), ``"shrine_out_of_reach"`` (the
    level cannot be completed), ``"enemies_immortal"`` (an attack kills no enemy),
    ``"random_enemies"`` (enemies spawn on random free cells beyond the door); and
    ``"random_layout"``, a constructor choice (the level's arrays live in the state): a new
    level from each reset's key (:func:`random_level`, for training suites). The bugs' variants
    combine with ``+`` (``"shrine_out_of_reach+enemies_immortal"``: a build with two bugs, one
    of which a fix removes).

    Args:
      layout: ASCII level (marks in :data:`DEFAULT_LAYOUT`); one switch, door, lava pit and
        shrine.
      variant: one of :data:`VARIANTS`, or bug variants joined by ``+``.
      sensor_radius: the grid sensor's reach (cells each side).

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("Dungeon-v0", variant="switch_out_of_reach")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> obs.shape                                        # the grid sensor, radius 8
      (17, 17, 7)
    """

    #: Signals (:mod:`jgtest.signals`): the plans' events and named actors; its bugs are found by
    #: plans' validations, so no oracle inputs.
    signals = (DEVICE_DEFAULT - {"oracle_inputs"}) | {"events", "actors"}

    env_id = "Dungeon-v0"
    num_actions = len(ACTIONS)
    bugs_found_by_tests = True

    def __init__(
        self, layout: str = DEFAULT_LAYOUT, variant: str = "normal", sensor_radius: int = 8
    ):
        super().__init__()
        parts = variant.split("+")
        if variant not in VARIANTS and not (
            len(parts) > 1 and all(part in PARAM_VARIANTS for part in parts)
        ):
            raise ValueError(
                f"variant must be one of {VARIANTS}, or several of "
                f"{', '.join(PARAM_VARIANTS)} joined by '+', got {variant!r}"
            )
        parsed = parse_layout(layout)
        for mark, name in (
            ("P", "start"),
            ("s", "switch"),
            ("D", "door"),
            ("L", "lava pit"),
            ("S", "shrine"),
        ):
            if len(parsed.get(mark, ())) != 1:
                raise ValueError(
                    f"a Dungeon layout has exactly one {name} ('{mark}'), "
                    f"got {len(parsed.get(mark, ()))}"
                )
        marks = [
            (kind, cell)
            for mark, kind in _MARKS.items()
            for cell in parsed.get(mark, np.zeros((0, 2), np.int32))
        ]
        marks.sort(key=lambda m: m[0])  # stable: the layout's reading order within a type
        self.actor_types = np.array([kind for kind, _ in marks], np.int32)
        self.layout, self.variant, self.sensor_radius = layout, variant, int(sensor_radius)
        lava = np.zeros_like(parsed["walls"])
        for cell in np.concatenate([parsed.get("~", np.zeros((0, 2), np.int32)), parsed["L"]]):
            lava[cell[0], cell[1]] = True
        self._default_params = EnvParams(
            walls=jnp.asarray(parsed["walls"]),
            lava=jnp.asarray(lava),
            start=jnp.asarray(parsed["P"][0]),
            actor_pos=jnp.asarray(np.array([cell for _, cell in marks], np.int32)),
            switch_height=3 if "switch_out_of_reach" in parts else 1,
            door_stuck="door_stuck" in parts,
            shrine_height=3 if "shrine_out_of_reach" in parts else 1,
            enemies_immortal="enemies_immortal" in parts,
            random_enemies="random_enemies" in parts,
        )
        if variant == "random_layout" and (
            self.map_shape != (9, 17) or sorted(self.actor_types.tolist()) != sorted(RANDOM_CAST)
        ):
            raise ValueError(
                "random_layout draws 9x17 levels with the default cast "
                f"({', '.join(ACTOR_TYPES[t] for t in RANDOM_CAST)})"
            )

    # ----- metadata ---------------------------------------------------------
    def _key(self) -> tuple:
        """What shapes the compiled game (the other variants are params)."""
        return self.layout, self.variant == "random_layout", self.sensor_radius

    def __eq__(
        self, other
    ) -> bool:  # equal games share compiled functions (jit's static argument, caches)
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._key()))

    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ()

    @property
    def map_shape(self) -> tuple[int, int]:
        return tuple(np.asarray(self._default_params.walls).shape)

    @property
    def action_names(self) -> tuple[str, ...]:
        return ACTIONS

    @property
    def num_actors(self) -> int:
        return len(self.actor_types)

    def actor_ids(self, kind: int) -> np.ndarray:
        """The ids of the actors of type ``kind``."""
        return np.flatnonzero(self.actor_types == kind)

    def observation_space(self, params) -> spaces.Box:
        side = 2 * self.sensor_radius + 1
        return spaces.Box(0, 1, (side, side, SENSOR_PLANES), jnp.bool_)

    # ----- dynamics ---------------------------------------------------------
    def reset_env(self, key, params: EnvParams):
        k_layout, k_enemies = jax.random.split(key)
        walls, lava, start, actor_pos = params.walls, params.lava, params.start, params.actor_pos
        if self.variant == "random_layout":
            walls, lava, start, actor_pos = random_level(k_layout, self.actor_types, self.map_shape)
        actor_pos = jnp.where(
            params.random_enemies,
            self._spawn_enemies(k_enemies, walls, lava, start, actor_pos),
            actor_pos,
        )
        state = EnvState(
            walls=walls,
            lava=lava,
            start=start,
            actor_pos=actor_pos,
            alive=jnp.ones(self.num_actors, bool),
            pos=start.astype(jnp.int32),
            facing=jnp.int32(2),
            health=jnp.int32(params.health),
            kills=jnp.int32(0),
            items=jnp.int32(0),
            switch_on=jnp.bool_(False),
            door_open=jnp.bool_(False),
            shrine_active=jnp.bool_(False),
            dead=jnp.bool_(False),
            time=0,
        )
        return self.get_obs(state, params), state

    def _spawn_enemies(self, key, walls, lava, start, actor_pos):
        """Enemies on distinct random free cells beyond the door (east of it)."""
        door = actor_pos[self.actor_ids(DOOR)[0]]
        cols = jnp.arange(walls.shape[1])[None, :]
        occupied = jnp.zeros_like(walls).at[actor_pos[:, 0], actor_pos[:, 1]].set(True)
        free = ~walls & ~lava & ~occupied & (cols > door[1])
        scores = jax.random.gumbel(key, free.shape) + jnp.where(free, 0.0, -1e9)
        enemies = self.actor_ids(ENEMY)
        cells = jax.lax.top_k(scores.reshape(-1), len(enemies))[1]
        drawn = jnp.stack([cells // walls.shape[1], cells % walls.shape[1]], axis=-1).astype(
            jnp.int32
        )
        return actor_pos.at[enemies].set(drawn)

    def solid(self, state: EnvState) -> jax.Array:
        """``bool[H, W]``: cells a move cannot enter (walls, the closed door, standing actors,
        lava's edge)."""
        types = jnp.asarray(self.actor_types)
        standing = (
            state.alive
            & (types != COLLECTABLE)
            & (types != LAVA)
            & ((types != DOOR) | ~state.door_open)
        )
        actors = (
            jnp.zeros_like(state.walls)
            .at[state.actor_pos[:, 0], state.actor_pos[:, 1]]
            .max(standing)
        )
        return state.walls | state.lava | actors

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        """One step: :func:`player_move`, :func:`interact`, :func:`attack`, collecting, then the
        enemies' moves and hits."""
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, self.num_actions - 1)
        k_enemy, k_hit = jax.random.split(key)
        types = jnp.asarray(self.actor_types)
        w = self.map_shape[1]
        facing, pos = player_move(state, action, self.solid(state))
        died_in_lava = state.lava[pos[0], pos[1]]
        adjacent = jnp.abs(state.actor_pos - state.pos[None]).sum(-1) == 1
        toggled, switch_on, door_open, activated = interact(state, action, types, adjacent, params)
        killed_id, killed, alive = attack(state, action, types, adjacent, params)
        # Collect: walking onto a collectable.
        on_item = (state.actor_pos == pos[None]).all(-1) & alive & (types == COLLECTABLE)
        alive = alive & ~on_item
        moved = state.replace(alive=alive, pos=pos, door_open=door_open)
        actor_pos, hurt = self._enemies(k_enemy, k_hit, moved, params)
        health = state.health - hurt.astype(jnp.int32)
        dead = died_in_lava | (health <= 0)
        events = {
            "switch_toggled": toggled,
            "door_opened": door_open & ~state.door_open,
            "enemy_killed": killed,
            "item_collected": on_item.any(),
            "shrine_activated": activated,
            "player_hurt": hurt,
            "player_died": dead & ~state.dead,
        }
        state = state.replace(
            actor_pos=actor_pos,
            alive=alive,
            pos=pos,
            facing=facing.astype(jnp.int32),
            health=health,
            kills=state.kills + killed.astype(jnp.int32),
            items=state.items + on_item.any().astype(jnp.int32),
            switch_on=switch_on,
            door_open=door_open,
            shrine_active=state.shrine_active | activated,
            dead=dead,
            time=state.time + 1,
        )
        reward = activated.astype(jnp.float32)
        telemetry = Telemetry.make(
            position=pos,
            cell=pos[0] * w + pos[1],
            bugs_fired=jnp.zeros((0,), bool),
            game_reward=reward,
        )
        event_actor = self._event_actor(events, killed_id, on_item)
        info = {"telemetry": telemetry, "events": events, "event_actor": event_actor}
        return self.get_obs(state, params), state, reward, self.is_terminated(state, params), info

    def _event_actor(self, events: dict, killed_id: jax.Array, on_item: jax.Array) -> jax.Array:
        """The actor of the step's event (−1 when none)."""
        return jnp.select(
            [
                events["switch_toggled"],
                events["enemy_killed"],
                events["item_collected"],
                events["shrine_activated"],
            ],
            [
                jnp.asarray(self.actor_ids(SWITCH)[0]),
                killed_id,
                jnp.argmax(on_item),
                jnp.asarray(self.actor_ids(SHRINE)[0]),
            ],
            -1,
        ).astype(jnp.int32)

    def _enemies(self, k_move, k_hit, state: EnvState, params: EnvParams):
        """Enemies move (toward a player within ``chase_radius``, else at random) one after
        another, then hit."""
        types = jnp.asarray(self.actor_types)
        enemies = self.actor_ids(ENEMY)
        keys = jax.random.split(k_move, max(len(enemies), 1))

        def move(actor_pos, ik):
            i, k = ik
            k_go, k_dir = jax.random.split(k)
            me = actor_pos[i]
            gap = state.pos - me
            chase = jnp.abs(gap).sum() <= params.chase_radius
            toward = jnp.where(
                jnp.abs(gap[0]) >= jnp.abs(gap[1]),
                jnp.where(gap[0] < 0, 0, 1),
                jnp.where(gap[1] > 0, 2, 3),
            )
            direction = jnp.where(chase, toward, jax.random.randint(k_dir, (), 0, 4))
            to = me + jnp.asarray(NSEW)[direction]
            blocked = (
                self.solid(state.replace(actor_pos=actor_pos))[to[0], to[1]]
                | (to == state.pos).all()
            )
            go = state.alive[i] & (jax.random.uniform(k_go) < params.enemy_move_prob) & ~blocked
            return actor_pos.at[i].set(jnp.where(go, to, me)), None

        actor_pos, _ = jax.lax.scan(
            move, state.actor_pos, (jnp.asarray(enemies), keys[: len(enemies)])
        )
        near = (jnp.abs(actor_pos - state.pos[None]).sum(-1) == 1) & state.alive & (types == ENEMY)
        hits = near & (jax.random.uniform(k_hit, near.shape) < params.enemy_hit_prob)
        return actor_pos, hits.any()

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        """The grid sensor (module docstring), cut from one byte a cell whose bits are the planes.

        * chosen: the planes packed as bits, the actors' planes by compares and the window by
          :func:`_window`, because batched scatters and gathers are slow on CPU (the sensor took
          four fifths of a step of 4,096 games).
        """
        r = self.sensor_radius
        h, w = self.map_shape
        mortal = np.isin(self.actor_types, (ENEMY, COLLECTABLE))
        shown = jnp.where(self.actor_types == DOOR, ~state.door_open, ~mortal | state.alive)
        actor_cell = state.actor_pos[:, 0] * w + state.actor_pos[:, 1]
        at_cell = jnp.arange(h * w).reshape(h, w) == actor_cell[:, None, None]
        at_cell &= shown[:, None, None]
        code = state.walls.astype(jnp.uint8) | state.lava.astype(jnp.uint8) << LAVA_BIT
        for kind, bit in SENSED_ACTOR_BITS.items():
            ids = self.actor_ids(kind)
            if ids.size:
                code |= at_cell[ids].any(0).astype(jnp.uint8) << bit
        window = _window(code, state.pos, r, outside=1)
        return (window[..., None] >> jnp.arange(SENSOR_PLANES, dtype=jnp.uint8)) & 1 == 1

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.shrine_active | state.dead

    # ----- testing hooks ----------------------------------------------------
    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        walls = np.asarray(params.walls)
        if walls.shape != self.map_shape or np.asarray(params.lava).shape != self.map_shape:
            raise ValueError(
                f"{self.name}: walls and lava must have the map's shape {self.map_shape}"
            )
        actors = check_shape(self.name, "actor_pos", params.actor_pos, (self.num_actors, 2))
        named = {"start": params.start}
        named.update(
            {
                f"actor {i} ({ACTOR_TYPES[t]})": p
                for i, (t, p) in enumerate(zip(self.actor_types, actors))
            }
        )
        check_cells(self.name, named, walls)
        if int(params.health) < 1:
            raise ValueError(f"{self.name}: health must be at least 1, got {int(params.health)}")


def player_move(state: EnvState, action: jax.Array, solid: jax.Array) -> tuple[jax.Array, ...]:
    """The player's move or jump: ``(facing, pos)``.

    A move (actions 0–3) sets the facing and enters the cell ahead unless it is ``solid``
    (:meth:`Dungeon.solid`). A jump goes two cells in the facing direction, over anything that
    is not a wall, a closed door or an actor, and may land in lava.
    """
    h, w = state.walls.shape
    inside = lambda cell: jnp.clip(cell, 0, jnp.array([h - 1, w - 1]))
    moving = action < 4
    facing = jnp.where(moving, action, state.facing)
    ahead = inside(state.pos + jnp.asarray(NSEW)[facing])
    pos = jnp.where(moving & ~solid[ahead[0], ahead[1]], ahead, state.pos)
    landing = inside(state.pos + 2 * jnp.asarray(NSEW)[facing])
    over_ok = ~(solid & ~state.lava)[ahead[0], ahead[1]]
    land_ok = ~(solid & ~state.lava)[landing[0], landing[1]]
    return facing, jnp.where((action == JUMP) & over_ok & land_ok, landing, pos)


def interact(state: EnvState, action, types, adjacent, params: EnvParams) -> tuple[jax.Array, ...]:
    """``interact`` with the adjacent switch or shrine within :data:`REACH`:
    ``(toggled, switch_on, door_open, shrine_activated)``. The switch holds the door open
    (unless ``params.door_stuck``)."""
    heights = [params.switch_height, params.shrine_height]
    height = jnp.select([types == SWITCH, types == SHRINE], heights, 1)
    reachable = adjacent & (height <= REACH) & state.alive
    toggled = (action == INTERACT) & (reachable & (types == SWITCH)).any()
    switch_on = state.switch_on ^ toggled
    door_open = jnp.where(params.door_stuck, state.door_open, switch_on)
    at_shrine = (reachable & (types == SHRINE)).any()
    activated = (action == INTERACT) & at_shrine & ~state.shrine_active
    return toggled, switch_on, door_open, activated


def attack(state: EnvState, action, types, adjacent, params: EnvParams) -> tuple[jax.Array, ...]:
    """``attack``: the first adjacent enemy dies (unless ``params.enemies_immortal``):
    ``(its id, killed, alive)``."""
    targets = adjacent & state.alive & (types == ENEMY)
    killed_id = jnp.argmax(targets)
    killed = (action == ATTACK) & targets.any() & ~params.enemies_immortal
    alive = state.alive.at[killed_id].set(state.alive[killed_id] & ~killed)
    return killed_id, killed, alive


def _window(grid: jax.Array, centre: jax.Array, radius: int, outside) -> jax.Array:
    """``grid[centre - radius : centre + radius + 1]`` on both axes, ``outside`` off the grid: a
    selection by compares on each axis in turn rather than a slice at a traced start (a gather
    once batched)."""
    side = jnp.arange(2 * radius + 1) - radius
    picked = grid
    for axis in (0, 1):
        hit = (centre[axis] + side)[:, None] == jnp.arange(grid.shape[axis])
        picked = jnp.moveaxis(picked, axis, -1)[..., None, :]
        picked = jnp.where(hit, picked, 0).max(-1)
        picked = jnp.moveaxis(jnp.where(hit.any(1), picked, outside), -1, axis)
    return picked


def target_direction(pos: jax.Array, target: jax.Array, scale: float = 8.0) -> jax.Array:
    """``float32[3]``: the unit direction ``(d_row, d_col)`` from ``pos`` to ``target`` and the
    distance over ``scale`` (clipped to 1), what a learned navigator reads beside the grid
    sensor."""
    gap = (target - pos).astype(jnp.float32)
    distance = jnp.abs(gap).sum()
    return jnp.concatenate(
        [gap / jnp.maximum(distance, 1.0), jnp.minimum(distance / scale, 1.0)[None]]
    )


def target_plane(pos: jax.Array, target: jax.Array, radius: int) -> jax.Array:
    """``float32[2r+1, 2r+1]``: one at the target's cell in the player's grid sensor (radius ``r``),
    clipped to the sensor's edge when the target lies beyond it (its direction)."""
    at = jnp.clip(target - pos, -radius, radius) + radius
    return jnp.zeros((2 * radius + 1, 2 * radius + 1), jnp.float32).at[at[0], at[1]].set(1.0)


def random_level(
    key, actor_types: np.ndarray, shape: tuple[int, int] = (9, 17), obstacles: int = 3
):
    """A random level with the default's shape and cast (jittable):
    ``(walls, lava, start, actor_pos)``.

    Two rooms split by a wall column (at column 5–8) with the door at a random row; a one-cell
    lava pit across the second room (3–5 columns past the divider) with its actor cell at a
    random row; the switch, the start and a collectable in the first room; the shrine, the
    enemies and a collectable beyond; ``obstacles`` wall cells in each room, dropped if they cut
    a path the three-step plan needs (so every drawn level can be completed)."""
    h, w = shape
    keys = jax.random.split(key, 8)
    rows, cols = jnp.arange(h)[:, None], jnp.arange(w)[None, :]
    divider = jax.random.randint(keys[0], (), 5, 9)
    lava_col = divider + jax.random.randint(keys[1], (), 3, 6)
    door = jnp.stack([jax.random.randint(keys[2], (), 1, h - 1), divider])
    pit = jnp.stack([jax.random.randint(keys[3], (), 1, h - 1), lava_col])
    border = (rows == 0) | (rows == h - 1) | (cols == 0) | (cols == w - 1)
    walls = border | ((cols == divider) & ~((rows == door[0]) & (cols == door[1])))
    lava = (cols == lava_col) & ~border
    room1 = ~walls & (cols < divider)
    east = ~walls & ~lava & (cols > lava_col)
    # keep cells around the door and the pit's crossing free
    near = lambda cell: (jnp.abs(rows - cell[0]) + jnp.abs(cols - cell[1])) <= 1
    clear = near(door) | near(pit) | near(pit + jnp.array([0, 1])) | near(pit - jnp.array([0, 1]))
    draw = lambda k, mask, n: _cells(k, mask, n, w)
    start, switch, item1 = jnp.split(draw(keys[4], room1 & ~clear, 3), 3)
    taken = lambda cells: jnp.zeros((h, w), bool).at[cells[:, 0], cells[:, 1]].set(True)
    shrine, enemy1, enemy2, item2 = jnp.split(draw(keys[5], east & ~clear, 4), 4)
    cast = {
        SWITCH: [switch[0]],
        DOOR: [door],
        LAVA: [pit],
        SHRINE: [shrine[0]],
        ENEMY: [enemy1[0], enemy2[0]],
        COLLECTABLE: [item1[0], item2[0]],
    }
    actor_pos = jnp.stack([cast[int(t)].pop(0) for t in actor_types]).astype(jnp.int32)
    special = taken(actor_pos) | taken(start)
    blocks = draw(keys[6], (room1 | east) & ~clear & ~special, 2 * obstacles)
    blocked = walls.at[blocks[:, 0], blocks[:, 1]].set(True)
    # The plan's legs, with the obstacles: start → beside the switch, → the door, → beside the
    # pit; beyond it → beside the shrine.
    solid = blocked | lava | taken(actor_pos[np.asarray(actor_types) != COLLECTABLE])
    from_start = grid_distances(solid.at[door[0], door[1]].set(False), start[0])
    beside = lambda dist, cell: jnp.min(
        jnp.stack([dist[cell[0] + dr, cell[1] + dc] for dr, dc in NSEW])
    )
    beyond = grid_distances(solid, pit + jnp.array([0, 1]))
    ok = (
        (beside(from_start, switch[0]) < UNREACHABLE)
        & (from_start[pit[0], pit[1] - 1] < UNREACHABLE)
        & (beside(beyond, shrine[0]) < UNREACHABLE)
    )
    return jnp.where(ok, blocked, walls), lava, start[0].astype(jnp.int32), actor_pos


def _cells(key, mask: jax.Array, n: int, width: int) -> jax.Array:
    """``int32[n, 2]``: ``n`` distinct cells drawn uniformly where ``mask`` holds (Gumbel top-k)."""
    scores = jax.random.gumbel(key, mask.shape) + jnp.where(mask, 0.0, -1e9)
    flat = jax.lax.top_k(scores.reshape(-1), n)[1]
    return jnp.stack([flat // width, flat % width], axis=-1).astype(jnp.int32)
