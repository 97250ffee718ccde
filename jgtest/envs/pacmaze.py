"""PacMaze: RELINE's Ms. Pac-Man load-testing game on device (Tufano et al., 2022, §3).

Ms. Pac-Man with its five actions (§3.1.2), drawn as ``uint8`` RGB pixels; the reward is +1 a
dot (§3.1.2). The performance bugs are the four gates, the tunnel mouths (§3.1.1): each fires
the first time in an episode the player enters it (§3.1.3), slowing the step's frame.

* chosen: a 21x21 maze, no power pills, three lives and two tunnels, because the gates and the
  agents' play need no more.
* chosen: ghosts that move with p = 0.9 and chase with p = 0.7, and a start in the bottom
  corridor, because a random agent then plays its part in Table 1 (§3.2).
* chosen: dots along the tunnel corridors, because in the paper's Atari maze dots lead there.
* chosen: colours of distinct brightness, because the agents see grayscale frames (§3.1.2).
* chosen: the step returns the colour index of each cell and frames are drawn on read
  (:meth:`PacMaze.draw`), because drawing 84x84x3 pixels cost a hundred times the game's step.

Rules: :class:`PacMaze`; notes: ``docs/twins/pacmaze.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.envs.base import TestingEnv, check_shape
from jgtest.envs.grid import check_cells, parse_layout
from jgtest.signals import DEVICE_DEFAULT
from jgtest.types import Telemetry

#: 21x21 default maze (left-right symmetric): ``#`` wall, ``.`` dot, ``_``
#: floor without a dot, ``P`` player start (the bottom corridor, see the
#: calibration), ``G`` ghost starts (one in the door of the pen, three inside),
#: ``T`` the four gates (tunnel mouths, rows 7 and 13, their corridors lined with dots).
DEFAULT_LAYOUT = """
#####################
#.........#.........#
#.###.###.#.###.###.#
#...................#
#.###.#.#####.#.###.#
#.....#...#...#.....#
#####.###_#_###.#####
T....._________.....T
#####.#.##G##.#.#####
#####.#.#GGG#.#.#####
#####.#.#####.#.#####
#####...........#####
#####.###.#.###.#####
T.........#.........T
#####.#.#####.#.#####
#...................#
#.###.###.#.###.###.#
#...#...........#...#
#.#####.#####.#####.#
#.........P.........#
#####################
"""

#: Moves as (d_row, d_col) for RELINE's actions: 0 up, 1 right, 2 down, 3 left, 4 noop.
MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1], [0, 0]], np.int32)
ACTION_NAMES = ("up", "right", "down", "left", "noop")
NOOP = 4
#: Each life starts heading left, as in the arcade game.
START_HEADING = 3

#: Colours (RGB) of the observation: Ms. Pac-Man's hues, with brightnesses chosen so
#: that the paper's grayscale preprocessing (§3.1.2) keeps the classes apart at one
#: pixel a cell, where only intensity tells them apart: floor 0 < wall 54 < dot 131 <
#: ghosts 174-193 < player 226 (ITU-R 601 luma, :func:`jgtest.frames.grayscale`).
#: With the arcade's pale dots (luma 204) a one-pixel player (226) hid among them.
FLOOR_RGB = (0, 0, 0)
WALL_RGB = (33, 33, 222)
DOT_RGB = (200, 100, 100)
PLAYER_RGB = (255, 255, 0)
GHOST_RGB = ((255, 140, 140), (255, 150, 220), (0, 255, 255), (255, 184, 82))

_FLOOR, _WALL, _DOT, _PLAYER, _GHOST0 = 0, 1, 2, 3, 4
#: The colour of each index of an observation: floor, wall, dot, player, then the ghosts'.
PALETTE = np.array([FLOOR_RGB, WALL_RGB, DOT_RGB, PLAYER_RGB, *GHOST_RGB], np.uint8)


@struct.dataclass
class EnvState(environment.EnvState):
    pos: jax.Array  # int32[2] player (row, col)
    heading: jax.Array  # int32 the player's direction of travel (0 up, 1 right, 2 down, 3 left)
    ghosts: jax.Array  # int32[G, 2] ghost (row, col)
    ghost_dir: jax.Array  # int32[G] last move of each ghost (0 up, 1 right, 2 down, 3 left)
    dots: jax.Array  # bool[H, W] dots still to eat
    lives: jax.Array  # int32 lives left
    bugs_seen: jax.Array  # bool[N] gate bugs already fired this episode
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    walls: jax.Array  # bool[H, W]
    dots: jax.Array  # bool[H, W] dots at the start of an episode
    start: jax.Array  # int32[2] player start
    ghost_start: jax.Array  # int32[G, 2]
    bug_pos: jax.Array  # int32[N, 2] the gates (RELINE §3.1.1)
    dot_reward: float = 1.0
    num_lives: int = 3
    ghost_move_prob: float = 0.9
    ghost_chase_prob: float = 0.7
    base_frame_ms: float = 16.7
    frame_noise_ms: float = 0.5
    bug_delay_ms: float = 40.0
    max_steps_in_episode: int = 1000


def move_player(params: EnvParams, state: EnvState, action) -> tuple[jax.Array, ...]:
    """The player's move, as Ms. Pac-Man moves: ``(pos, heading, moved)``.

    It turns to the asked direction when that cell is free, otherwise (and on noop, "do
    nothing") it goes on in its heading; only a wall ahead stops it. Leaving the map through a
    gate wraps to the opposite edge, as the tunnels do. A traced out-of-range action is clipped
    into ``[0, 5)`` (concrete ones are refused by :meth:`TestingEnv.step`).
    """
    shape = jnp.array(params.walls.shape, jnp.int32)
    moves = jnp.asarray(MOVES)
    action = jnp.clip(jnp.asarray(action, jnp.int32), 0, 4)
    asked = jnp.where(action == NOOP, state.heading, action)
    ahead = (state.pos + moves[jnp.stack([asked, state.heading])]) % shape  # [2, 2]
    free = ~params.walls[ahead[:, 0], ahead[:, 1]]
    heading = jnp.where(free[0], asked, state.heading)
    pos = jnp.where(free[0], ahead[0], jnp.where(free[1], ahead[1], state.pos))
    return pos, heading, jnp.any(pos != state.pos)


def gate_bugs(params: EnvParams, state: EnvState, pos, moved, key) -> tuple[jax.Array, ...]:
    """The gates' bugs and the step's frame time: ``(at_gate, fired, frame_ms)``.

    "A performance bug manifests when the agent enters the four gates" (§3.1.1), and only "the
    first time the agent visits each buggy position" in an episode (§3.1.3). The simulated
    frame time is ``base_frame_ms + N(0, frame_noise_ms²)``, raised by ``bug_delay_ms`` for each
    bug fired, a "simulation of heavy resource loading" (§3.1.1).
    """
    at_bug = jnp.all(params.bug_pos == pos, axis=-1) & moved
    fired = at_bug & ~state.bugs_seen
    frame_ms = (
        params.base_frame_ms
        + params.frame_noise_ms * jax.random.normal(key)
        + params.bug_delay_ms * jnp.sum(fired)
    )
    return at_bug, fired, jnp.maximum(frame_ms, 0.0)


def move_ghosts(params: EnvParams, state: EnvState, pos, k_move, k_pick) -> tuple[jax.Array, ...]:
    """The ghosts' moves: ``(ghosts, ghost_dir)``.

    Each ghost moves one cell with probability ``ghost_move_prob``, never reversing except in a
    dead end: towards the player (``pos``) with probability ``ghost_chase_prob`` (the free
    direction that brings it closest, Manhattan distance), otherwise in a random free one.
    """
    shape = jnp.array(params.walls.shape, jnp.int32)
    moves = jnp.asarray(MOVES)
    cand = (state.ghosts[:, None, :] + moves[None, :4]) % shape  # [G, 4, 2]
    free = ~params.walls[cand[..., 0], cand[..., 1]]  # [G, 4]
    reverse = jnp.arange(4)[None, :] == ((state.ghost_dir + 2) % 4)[:, None]
    options = free & ~reverse
    options = jnp.where(jnp.any(options, axis=-1, keepdims=True), options, free)
    noise = jax.random.uniform(k_pick, options.shape)
    dist = jnp.sum(jnp.abs(cand - pos), axis=-1).astype(jnp.float32)
    chase_dir = jnp.argmin(jnp.where(options, dist + 0.5 * noise, jnp.inf), axis=-1)
    wander_dir = jnp.argmax(jnp.where(options, noise, -1.0), axis=-1)
    u_move, u_chase = jax.random.uniform(k_move, (2, state.ghosts.shape[0]))
    chase = u_chase < params.ghost_chase_prob
    new_dir = jnp.where(chase, chase_dir, wander_dir).astype(jnp.int32)
    go = (u_move < params.ghost_move_prob) & jnp.any(free, axis=-1)
    moved = jnp.take_along_axis(cand, new_dir[:, None, None], axis=1)[:, 0]
    ghosts = jnp.where(go[:, None], moved, state.ghosts)
    return ghosts, jnp.where(go, new_dir, state.ghost_dir)


def caught(state: EnvState, pos: jax.Array, ghosts: jax.Array) -> jax.Array:
    """Whether a ghost caught the player: on its cell, or the two swapped cells."""
    same = jnp.all(ghosts == pos, axis=-1)
    swap = jnp.all(state.ghosts == pos, axis=-1) & jnp.all(ghosts == state.pos, axis=-1)
    return jnp.any(same | swap)


class PacMaze(TestingEnv):
    """RELINE's Ms. Pac-Man with four gate performance bugs (§3.1).

    Rules: a step moves the player (:func:`move_player`); it eats the dot there
    (+``dot_reward``); each gate it has just entered fires its bug if not fired before in the
    episode (:func:`gate_bugs`); then the ghosts move (:func:`move_ghosts`). A ghost on the
    player's cell, or swapping cells with it (:func:`caught`), costs a life and sends the
    player and the ghosts back to their starts (dots eaten stay eaten); each life starts
    heading left, as in the arcade game. The episode terminates when the lives reach 0 or every
    dot is eaten; it is truncated after ``max_steps_in_episode`` steps.

    Observation: the maze as ``uint8[H, W]`` colour indices (:meth:`get_obs`), which
    :meth:`draw` turns into ``uint8[H*cell_px, W*cell_px, 3]`` RGB pixels (84x84x3 by default):
    black floor, blue walls, small dim-pink dots, a yellow player and light-red, pink, cyan and
    orange ghosts; the gates and bugs are not drawn. A learner that reads pixels wraps the game in
    :class:`jgtest.envs.wrappers.DrawFrames`, so that frames are drawn only where they are read.
    Telemetry: ``position`` is the player's
    ``(row, col)`` after its move (before a caught player is sent back to the start, so a
    frame-time spike maps to the cell that caused it), ``cell`` is ``row * W + col`` and
    ``map_shape`` is the maze's ``(H, W)``.

    Args:
      layout: ASCII maze (``#`` wall, ``.`` dot, ``_`` empty floor, ``P``
        player start, ``G`` ghost starts, ``T`` gates); its size sets the
        observation shape. Each ``T`` cell carries one ``low_fps`` bug, in
        row-major order (default: ``(7, 0), (7, 20), (13, 0), (13, 20)``).
      cell_px: pixels per maze cell in the drawn frames (4 gives 84x84).

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("PacMaze-v0")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> obs.shape, env.draw(obs).shape
      ((21, 21), (84, 84, 3))
    """

    #: Signals (:mod:`jgtest.signals`): injected low-FPS gates (RELINE §3.1.3) and their frame
    #: times.
    signals = DEVICE_DEFAULT | {"frame_time"}

    env_id = "PacMaze-v0"
    num_actions = 5

    def __init__(self, layout: str = DEFAULT_LAYOUT, cell_px: int = 4):
        super().__init__()
        parsed = parse_layout(layout)
        if "P" not in parsed or len(parsed["P"]) != 1:
            raise ValueError("layout must have exactly one 'P' cell (player start)")
        for mark, what in (("G", "ghost start"), ("T", "gate")):
            if mark not in parsed:
                raise ValueError(f"layout must have at least one '{mark}' cell ({what})")
        unknown = sorted(set(parsed) - {"walls", "P", "G", "T", "_"})
        if unknown:
            raise ValueError(f"layout has unknown cell marks {unknown}; use # . _ P G T")
        self.cell_px = int(cell_px)
        if self.cell_px < 1:
            raise ValueError(f"cell_px must be at least 1, got {cell_px}")
        self._walls = parsed["walls"]
        rows = [r for r in layout.strip("\n").splitlines()]
        self._num_ghosts = len(parsed["G"])
        self._num_bugs = len(parsed["T"])
        self._default_params = EnvParams(
            walls=jnp.asarray(self._walls),
            dots=jnp.asarray(np.array([list(r) for r in rows]) == "."),
            start=jnp.asarray(parsed["P"][0]),
            ghost_start=jnp.asarray(parsed["G"]),
            bug_pos=jnp.asarray(parsed["T"]),
        )
        s = self.cell_px
        inner = np.zeros((s,), bool)
        inner[s // 4 : s - s // 4] = True
        #: Pixels of a cell covered by its dot (the centre square).
        self._dot_mask = np.tile(inner[:, None] & inner[None, :], self.map_shape)

    # ----- metadata ---------------------------------------------------------
    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ("low_fps",) * self._num_bugs

    @property
    def map_shape(self) -> tuple[int, int]:
        return tuple(self._walls.shape)

    @property
    def num_ghosts(self) -> int:
        return self._num_ghosts

    def observation_space(self, params) -> spaces.Box:
        return spaces.Box(0, len(PALETTE) - 1, self.map_shape, jnp.uint8)

    # ----- dynamics ---------------------------------------------------------
    def reset_env(self, key, params: EnvParams):
        state = EnvState(
            pos=params.start.astype(jnp.int32),
            heading=jnp.int32(START_HEADING),
            ghosts=params.ghost_start.astype(jnp.int32),
            ghost_dir=jnp.zeros((self._num_ghosts,), jnp.int32),
            dots=params.dots & ~params.walls,
            lives=jnp.asarray(params.num_lives, jnp.int32),
            bugs_seen=jnp.zeros((self._num_bugs,), bool),
            time=0,
        )
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        """One step: :func:`move_player`, the dot, :func:`gate_bugs`, :func:`move_ghosts` and
        :func:`caught`; a caught player loses a life and goes back to the start with the
        ghosts."""
        k_move, _, k_pick, k_frame = jax.random.split(key, 4)  # the second key is unused
        cols = self.map_shape[1]
        pos, heading, moved = move_player(params, state, action)
        ate = state.dots[pos[0], pos[1]]
        dots = state.dots.at[pos[0], pos[1]].set(False)
        game_reward = jnp.where(ate, params.dot_reward, 0.0).astype(jnp.float32)
        at_bug, fired, frame_ms = gate_bugs(params, state, pos, moved, k_frame)
        ghosts, ghost_dir = move_ghosts(params, state, pos, k_move, k_pick)
        hit = caught(state, pos, ghosts)
        lives = state.lives - hit.astype(jnp.int32)
        state = EnvState(
            pos=jnp.where(hit, params.start.astype(jnp.int32), pos),
            heading=jnp.where(hit, START_HEADING, heading),
            ghosts=jnp.where(hit, params.ghost_start.astype(jnp.int32), ghosts),
            ghost_dir=jnp.where(hit, 0, ghost_dir),
            dots=dots,
            lives=lives,
            bugs_seen=state.bugs_seen | at_bug,
            time=state.time + 1,
        )
        terminated = self.is_terminated(state, params)
        telemetry = Telemetry.make(
            position=pos,
            cell=pos[0] * cols + pos[1],
            bugs_fired=fired,
            game_reward=game_reward,
            frame_time_ms=frame_ms,
        )
        return (
            self.get_obs(state, params),
            state,
            game_reward,
            terminated,
            {"telemetry": telemetry},
        )

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        """The maze as ``uint8[H, W]`` colour indices, one a cell (what :meth:`draw` draws).

        Floor, wall or dot (:data:`PALETTE`'s rows 0-2), then the ghosts in order and the player
        on top.

        * chosen: each actor is found by comparing flat cell numbers and the colours are uint8
          throughout, because the observation was half the step's cost (a third less with these).
        """
        params = self.default_params if params is None else params
        rows, cols = self.map_shape
        cell = jnp.arange(rows * cols, dtype=jnp.int32).reshape(rows, cols)
        u8 = jnp.uint8
        idx = jnp.where(params.walls, u8(_WALL), jnp.where(state.dots, u8(_DOT), u8(_FLOOR)))
        for g in range(self._num_ghosts):
            here = cell == state.ghosts[g, 0] * cols + state.ghosts[g, 1]
            idx = jnp.where(here, u8(_GHOST0 + g % len(GHOST_RGB)), idx)
        return jnp.where(cell == state.pos[0] * cols + state.pos[1], u8(_PLAYER), idx)

    def draw(self, obs: jax.Array) -> jax.Array:
        """Draws an observation (:meth:`get_obs`) as ``uint8[H*cell_px, W*cell_px, 3]`` RGB pixels.

        Each cell becomes ``cell_px`` × ``cell_px`` pixels of its colour, except that a dot
        covers only the centre of its cell, on the floor.
        """
        s = self.cell_px
        px = jnp.repeat(jnp.repeat(obs, s, axis=0), s, axis=1)
        px = jnp.where((px == _DOT) & ~jnp.asarray(self._dot_mask), _FLOOR, px)
        return jnp.asarray(PALETTE)[px]

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return (state.lives <= 0) | ~jnp.any(state.dots)

    # ----- testing hooks ----------------------------------------------------
    def validate_params(self, params: EnvParams) -> None:
        """Refuses bad maze arrays, positions off the map or on walls, and bad numbers.

        The gates are fixed by the paper, so :meth:`randomize` (base) leaves
        the params unchanged; a campaign that moves ``bug_pos`` itself is
        checked here.
        """
        super().validate_params(params)
        walls = self.check_map_shape("walls", params.walls)
        self.check_map_shape("dots", params.dots)
        ghosts = check_shape(self.name, "ghost_start", params.ghost_start, (self._num_ghosts, 2))
        bugs = check_shape(self.name, "bug_pos", params.bug_pos, (self._num_bugs, 2))
        named = {"start": params.start}
        named.update({f"ghost {i} start": g for i, g in enumerate(ghosts)})
        named.update({f"bug {i} (gate)": b for i, b in enumerate(bugs)})
        check_cells(self.name, named, walls)
        lives = int(np.asarray(params.num_lives))
        if lives < 1:
            raise ValueError(f"{self.name}: num_lives must be at least 1, got {lives}")
        for field in ("ghost_move_prob", "ghost_chase_prob"):
            p = float(np.asarray(getattr(params, field)))
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{self.name}: {field} must be in [0, 1], got {p}")
        for field in ("base_frame_ms", "frame_noise_ms", "bug_delay_ms"):
            v = float(np.asarray(getattr(params, field)))
            if not (np.isfinite(v) and v >= 0.0):
                raise ValueError(f"{self.name}: {field} must be a finite number >= 0, got {v}")
