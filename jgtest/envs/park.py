"""ParkWorld: PPGTA's open-world park, first person, rendered on device (PPGTA §V-A, §V-C).

PPGTA tests "a big city park" whose objects of interest stand along the pathways, half of each
type with a texture bug (§V-A), with nine keyboard actions and episodes of 2,000 steps from
uniform starts (§V-C). This twin: a generated park (:mod:`jgtest.envs.park_map`) seen by a
first-person camera (:mod:`jgtest.envs.park_render`).

* chosen: a 320-cell park, pathway nodes every 50 cells, steps of 0.35 cells and 30° turns,
  because with them a random agent and the path follower test what the paper's did
  (``python benchmarks/park_probes.py``).
* chosen: a 90° view, because it is the Unreal shooter template's camera (§V-C).
* chosen: a trace covers half the pathway's width, because one pass should cover the pathway,
  as the paper's drawn traces do (§VI-A).

Rules: :class:`ParkWorld`; notes: ``docs/twins/park-world.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.envs import park_map
from jgtest.envs.base import TestingEnv
from jgtest.envs.park_render import (
    CLEAN,
    LOW_RES,
    OOI_TYPES,
    STRETCHED,
    Camera,
    make_textures,
    render,
)
from jgtest.types import Telemetry

#: How far from the player's path the pathway counts as covered (cells): half the pathway width,
#: so one pass along a 2-cell pathway covers both its lanes. PPGTA measures "the covered pathways
#: area" on bird's-eye maps with the agent's traces drawn over the pathways (§VI-A, Fig. 7); the
#: width of the drawn trace is not given, and the player's own cell alone would count one lane of
#: two per pass.
TRACE_RADIUS = 1.0
#: The park's side in cells and its pathway nodes' grid step (set with the probes of
#: ``benchmarks/park_probes.py``; ``docs/twins/park-world.md``).
SIZE, NODE_SPACING = 320, 50.0

NUM_ACTIONS = 9
FORWARD, LEFT, BACK, RIGHT, TURN_LEFT, TURN_RIGHT, LOOK_UP, LOOK_DOWN, JUMP = range(9)
ACTION_NAMES = ("W", "A", "S", "D", "turn_left", "turn_right", "look_up", "look_down", "jump")
MAX_PITCH = 2


@struct.dataclass
class EnvState(environment.EnvState):
    pos: jax.Array  # float32[2] (x, y) in cells
    yaw: jax.Array  # float32 radians (0: +x, increasing toward +y, i.e. to the right on screen)
    pitch: (
        jax.Array
    )  # int32 in [-MAX_PITCH, MAX_PITCH] (positive: looking down, the horizon raised)
    jump: jax.Array  # int32 steps left of the jump
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    ooi_pos: jax.Array  # float32[K, 2] (x, y) centres of the objects
    ooi_type: jax.Array  # int32[K] index into OOI_TYPES
    ooi_bug: jax.Array  # int32[K] 0 clean, 1 low resolution, 2 stretched
    move_speed: float = 0.35
    strafe_speed: float = 0.2
    turn_deg: float = 30.0
    radius: float = 0.2
    jump_steps: int = 6
    jump_height: float = 0.35
    max_steps_in_episode: int = 2000


def _on_turn_grid(yaw, turn_deg):
    """``yaw`` rounded to a whole number of turns from east: the headings a player can turn to
    are then the same in every episode, the pathways' four directions among them when
    ``turn_deg`` divides 90."""
    turn = jnp.radians(turn_deg)
    return jnp.arctan2(jnp.sin(jnp.round(yaw / turn) * turn), jnp.cos(jnp.round(yaw / turn) * turn))


def trace_cells(position, radius: float = TRACE_RADIUS):
    """``(rows, cols, within)``: the cells a disc of ``radius`` around ``position [..., 2]``
    (``(x, y)`` in cells) touches, as ``[..., M]`` candidates (the ``(2⌊radius⌋ + 3)²`` cells
    around the player's) and which of them it touches (the nearest point of the cell within
    ``radius``). What a trace covers (:data:`TRACE_RADIUS`). Works on numpy and jax arrays alike
    (operators only), so the campaign's books and the follower's memory agree."""
    span = int(np.floor(radius)) + 1
    dx, dy = (
        np.asarray(v).ravel()
        for v in np.meshgrid(np.arange(-span, span + 1), np.arange(-span, span + 1))
    )
    x, y = position[..., 0:1], position[..., 1:2]
    cols, rows = (x // 1).astype(np.int32) + dx, (y // 1).astype(np.int32) + dy
    gap = lambda centre, p: (
        abs(centre + 0.5 - p) - 0.5
    )  # from p to the cell's nearer edge (negative inside)
    gap_x, gap_y = gap(cols, x), gap(rows, y)
    within = (gap_x * (gap_x > 0)) ** 2 + (gap_y * (gap_y > 0)) ** 2 <= radius**2
    return rows, cols, within


class ParkWorld(TestingEnv):
    """PPGTA's park (§V-A, §V-C).

    Actions (``Discrete(9)``, the paper's keys): 0 ``W`` forward, 1 ``A`` strafe left, 2 ``S``
    back, 3 ``D`` strafe right, 4 turn left, 5 turn right, 6 look up, 7 look down, 8 jump. A move
    that would enter a blocked cell (water, a tree, crates, an invisible wall) slides along the
    blocked axis or stops (:meth:`slide`); the player keeps ``radius`` from blocked cells.
    Looking up or down moves the view ``pitch`` steps in ``[-2, 2]``; a jump lifts the camera
    for ``jump_steps`` steps (it crosses nothing: the blockages are taller). A traced
    out-of-range action is clipped. Episodes start on a uniform cell of the main park
    (:meth:`reset_env`) and never terminate; they are truncated after 2,000 steps.

    ``info`` of every step (:meth:`observe`):

    * ``objects``: the ``max_visible`` nearest objects drawn in the frame, as fixed-size
      arrays: ``id`` (−1 for an empty slot), ``type``, ``bug`` (0 clean, 1 low resolution,
      2 stretched), ``box`` (``(row0, col0, row1, col1)``, half-open pixels), ``pixels`` shown
      and ``visible`` (at least ``min_visible_pixels``): the detector's ground truth.
    * ``od_box`` / ``od_visible``: the box of the object in view (the visible one with the
      most pixels), for :func:`jgtest.envs.wrappers.od_mask`.
    * ``on_path``: the player stands on a pathway.
    * ``telemetry``: position ``(x, y)``, the coverage cell (the map cell), no oracle bugs
      (texture bugs are found by testing, not by an oracle: see
      :mod:`jgtest.methods.park.inspector`).

    Args:
      size: the map's side in cells (at least 32; :data:`SIZE` by default).
      map_seed: the map's seed (the park's layout; the objects are in ``EnvParams``).
      num_oois: objects of interest (a multiple of 8 keeps each type's clean/bugged split exact).
      res: frame side in pixels (64, or 128 as the paper).
      max_visible: objects drawn per frame and reported in ``info["objects"]``.
      min_visible_pixels: pixels an object must show to count as visible.
      path_width: pathway width in cells (:func:`jgtest.envs.park_map.generate`).
      node_spacing: the pathway nodes' grid step in cells.
      pocket_share: each sealed corner pocket's side, as a share of ``size``.
    """

    #: Signals (:mod:`jgtest.signals`): pixels and objects; its bugs are found by tests, so no
    #: oracle inputs, and no state vector or reward for Wuji.
    signals = frozenset({"cells", "position", "rgb_frames", "objects"})

    env_id = "ParkWorld-v0"
    num_actions = NUM_ACTIONS
    bugs_found_by_tests = True

    def __init__(
        self,
        size: int = SIZE,
        map_seed: int = 0,
        num_oois: int = 247,
        res: int = 64,
        max_visible: int = 8,
        min_visible_pixels: int = 12,
        path_width: int = 2,
        node_spacing: float = NODE_SPACING,
        pocket_share: float = 1 / 6,
    ):
        super().__init__()
        if res < 16:
            raise ValueError(f"{self.env_id}: res must be at least 16 pixels, got {res}")
        if num_oois < max_visible:
            raise ValueError(
                f"{self.env_id}: num_oois ({num_oois}) must be at least max_visible "
                f"({max_visible}), the objects drawn a frame"
            )
        try:
            self.map = park_map.generate(
                size,
                map_seed,
                path_width=path_width,
                node_spacing=node_spacing,
                pocket_share=pocket_share,
            )
        except ValueError as error:
            raise ValueError(f"{self.env_id}: {error}") from None
        if num_oois > len(self.map.ooi_slots):
            raise ValueError(
                f"{self.env_id}: {num_oois} OOIs do not fit the {len(self.map.ooi_slots)} "
                "places along the pathways"
            )
        self.size, self.num_oois = int(size), int(num_oois)
        self.min_visible_pixels = int(min_visible_pixels)
        self.camera = Camera(res=int(res), max_visible=int(max_visible))
        self._build_arrays()

    def _build_arrays(self) -> None:
        """The map's device arrays, the start regions, the textures and the default objects."""
        self._floor = jnp.asarray(self.map.floor, jnp.int32)
        drawn = np.where(
            np.isin(self.map.solid, (park_map.TREE, park_map.BLOCKAGE)), self.map.solid, 0
        )
        self._drawn = jnp.asarray(drawn, jnp.int32)
        self.walkable_mask = jnp.asarray(self.map.walkable)
        self.path_mask = jnp.asarray(self.map.path)
        rows, cols = np.mgrid[: self.size, : self.size]
        self.demo_region = (
            self.map.main & (rows < self.size // 4) & (cols >= self.size - self.size // 4)
        )
        self._starts = jnp.asarray(
            np.argwhere(self.map.main & ~self.demo_region), jnp.int32
        )  # (row, col)
        self._demo_starts = jnp.asarray(np.argwhere(self.demo_region), jnp.int32)
        self._slots = jnp.asarray(self.map.ooi_slots, jnp.int32)
        self._textures = jnp.asarray(make_textures())
        placeholder = EnvParams(
            ooi_pos=jnp.zeros((self.num_oois, 2), jnp.float32),
            ooi_type=jnp.zeros((self.num_oois,), jnp.int32),
            ooi_bug=jnp.zeros((self.num_oois,), jnp.int32),
        )
        self._default_params = jax.jit(self.randomize)(jax.random.key(0), placeholder)

    # ----- metadata ---------------------------------------------------------
    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ()

    def texture_bugs(self, params: EnvParams) -> int:
        """The objects whose texture is bugged (found by testing them, not by an oracle)."""
        return int((params.ooi_bug != 0).sum())

    @property
    def map_shape(self) -> tuple[int, int]:
        return (self.size, self.size)

    def observation_space(self, params) -> spaces.Box:
        res = self.camera.res
        return spaces.Box(0, 255, (res, res, 3), jnp.uint8)

    # ----- dynamics ---------------------------------------------------------
    def reset_env(self, key, params: EnvParams):
        """An episode's start: a uniform cell of the main park outside :attr:`demo_region`
        (§V-C)."""
        return self._start(key, params, self._starts)

    def reset_for_demonstration(self, key, params: EnvParams):
        """A path demonstration's start: a uniform cell of :attr:`demo_region`, the corner of the
        park where PPGTA's path-following demonstrations were recorded, "discarded during agent
        evaluation" (§V-B): no episode starts there (its pathway still counts for coverage)."""
        return self._start(key, params, self._demo_starts)

    def _start(self, key, params: EnvParams, starts: jax.Array):
        k_cell, k_offset, k_yaw = jax.random.split(key, 3)
        cell = starts[jax.random.randint(k_cell, (), 0, starts.shape[0])]
        offset = jax.random.uniform(k_offset, (2,), minval=0.3, maxval=0.7)
        state = EnvState(
            pos=jnp.stack([cell[1], cell[0]]).astype(jnp.float32) + offset,
            yaw=_on_turn_grid(
                jax.random.uniform(k_yaw, (), minval=-jnp.pi, maxval=jnp.pi), params.turn_deg
            ),
            pitch=jnp.int32(0),
            jump=jnp.int32(0),
            time=0,
        )
        return self.observe(state, params)[0], state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
        turn = jnp.radians(params.turn_deg)
        yaw = (
            state.yaw
            + jnp.where(action == TURN_RIGHT, turn, 0.0)
            - jnp.where(action == TURN_LEFT, turn, 0.0)
        )
        yaw = jnp.arctan2(jnp.sin(yaw), jnp.cos(yaw))
        forward = jnp.stack([jnp.cos(state.yaw), jnp.sin(state.yaw)])
        right = jnp.stack([-jnp.sin(state.yaw), jnp.cos(state.yaw)])
        move = (
            jnp.where(action == FORWARD, params.move_speed, 0.0) * forward
            - jnp.where(action == BACK, params.move_speed, 0.0) * forward
            + jnp.where(action == RIGHT, params.strafe_speed, 0.0) * right
            - jnp.where(action == LEFT, params.strafe_speed, 0.0) * right
        )
        pos = self.slide(state.pos, move, params.radius)
        pitch = jnp.clip(
            state.pitch + jnp.where(action == LOOK_DOWN, 1, 0) - jnp.where(action == LOOK_UP, 1, 0),
            -MAX_PITCH,
            MAX_PITCH,
        )
        jump = jnp.where(
            (action == JUMP) & (state.jump == 0), params.jump_steps, jnp.maximum(state.jump - 1, 0)
        )
        new_state = EnvState(
            pos=pos,
            yaw=yaw,
            pitch=pitch.astype(jnp.int32),
            jump=jump.astype(jnp.int32),
            time=state.time + 1,
        )
        obs, info = self.observe(new_state, params)
        reward = jnp.float32(0.0)
        return obs, new_state, reward, jnp.bool_(False), info

    def slide(self, pos, move, radius):
        """``pos + move``, each axis on its own, an axis's move dropped if it would bring the player
        within ``radius`` of a blocked cell."""

        def free(p):
            corners = p[None, :] + radius * jnp.array(
                [[-1, -1], [-1, 1], [1, -1], [1, 1]], jnp.float32
            )
            cells = jnp.floor(corners).astype(jnp.int32)
            inside = (cells >= 0).all(axis=1) & (cells < self.size).all(axis=1)
            ok = self.walkable_mask[
                jnp.clip(cells[:, 1], 0, self.size - 1), jnp.clip(cells[:, 0], 0, self.size - 1)
            ]
            return jnp.all(inside & ok)

        step_x = pos + move * jnp.array([1.0, 0.0])
        pos = jnp.where(free(step_x), step_x, pos)
        step_y = pos + move * jnp.array([0.0, 1.0])
        return jnp.where(free(step_y), step_y, pos)

    def eye_height(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Camera height: 0.5 cells, raised along a sine arc during a jump."""
        phase = state.jump / (
            params.jump_steps + 1
        )  # in (0, 1) while the jump lasts, 0 on the ground
        return 0.5 + params.jump_height * jnp.sin(jnp.pi * phase)

    def _render(self, state: EnvState, params: EnvParams):
        return render(
            self.camera,
            self._floor,
            self._drawn,
            self._textures,
            state.pos,
            state.yaw,
            state.pitch.astype(jnp.float32),
            self.eye_height(state, params),
            params.ooi_pos,
            params.ooi_type,
            params.ooi_bug,
        )

    def view(self, state: EnvState, params: EnvParams) -> tuple[jax.Array, jax.Array]:
        """``(frame, mask)``: the frame and, per pixel, the object it shows (``int32[res, res]``,
        −1 none; what UnrealCV's ``object_mask`` draws in each object's colour)."""
        frame, objects = self._render(state, params)
        return frame, objects["mask"]

    def observe(self, state: EnvState, params: EnvParams):
        """``(frame, info)`` of a state (the class docstring lists ``info``)."""
        frame, objects = self._render(state, params)
        ids = objects["id"]
        safe = jnp.maximum(ids, 0)
        visible = (ids >= 0) & (objects["pixels"] >= self.min_visible_pixels)
        in_view = jnp.argmax(jnp.where(visible, objects["pixels"], -1))
        cell_rc = jnp.floor(state.pos).astype(jnp.int32)[::-1]
        info = {
            "objects": {
                "id": jnp.where(ids >= 0, ids, -1),
                "type": jnp.where(ids >= 0, params.ooi_type[safe], -1),
                "bug": jnp.where(ids >= 0, params.ooi_bug[safe], -1),
                "box": jnp.where((ids >= 0)[:, None], objects["box"], 0),
                "pixels": objects["pixels"],
                "visible": visible,
            },
            "od_box": jnp.where(visible[in_view], objects["box"][in_view], 0),
            "od_visible": visible[in_view],
            "on_path": self.path_mask[cell_rc[0], cell_rc[1]],
            "telemetry": Telemetry.make(
                position=state.pos,
                cell=cell_rc[0] * self.size + cell_rc[1],
                bugs_fired=jnp.zeros((0,), bool),
                game_reward=0.0,
            ),
        }
        return frame, info

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        return self.observe(state, self.default_params if params is None else params)[0]

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return jnp.bool_(False)

    # ----- objects ----------------------------------------------------------
    def randomize(self, key, params: EnvParams) -> EnvParams:
        """New object placement (jittable): ``num_oois`` distinct places beside the pathways drawn
        uniformly (:attr:`park_map.ParkMap.ooi_slots`, pockets included), the four types in equal
        shares, and within each type every other object bugged, low resolution and stretched in
        turn (§V-A's 50/50 split per type)."""
        k_slot, k_offset = jax.random.split(key)
        n = self.num_oois
        _, chosen = jax.lax.top_k(jax.random.gumbel(k_slot, (self._slots.shape[0],)), n)
        cells = self._slots[chosen]
        offset = jax.random.uniform(k_offset, (n, 2), minval=0.35, maxval=0.65)
        index = jnp.arange(n)
        kinds = (index % len(OOI_TYPES)).astype(jnp.int32)
        rank = index // len(OOI_TYPES)  # the object's rank among its type
        bugs = jnp.where(
            rank % 2 == 1, jnp.where((rank // 2) % 2 == 0, LOW_RES, STRETCHED), CLEAN
        ).astype(jnp.int32)
        return params.replace(
            ooi_pos=cells[:, ::-1].astype(jnp.float32) + offset, ooi_type=kinds, ooi_bug=bugs
        )

    def ooi_reachable(self, params: EnvParams) -> np.ndarray:
        """``bool[K]``: whether each object stands in the main park (a flood fill of the map from
        the start region, :func:`park_map.reachable_from`); the others are behind invisible walls
        or blockages."""
        cells = np.floor(np.asarray(params.ooi_pos)).astype(int)[:, ::-1]
        return self.map.main[cells[:, 0], cells[:, 1]]

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        pos = np.asarray(params.ooi_pos)
        if pos.ndim != 2 or pos.shape[1] != 2:
            raise ValueError(
                f"{self.name}: ooi_pos must be [K, 2] (x, y) positions, got shape {pos.shape}"
            )
        k = pos.shape[0]
        off = np.flatnonzero(~np.all((pos >= 0) & (pos < self.size), axis=1))
        if off.size:
            raise ValueError(
                f"{self.name}: OOI {off[0]} at {pos[off[0]].tolist()} is off the "
                f"{self.size}x{self.size} map"
            )
        kinds, bugs = np.asarray(params.ooi_type), np.asarray(params.ooi_bug)
        if kinds.shape != (k,) or bugs.shape != (k,):
            raise ValueError(
                f"{self.name}: ooi_type and ooi_bug must have shape ({k},), got {kinds.shape} "
                f"and {bugs.shape}"
            )
        bad = np.flatnonzero((kinds < 0) | (kinds >= len(OOI_TYPES)))
        if bad.size:
            raise ValueError(
                f"{self.name}: OOI {bad[0]} has unknown type {kinds[bad[0]]}; known: "
                + ", ".join(f"{i} {t}" for i, t in enumerate(OOI_TYPES))
            )
        bad = np.flatnonzero((bugs < 0) | (bugs > STRETCHED))
        if bad.size:
            raise ValueError(
                f"{self.name}: OOI {bad[0]} has unknown texture bug {bugs[bad[0]]} "
                "(0 clean, 1 low resolution, 2 stretched)"
            )
        for what in ("move_speed", "strafe_speed"):
            value = float(np.asarray(getattr(params, what)))
            if not 0 < value < 1:
                raise ValueError(
                    f"{self.name}: {what} is a movement step and must be in (0, 1) cells, "
                    f"got {value}"
                )
        radius = float(np.asarray(params.radius))
        if not 0 <= radius < 0.5:
            raise ValueError(
                f"{self.name}: radius must be in [0, 0.5) cells (the player fits in a cell), "
                f"got {radius}"
            )
        turn = float(np.asarray(params.turn_deg))
        if not 0 < turn <= 180:
            raise ValueError(f"{self.name}: turn_deg must be in (0, 180] degrees, got {turn}")
