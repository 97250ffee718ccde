"""PacMaze: RELINE's Ms. Pac-Man load-testing game on device (Tufano et al., 2022, §3).

Atari Ms. Pac-Man's first maze with its five actions (§3.1.2); the reward is +1 a step that eats
(§3.1.2: +1 a dot; the replication package's sign-clipped score, ``MsPacman/lib/wrappers.py``
``ClipRewardEnv``, also +1 for an energizer or a ghost). The performance bugs are the four gates,
the tunnel mouths (§3.1.1): each fires the first time in an episode the player enters it
(§3.1.3), slowing the step's frame. Rules: :class:`PacMaze`; probes beside the real game:
``benchmarks/pacmaze_probes.py``.

* chosen: speeds in cells a step, by axis, as the real game's RAM positions move under a random
  player (``benchmarks/pacmaze_probes.py``): she moves 0.94 cells a step up or down and 0.71
  across, the ghosts 0.73 and 0.58, because the Atari's pixels are twice as wide as tall.
* chosen: a lost life stands the game still for 19 steps where she was caught and 28 more at the
  starts, as the real game's RAM shows; ghosts leave the pen after 15, 75 and 105 steps
  (JAXAtari's 1, 5 and 7 s at 15 steps a second).
* chosen: each life starts with the ghosts scattering towards the top corners, as the real
  game's do, then chasing for 300 steps (the arcade's 20 s), in turns.
* chosen: energizers frighten the ghosts for 90 steps (the arcade's 6 s on its first level), at
  half speed, wandering; the 2600's own time was not measured.
* calibrated: the scatter time (30 steps) and ``ghost_chase_prob`` (1.0), so that a random player
  finds the gates as often as the paper's and lives about as long as on the real game
  (``benchmarks/pacmaze_probes.py``, ``benchmarks/results/pacmaze_probes.json``).
* chosen: colours of distinct brightness, because the agents see grayscale frames (§3.1.2).
* chosen: the step returns what the frame shows (the dots' bits and the actors' cells) and
  frames are drawn on read (:meth:`PacMaze.draw`), because drawing them was most of the step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.envs import rng
from jgtest.envs.base import TestingEnv, check_shape
from jgtest.envs.grid import check_cells, parse_layout
from jgtest.signals import DEVICE_DEFAULT
from jgtest.types import Telemetry

#: Atari Ms. Pac-Man's first maze (:data:`DEFAULT_LAYOUT`), one cell a 4 x 4 pixel tile of the
#: screen and one corridor a cell wide (the real ones are three tiles wide, their top-left tile
#: here): ``#`` wall, ``.`` dot, ``o`` energizer, ``_`` floor without a dot, ``P`` player start
#: (the lower-tunnel row, heading left), ``G`` ghost starts (one above the pen, three in it),
#: ``-`` the pen's door (ghosts only), ``1``-``4`` the gates, two cells deep at the tunnel
#: mouths: upper-left, upper-right, lower-left, lower-right (RELINE's Fig. 2-(b)). Walls,
#: pen, energizers and starts follow JAXAtari's ``MAZE0`` (``k4ntz/JAXAtari``), checked tile by
#: tile against a real reset screen: both tunnel mouths of a side are walled off from the centre
#: and joined by an outer corridor.
DEFAULT_LAYOUT = """
#########################################
##._._._.###._._._.___._._._.###._._._.##
##_#####_###_###############_###_#####_##
##_#####_###_###############_###_#####_##
##o#####.###.###############.###.#####o##
##_#####_###_###############_###_#####_##
##_#####_###_###############_###_#####_##
##._._._._._._._._.___._._._._._._._._.##
####_###_#####_###########_#####_###_####
####_###_#####_###########_#####_###_####
####.###.#####.###########.#####.###.####
####_###_#####_###########_#####_###_####
####_###_#####_###########_#####_###_####
11._.###._._._._._._G_._._._._._.###._.22
####_#########_#####-#####_#########_####
####_#########_#####-#####_#########_####
####.#########.#####-#####.#########.####
####_#########_#####-#####_#########_####
####_#########_#####-#####_#########_####
####._._._._._.###G_G_G###._._._._._.####
####_#########_###########_#########_####
####_#########_###########_#########_####
####.#########.###########.#########.####
####_#########_###########_#########_####
####_#########_###########_#########_####
33._.###._._._._._._P_._._._._._.###._.44
####_###_###_###_#######_###_###_###_####
####_###_###_###_#######_###_###_###_####
####.###.###.###.#######.###.###.###.####
####_###_###_###_#######_###_###_###_####
####_###_###_###_#######_###_###_###_####
##._._._.###.###._.___._.###.###._._._.##
##_#####_###_###_#######_###_###_#####_##
##_#####_###_###_#######_###_###_#####_##
##.#####.###._._.#######._._.###.#####.##
##_#####_#######_#######_#######_#####_##
##_#####_#######_#######_#######_#####_##
##o#####.#######.#######.#######.#####o##
##_#####_#######_#######_#######_#####_##
##_#####_#######_#######_#######_#####_##
##._._._._._._._._.___._._._._._._._._.##
#########################################
"""

#: Moves as (d_row, d_col) for RELINE's actions: 0 up, 1 right, 2 down, 3 left, 4 noop.
MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1], [0, 0]], np.int32)
ACTION_NAMES = ("up", "right", "down", "left", "noop")
NOOP = 4
#: Each life starts heading left, as in the arcade game.
START_HEADING = 3
#: Cell marks of a layout besides walls and dots (``.``); digits are gates.
GATE_MARKS = "123456789"
LAYOUT_MARKS = {"P", "G", "T", "_", "o", "-", *GATE_MARKS}

#: Colours (RGB) of the observation: Ms. Pac-Man's hues, with brightnesses chosen so
#: that the paper's grayscale preprocessing (§3.1.2) keeps the classes apart at one
#: pixel a cell, where only intensity tells them apart: floor 0 < wall 54 < frightened ghost 87
#: < dot 131 < energizer 153 < ghosts 174-193 < player 226 (ITU-R 601 luma,
#: :func:`jgtest.frames.grayscale`).
FLOOR_RGB = (0, 0, 0)
WALL_RGB = (33, 33, 222)
DOT_RGB = (200, 100, 100)
ENERGIZER_RGB = (230, 120, 120)
FRIGHTENED_RGB = (66, 66, 255)
PLAYER_RGB = (255, 255, 0)
GHOST_RGB = ((255, 140, 140), (255, 150, 220), (0, 255, 255), (255, 184, 82))

_FLOOR, _WALL, _DOT, _ENERGIZER, _FRIGHTENED, _PLAYER, _GHOST0 = range(7)
#: The colour of each index of an observation: floor, wall, dot, energizer, frightened ghost,
#: player, then the ghosts'.
PALETTE = np.array(
    [FLOOR_RGB, WALL_RGB, DOT_RGB, ENERGIZER_RGB, FRIGHTENED_RGB, PLAYER_RGB, *GHOST_RGB], np.uint8
)


@struct.dataclass
class EnvState(environment.EnvState):
    pos: jax.Array  # int32[2] player (row, col)
    heading: jax.Array  # int32 the player's direction of travel (0 up, 1 right, 2 down, 3 left)
    wanted: jax.Array  # int32 the last direction asked for (she turns there when it opens)
    stride: jax.Array  # float32 the player's travel towards her next cell (moves at 1)
    ghosts: jax.Array  # int32[G, 2] ghost (row, col)
    ghost_dir: jax.Array  # int32[G] last move of each ghost (0 up, 1 right, 2 down, 3 left)
    ghost_stride: jax.Array  # float32[G] each ghost's travel towards its next cell
    frightened: jax.Array  # bool[G] ghosts an energizer frightened (until eaten or time runs out)
    fright_left: jax.Array  # int32 steps the energizer's fright lasts
    dots: jax.Array  # uint32[H, K] dots and energizers still to eat, a bit a cell (pack_cells)
    lives: jax.Array  # int32 lives left
    life_time: jax.Array  # int32 steps since this life started (ghosts leave the pen by it)
    dying: jax.Array  # int32 steps left of a caught player's death (the game stands still)
    paused: jax.Array  # int32 steps the game still stands still after a lost life
    bugs_seen: jax.Array  # bool[N] gate bugs already fired this episode
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    walls: jax.Array  # bool[H, W]
    door: jax.Array  # bool[H, W] the pen's door: ghosts pass, the player does not
    pen: jax.Array  # bool[H, W] the pen and its door: ghosts inside head out (``pen_exit``)
    pen_exit: jax.Array  # int32[H, W] the move out of the pen from each of its cells
    dots: jax.Array  # uint32[H, K] dots and energizers at the start of an episode (pack_cells)
    energizers: jax.Array  # bool[H, W]
    start: jax.Array  # int32[2] player start
    ghost_start: jax.Array  # int32[G, 2]
    ghost_home: jax.Array  # int32[2] where an eaten ghost goes back to (in the pen)
    gate_id: jax.Array  # int32[H, W] the gate of each cell, -1 for none (RELINE §3.1.1)
    release_steps: jax.Array  # int32[G] steps into a life before each ghost leaves the pen
    scatter_corner: jax.Array  # int32[G, 2] the cell each ghost heads for while scattering
    player_speed: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.94, 0.71], jnp.float32)
    )  # cells a step (up/down, across)
    ghost_speed: jax.Array = struct.field(
        default_factory=lambda: jnp.array([0.73, 0.58], jnp.float32)
    )  # cells a step (up/down, across)
    frightened_speed: float = 0.5  # a frightened ghost's share of its speed
    frightened_steps: int = 90
    scatter_steps: int = 30  # each life starts with the ghosts scattering, then chasing ...
    chase_steps: int = 300  # ... and they take turns (the arcade's 7 s and 20 s)
    dying_steps: int = 19  # a caught player's death, where she was caught ...
    restart_steps: int = 28  # ... then the pause at the starts, before the next life moves
    dot_reward: float = 1.0
    num_lives: int = 3
    ghost_chase_prob: float = 1.0
    base_frame_ms: float = 16.7
    frame_noise_ms: float = 0.5
    bug_delay_ms: float = 40.0
    max_steps_in_episode: int = 5000


#: Bits of a word of :func:`pack_cells`.
WORD_BITS = 32


def _words_a_row(cols: int) -> int:
    return -(-cols // WORD_BITS)


def pack_cells(cells) -> jax.Array:
    """``uint32[H, K]``: the ``bool[H, W]`` map ``cells`` a bit a cell, bit ``c % 32`` of word
    ``c // 32`` of its row.

    * chosen: the dots as bits, because a step reads and rewrites them all (the observation, the
      end of the maze) and XLA's CPU backend compiles a fusion that loads booleans to scalar code.
    """
    cells = np.asarray(cells, bool)
    rows, cols = cells.shape
    padded = np.zeros((rows, _words_a_row(cols) * WORD_BITS), np.uint64)
    padded[:, :cols] = cells
    weights = np.uint64(1) << np.arange(WORD_BITS, dtype=np.uint64)
    words = (padded.reshape(rows, -1, WORD_BITS) * weights).sum(-1)
    return jnp.asarray(words.astype(np.uint32))


def unpack_cells(words: jax.Array, cols: int) -> jax.Array:
    """``bool[H, cols]``: :func:`pack_cells` undone."""
    spread = jnp.repeat(words, WORD_BITS, axis=-1)[..., :cols]
    return (spread >> (jnp.arange(cols, dtype=jnp.uint32) % WORD_BITS)) & 1 != 0


def cell_bit(words: jax.Array, pos: jax.Array) -> jax.Array:
    """Whether cell ``pos`` (``(row, col)``) is set in the :func:`pack_cells` map ``words``."""
    word = words[pos[0], pos[1] // WORD_BITS]
    return (word >> (pos[1] % WORD_BITS).astype(jnp.uint32)) & 1 != 0


def _cell_mask(shape, pos: jax.Array, on: jax.Array) -> jax.Array:
    """``uint32[H, K]``: cell ``pos``'s bit in a :func:`pack_cells` map, where ``on``."""
    rows, words = shape
    here = (jnp.arange(rows)[:, None] == pos[0]) & (
        jnp.arange(words)[None, :] == pos[1] // WORD_BITS
    )
    bit = jnp.uint32(1) << (pos[1] % WORD_BITS).astype(jnp.uint32)
    return jnp.where(here & on, bit, jnp.uint32(0))


def _axis(direction: jax.Array) -> jax.Array:
    """0 for a move up or down, 1 for one across (the index into the speeds)."""
    return direction % 2


def move_player(params: EnvParams, state: EnvState, action) -> tuple[jax.Array, ...]:
    """The player's move, as Ms. Pac-Man moves: ``(pos, heading, wanted, stride, moved)``.

    She travels ``player_speed`` of a cell a step along her heading's axis and changes cell when
    her stride reaches one. There she turns to the last direction asked for (``wanted``: a
    direction action sets it, noop keeps it) when that cell is free, otherwise goes on in her
    heading; only a wall ahead stops her (her stride then waits at one). Leaving the map through
    a tunnel wraps to the opposite edge. A traced out-of-range action is clipped into ``[0, 5)``
    (concrete ones are refused by :meth:`TestingEnv.step`).
    """
    shape = jnp.array(params.walls.shape, jnp.int32)
    moves = jnp.asarray(MOVES)
    action = jnp.clip(jnp.asarray(action, jnp.int32), 0, 4)
    wanted = jnp.where(action == NOOP, state.wanted, action)
    back = wanted == (state.heading + 2) % 4
    heading = jnp.where(back, wanted, state.heading)
    stride = jnp.where(back, -state.stride, state.stride) + params.player_speed[_axis(heading)]
    ahead = (state.pos + moves[jnp.stack([wanted, heading])]) % shape  # [2, 2]
    blocked = params.walls | params.door
    free = ~blocked[ahead[:, 0], ahead[:, 1]] & (stride >= 1.0)
    heading = jnp.where(free[0], wanted, heading)
    pos = jnp.where(free[0], ahead[0], jnp.where(free[1], ahead[1], state.pos))
    moved = free[0] | free[1]
    stride = jnp.where(moved, stride - 1.0, jnp.minimum(stride, 1.0))
    return pos, heading, wanted, stride, moved


def gate_bugs(params: EnvParams, state: EnvState, pos, moved, key) -> tuple[jax.Array, ...]:
    """The gates' bugs and the step's frame time: ``(at_gate, fired, frame_ms)``.

    "A performance bug manifests when the agent enters the four gates" (§3.1.1), and only "the
    first time the agent visits each buggy position" in an episode (§3.1.3): a gate fires when
    the player moves onto one of its cells. The simulated frame time is ``base_frame_ms +
    N(0, frame_noise_ms²)``, raised by ``bug_delay_ms`` for each bug fired, a "simulation of
    heavy resource loading" (§3.1.1).
    """
    gate = params.gate_id[pos[0], pos[1]]
    at_bug = (jnp.arange(state.bugs_seen.shape[0]) == gate) & moved
    fired = at_bug & ~state.bugs_seen
    frame_ms = (
        params.base_frame_ms
        + params.frame_noise_ms * rng.normal(key)
        + params.bug_delay_ms * jnp.sum(fired)
    )
    return at_bug, fired, jnp.maximum(frame_ms, 0.0)


def move_ghosts(params: EnvParams, state: EnvState, pos, key) -> tuple[jax.Array, ...]:
    """The ghosts' moves: ``(ghosts, ghost_dir, ghost_stride)``.

    A ghost stays in the pen until ``release_steps`` into the life, then travels
    ``ghost_speed`` of a cell a step (``frightened_speed`` of it while frightened). In the pen it
    heads out by the door (``pen_exit``); outside, the pen is closed to it, and at each new cell
    it never reverses except in a dead end: towards the player (``pos``) with probability
    ``ghost_chase_prob`` unless frightened (the free direction that brings it closest, Manhattan
    distance), otherwise in a random free one.
    """
    shape = jnp.array(params.walls.shape, jnp.int32)
    moves = jnp.asarray(MOVES)
    draws = rng.uniform(key, (state.ghosts.shape[0], 5))
    noise, u_chase = draws[:, :4], draws[:, 4]
    released = state.life_time >= params.release_steps
    speed = params.ghost_speed[_axis(state.ghost_dir)] * jnp.where(
        state.frightened, params.frightened_speed, 1.0
    )
    stride = state.ghost_stride + jnp.where(released, speed, 0.0)
    cand = (state.ghosts[:, None, :] + moves[None, :4]) % shape  # [G, 4, 2]
    free = ~(params.walls | params.pen)[cand[..., 0], cand[..., 1]]  # [G, 4]
    reverse = jnp.arange(4)[None, :] == ((state.ghost_dir + 2) % 4)[:, None]
    options = free & ~reverse
    options = jnp.where(jnp.any(options, axis=-1, keepdims=True), options, free)
    scatter = state.life_time % (params.scatter_steps + params.chase_steps) < params.scatter_steps
    target = jnp.where(scatter, params.scatter_corner, pos)  # [G, 2]
    chase = (scatter | (u_chase < params.ghost_chase_prob)) & ~state.frightened
    dist = jnp.sum(jnp.abs(cand - target[:, None, :]), axis=-1).astype(jnp.float32)
    chase_dir = jnp.argmin(jnp.where(options, dist + 0.5 * noise, jnp.inf), axis=-1)
    wander_dir = jnp.argmax(jnp.where(options, noise, -1.0), axis=-1)
    in_pen = params.pen[state.ghosts[:, 0], state.ghosts[:, 1]]
    new_dir = jnp.where(
        in_pen,
        params.pen_exit[state.ghosts[:, 0], state.ghosts[:, 1]],
        jnp.where(chase, chase_dir, wander_dir),
    ).astype(jnp.int32)
    go = (stride >= 1.0) & (in_pen | jnp.any(free, axis=-1))
    moved = (state.ghosts + moves[new_dir]) % shape
    ghosts = jnp.where(go[:, None], moved, state.ghosts)
    return ghosts, jnp.where(go, new_dir, state.ghost_dir), jnp.where(go, stride - 1.0, stride)


def caught(state: EnvState, pos: jax.Array, ghosts: jax.Array) -> jax.Array:
    """``bool[G]``: which ghosts meet the player: on its cell, or the two swapped cells."""
    same = jnp.all(ghosts == pos, axis=-1)
    swap = jnp.all(state.ghosts == pos, axis=-1) & jnp.all(ghosts == state.pos, axis=-1)
    return same | swap


def pen_exit_moves(walls: np.ndarray, pen: np.ndarray) -> np.ndarray:
    """``int32[H, W]``: from each pen cell, the move (:data:`MOVES` index) one step nearer the
    cell just outside the door (a breadth-first search from there); 0 elsewhere."""
    rows, cols = walls.shape
    outside = [
        (r + dr, c + dc)
        for r, c in np.argwhere(pen)
        for dr, dc in MOVES[:4]
        if 0 <= r + dr < rows
        and 0 <= c + dc < cols
        and not walls[r + dr, c + dc]
        and not pen[r + dr, c + dc]
    ]
    exits = np.zeros(walls.shape, np.int32)
    frontier, seen = list(dict.fromkeys(outside)), set(outside)
    while frontier:
        nxt = []
        for r, c in frontier:
            for move, (dr, dc) in enumerate(MOVES[:4]):
                cell = (r - dr, c - dc)  # a pen cell whose move ``move`` leads here
                if cell in seen or not (0 <= cell[0] < rows and 0 <= cell[1] < cols):
                    continue
                if pen[cell]:
                    exits[cell] = move
                    seen.add(cell)
                    nxt.append(cell)
        frontier = nxt
    return exits


def _pen_cells(walls: np.ndarray, door: np.ndarray) -> np.ndarray:
    """``bool[H, W]``: the door and the floor it closes off from the rest of the maze."""
    rows, cols = walls.shape
    pen = door.copy()
    stack = [tuple(p) for p in np.argwhere(door)]
    while stack:
        r, c = stack.pop()
        for dr, dc in MOVES[:4]:
            nr, nc = r + dr, c + dc
            if 0 <= nr < rows and 0 <= nc < cols and not walls[nr, nc] and not pen[nr, nc]:
                if door[r, c] and dr == -1:  # the door opens upwards onto the maze
                    continue
                pen[nr, nc] = True
                stack.append((nr, nc))
    return pen


#: Steps into a life before the ghosts that start in the pen leave it, in layout order (JAXAtari's
#: 1, 5 and 7 s at 15 steps a second); further ghosts leave with the last.
PEN_RELEASE_STEPS = (15, 75, 105)


def _release_steps(in_pen: np.ndarray) -> np.ndarray:
    """``int32[G]``: each ghost's release step (:data:`PEN_RELEASE_STEPS`; 0 outside the pen)."""
    order = np.cumsum(in_pen) - 1
    picked = np.asarray(PEN_RELEASE_STEPS)[np.minimum(order, len(PEN_RELEASE_STEPS) - 1)]
    return np.where(in_pen, picked, 0).astype(np.int32)


def _scatter_corners(blocked: np.ndarray, in_pen: np.ndarray) -> np.ndarray:
    """``int32[G, 2]``: where each ghost heads while scattering: the open cell nearest the
    top-left corner for a ghost that starts outside the pen, nearest the top-right for one in it,
    as the real game's ghosts head at the start of a life (``benchmarks/pacmaze_probes.py``)."""
    open_cells = np.argwhere(~blocked)
    cols = blocked.shape[1]
    top_left = open_cells[np.argmin(open_cells.sum(axis=1))]
    top_right = open_cells[np.argmin(open_cells[:, 0] + (cols - 1 - open_cells[:, 1]))]
    return np.where(in_pen[:, None], top_right, top_left).astype(np.int32)


def _home(ghost_start: np.ndarray, in_pen: np.ndarray, door: np.ndarray) -> np.ndarray:
    """Where an eaten ghost goes back to: the pen start nearest the door's column (the first
    ghost's start in a layout without a pen)."""
    if not in_pen.any() or not door.any():
        return ghost_start[0]
    door_col = np.argwhere(door)[:, 1].mean()
    gap = np.where(in_pen, np.abs(ghost_start[:, 1] - door_col), np.inf)
    return ghost_start[np.argmin(gap)]


class PacMaze(TestingEnv):
    """RELINE's Ms. Pac-Man with four gate performance bugs (§3.1).

    Rules: a step moves the player (:func:`move_player`); it eats the dot or energizer there
    (+``dot_reward``; an energizer frightens every ghost out of the pen for
    ``frightened_steps``); each gate it has just entered fires its bug if not fired before in the
    episode (:func:`gate_bugs`); then the ghosts move (:func:`move_ghosts`). A ghost on the
    player's cell, or swapping cells with it (:func:`caught`), is eaten when frightened
    (+``dot_reward``, back to the pen) and otherwise costs a life: the game stands still for
    ``dying_steps`` while she dies where she was caught, then the player and the ghosts go back to
    their starts (dots eaten stay eaten) and wait ``restart_steps``. Each life starts heading
    left, as in the arcade game. The episode terminates when the lives reach 0 or every dot is
    eaten; it is truncated after ``max_steps_in_episode`` steps.

    Observation: what the frame shows (:meth:`get_obs`: the dots' bits, the actors' cells, the
    frightened ghosts), which :meth:`cells` turns into the maze's colour index a cell
    (``uint8[H, W']``, padded to an even width: :attr:`obs_shape`) and :meth:`draw` into
    ``uint8[H*cell_px, W'*cell_px, 3]`` RGB pixels: black floor, blue walls, small dim-pink dots,
    pink energizers, a yellow player and light-red, pink, cyan and orange ghosts (blue while
    frightened); the gates and bugs are not drawn. A learner that reads
    pixels wraps the game in :class:`jgtest.envs.wrappers.DrawFrames`, so that frames are drawn
    only where they are read. Telemetry: ``position`` is the player's ``(row, col)`` after its
    move (before a caught player is sent back to the start, so a frame-time spike maps to the
    cell that caused it), ``cell`` is ``row * W + col`` and ``map_shape`` is the maze's
    ``(H, W)``.

    Args:
      layout: ASCII maze (:data:`DEFAULT_LAYOUT`'s marks; ``T`` is a one-cell gate of its own, in
        row-major order, for a layout without digit gates); its size sets the observation shape.
      cell_px: pixels per maze cell in the drawn frames (2 gives 84x84).

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("PacMaze-v0")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> obs.shape, env.cells(obs).shape, env.draw(obs).shape
      ((98,), (42, 42), (84, 84, 3))
    """

    #: Signals (:mod:`jgtest.signals`): injected low-FPS gates (RELINE §3.1.3) and their frame
    #: times.
    signals = DEVICE_DEFAULT | {"frame_time"}

    env_id = "PacMaze-v0"
    num_actions = 5

    def __init__(self, layout: str = DEFAULT_LAYOUT, cell_px: int = 2):
        super().__init__()
        parsed = parse_layout(layout)
        if "P" not in parsed or len(parsed["P"]) != 1:
            raise ValueError("layout must have exactly one 'P' cell (player start)")
        if "G" not in parsed:
            raise ValueError("layout must have at least one 'G' cell (ghost start)")
        unknown = sorted(str(mark) for mark in set(parsed) - {"walls"} - LAYOUT_MARKS)
        if unknown:
            raise ValueError(
                f"layout has unknown cell marks {unknown}; use # . _ o - P G T or gate digits"
            )
        self.cell_px = int(cell_px)
        if self.cell_px < 1:
            raise ValueError(f"cell_px must be at least 1, got {cell_px}")
        grid = np.array([list(r) for r in layout.strip("\n").splitlines()])
        gate_id = self._gate_ids(grid)
        self._walls = parsed["walls"]
        self._energizers = grid == "o"
        door = grid == "-"
        pen = _pen_cells(self._walls, door)
        ghost_start = parsed["G"]
        in_pen = pen[ghost_start[:, 0], ghost_start[:, 1]]
        self._num_ghosts = len(ghost_start)
        self._num_bugs = int(gate_id.max()) + 1
        self._default_params = EnvParams(
            walls=jnp.asarray(self._walls),
            door=jnp.asarray(door),
            pen=jnp.asarray(pen),
            pen_exit=jnp.asarray(pen_exit_moves(self._walls, pen)),
            dots=pack_cells((grid == ".") | (grid == "o")),
            energizers=jnp.asarray(grid == "o"),
            start=jnp.asarray(parsed["P"][0]),
            ghost_start=jnp.asarray(ghost_start),
            ghost_home=jnp.asarray(_home(ghost_start, in_pen, door)),
            gate_id=jnp.asarray(gate_id),
            release_steps=jnp.asarray(_release_steps(in_pen)),
            scatter_corner=jnp.asarray(_scatter_corners(self._walls | pen, in_pen)),
        )
        s = self.cell_px
        inner = np.zeros((s,), bool)
        inner[s // 4 : s - s // 4] = True
        #: Pixels of a cell covered by its dot (the centre square).
        self._dot_mask = np.tile(inner[:, None] & inner[None, :], self.obs_shape)

    @staticmethod
    def _gate_ids(grid: np.ndarray) -> np.ndarray:
        """``int32[H, W]``: each cell's gate, from the digits (gate ``d - 1``) or else each ``T``
        cell a gate of its own in row-major order; -1 for none."""
        gate_id = np.full(grid.shape, -1, np.int32)
        digits = sorted({int(ch) for ch in np.unique(grid) if ch in GATE_MARKS})
        tees = np.argwhere(grid == "T")
        if digits and len(tees):
            raise ValueError("layout mixes digit gates and 'T' gates: use one kind")
        if digits:
            if digits != list(range(1, len(digits) + 1)):
                raise ValueError(f"layout's gate digits must run 1..n without gaps, got {digits}")
            for d in digits:
                gate_id[grid == str(d)] = d - 1
        else:
            for i, (r, c) in enumerate(tees):
                gate_id[r, c] = i
        if gate_id.max() < 0:
            raise ValueError("layout must have at least one gate ('1'-'9' or 'T' cells)")
        return gate_id

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

    @property
    def obs_shape(self) -> tuple[int, int]:
        """The observation's ``(H, W')``: the maze with floor columns on its right up to an even
        width (42 x 42, drawn 84 x 84 at 2 pixels a cell, as the replication package's frames).
        """
        rows, cols = self.map_shape
        return rows, cols + cols % 2

    def observation_space(self, params) -> spaces.Box:
        rows, cols = self.map_shape
        size = rows * _words_a_row(cols) + 3 * self._num_ghosts + 2
        info = np.iinfo(np.int32)
        return spaces.Box(info.min, info.max, (size,), jnp.int32)

    # ----- dynamics ---------------------------------------------------------
    def _life_start(self, params: EnvParams) -> dict:
        """The fields a life starts from: the player and the ghosts at their starts."""
        g = self._num_ghosts
        return dict(
            pos=params.start.astype(jnp.int32),
            heading=jnp.int32(START_HEADING),
            wanted=jnp.int32(START_HEADING),
            stride=jnp.float32(0.0),
            ghosts=params.ghost_start.astype(jnp.int32),
            ghost_dir=jnp.zeros((g,), jnp.int32),
            ghost_stride=jnp.zeros((g,), jnp.float32),
            frightened=jnp.zeros((g,), bool),
            fright_left=jnp.int32(0),
            life_time=jnp.int32(0),
        )

    def reset_env(self, key, params: EnvParams):
        state = EnvState(
            **self._life_start(params),
            dots=params.dots,
            lives=jnp.asarray(params.num_lives, jnp.int32),
            dying=jnp.int32(0),
            paused=jnp.int32(0),
            bugs_seen=jnp.zeros((self._num_bugs,), bool),
            time=0,
        )
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        """One step: :func:`move_player`, the dot, :func:`gate_bugs`, :func:`move_ghosts` and
        :func:`caught`; a caught player dies for ``dying_steps`` where she was caught, then
        the next life waits ``restart_steps`` at the starts, the game standing still."""
        k_ghosts, k_frame = rng.fold_in(key, 0), rng.fold_in(key, 1)
        cols = self.map_shape[1]
        live = (state.dying <= 0) & (state.paused <= 0)
        pos, heading, wanted, stride, moved = move_player(params, state, action)
        pos, moved = jnp.where(live, pos, state.pos), moved & live
        ate = cell_bit(state.dots, pos) & live
        energized = ate & params.energizers[pos[0], pos[1]]
        dots = state.dots & ~_cell_mask(state.dots.shape, pos, ate)
        at_bug, fired, frame_ms = gate_bugs(params, state, pos, moved, k_frame)
        ghosts, ghost_dir, ghost_stride = move_ghosts(params, state, pos, k_ghosts)
        ghosts = jnp.where(live, ghosts, state.ghosts)
        out_of_pen = ~params.pen[state.ghosts[:, 0], state.ghosts[:, 1]]
        fright_left = jnp.where(energized, params.frightened_steps, state.fright_left - 1)
        frightened = jnp.where(energized, out_of_pen, state.frightened & (fright_left > 0))
        met = caught(state, pos, ghosts) & live
        eaten = met & frightened
        hit = jnp.any(met & ~frightened)
        lose = (hit & (params.dying_steps <= 0)) | (state.dying == 1)  # the death's last step
        ghosts = jnp.where(eaten[:, None], params.ghost_home.astype(jnp.int32), ghosts)
        game_reward = jnp.where(ate | jnp.any(eaten), params.dot_reward, 0.0).astype(jnp.float32)
        playing = dict(
            pos=pos,
            heading=heading,
            wanted=wanted,
            stride=stride,
            ghosts=ghosts,
            ghost_dir=ghost_dir,
            ghost_stride=ghost_stride,
            frightened=frightened & ~eaten,
            fright_left=fright_left,
            life_time=state.life_time + 1,
        )
        standing = {k: getattr(state, k) for k in playing}
        standing["life_time"] = state.life_time
        fields = jax.tree.map(
            lambda restart, play, stand: jnp.where(lose, restart, jnp.where(live, play, stand)),
            self._life_start(params),
            playing,
            standing,
        )
        state = EnvState(
            **fields,
            dots=dots,
            lives=state.lives - lose.astype(jnp.int32),
            dying=jnp.where(hit, params.dying_steps, jnp.maximum(state.dying - 1, 0)),
            paused=jnp.where(
                lose,
                params.restart_steps,
                jnp.where(state.dying > 0, state.paused, jnp.maximum(state.paused - 1, 0)),
            ),
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
        """What the frame shows, as ``int32[H * K + 3 G + 2]``: the dots' bits (:func:`pack_cells`),
        the ghosts' cells, the player's cell and which ghosts are frightened. :meth:`cells` makes
        the colour index a cell of it, :meth:`draw` the pixels.

        * chosen: the frame's contents, not the frame, because drawing even one colour index a cell
          (42 x 42) was most of the step: a learner that reads pixels draws them
          (:class:`jgtest.envs.wrappers.DrawFrames`), a campaign that reads none pays none.
        """
        words = jax.lax.bitcast_convert_type(state.dots, jnp.int32).reshape(-1)
        return jnp.concatenate(
            [words, state.ghosts.reshape(-1), state.pos, state.frightened.astype(jnp.int32)]
        ).astype(jnp.int32)

    def cells(self, obs: jax.Array) -> jax.Array:
        """The maze as ``uint8[H, W']`` colour indices, one a cell, of an observation
        (:meth:`get_obs`; :attr:`obs_shape`): floor, wall, dot or energizer (:data:`PALETTE`'s rows
        0-3), then the ghosts in order (frightened ones in row 4) and the player on top. The
        walls and energizers are the layout's.
        """
        rows, cols = self.map_shape
        width, g = self.obs_shape[1], self._num_ghosts
        n_words = rows * _words_a_row(cols)
        dots = jax.lax.bitcast_convert_type(obs[:n_words], jnp.uint32).reshape(rows, -1)
        ghosts = obs[n_words : n_words + 2 * g].reshape(g, 2)
        pos = obs[n_words + 2 * g : n_words + 2 * g + 2]
        frightened = obs[n_words + 2 * g + 2 :] != 0
        pad = ((0, 0), (0, width - cols))  # floor past the maze's right edge
        cell = jnp.arange(rows * width, dtype=jnp.int32).reshape(rows, width)
        u8 = jnp.uint8
        food = jnp.where(np.pad(self._energizers, pad), u8(_ENERGIZER), u8(_DOT))
        idx = jnp.where(
            np.pad(self._walls, pad),
            u8(_WALL),
            jnp.where(unpack_cells(dots, width), food, u8(_FLOOR)),
        )
        for i in range(g):
            here = cell == ghosts[i, 0] * width + ghosts[i, 1]
            colour = jnp.where(frightened[i], u8(_FRIGHTENED), u8(_GHOST0 + i % len(GHOST_RGB)))
            idx = jnp.where(here, colour, idx)
        return jnp.where(cell == pos[0] * width + pos[1], u8(_PLAYER), idx)

    def draw(self, obs: jax.Array) -> jax.Array:
        """Draws an observation (:meth:`get_obs`) as ``uint8[H*cell_px, W'*cell_px, 3]`` RGB
        pixels.

        Each cell of :meth:`cells` becomes ``cell_px`` × ``cell_px`` pixels of its colour, except
        that a dot covers only the centre of its cell, on the floor.
        """
        s = self.cell_px
        px = jnp.repeat(jnp.repeat(self.cells(obs), s, axis=0), s, axis=1)
        px = jnp.where((px == _DOT) & ~jnp.asarray(self._dot_mask), _FLOOR, px)
        return jnp.asarray(PALETTE)[px]

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return (state.lives <= 0) | ~jnp.any(state.dots != 0)

    # ----- testing hooks ----------------------------------------------------
    def validate_params(self, params: EnvParams) -> None:
        """Refuses bad maze arrays, positions off the map or on walls, and bad numbers.

        The gates are fixed by the paper, so :meth:`randomize` (base) leaves the params unchanged;
        a campaign that moves ``gate_id`` itself is checked here.
        """
        super().validate_params(params)
        walls = self.check_map_shape("walls", params.walls)
        for name in ("door", "pen", "pen_exit", "energizers"):
            self.check_map_shape(name, getattr(params, name))
        rows, cols = self.map_shape
        check_shape(self.name, "dots", params.dots, (rows, _words_a_row(cols)))
        gate_id = self.check_map_shape("gate_id", params.gate_id)
        ghosts = check_shape(self.name, "ghost_start", params.ghost_start, (self._num_ghosts, 2))
        check_shape(self.name, "release_steps", params.release_steps, (self._num_ghosts,))
        named = {"start": params.start}
        named.update({f"ghost {i} start": g for i, g in enumerate(ghosts)})
        check_cells(self.name, named, walls)
        ids = np.unique(gate_id[gate_id >= 0])
        if list(ids) != list(range(self._num_bugs)):
            raise ValueError(
                f"{self.name}: gate_id must mark gates 0..{self._num_bugs - 1}, "
                f"got {[int(i) for i in ids]}"
            )
        if np.any(walls & (gate_id >= 0)):
            r, c = np.argwhere(walls & (gate_id >= 0))[0]
            raise ValueError(f"{self.name}: gate {gate_id[r, c]} cell ({r}, {c}) is on a wall")
        lives = int(np.asarray(params.num_lives))
        if lives < 1:
            raise ValueError(f"{self.name}: num_lives must be at least 1, got {lives}")
        for field in ("ghost_chase_prob", "frightened_speed"):
            p = float(np.asarray(getattr(params, field)))
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{self.name}: {field} must be in [0, 1], got {p}")
        for field in ("player_speed", "ghost_speed"):
            v = np.asarray(getattr(params, field), np.float64)
            if v.shape != (2,) or not np.all((v > 0.0) & (v <= 1.0)):
                raise ValueError(
                    f"{self.name}: {field} must be two speeds in (0, 1] cells a step "
                    f"(up/down, across), got {v.tolist()}"
                )
        for field in ("base_frame_ms", "frame_noise_ms", "bug_delay_ms"):
            v = float(np.asarray(getattr(params, field)))
            if not (np.isfinite(v) and v >= 0.0):
                raise ValueError(f"{self.name}: {field} must be a finite number >= 0, got {v}")
