"""Scripted experts of ``ParkWorld-v0``: PPGTA's demonstrations as data (§V-B).

PPGTA imitates engineers following the pathways and "moving around an OOI 360 degrees to cover
all its faces": :func:`path_action` and :func:`circle_action` play them, and
:func:`demonstrations` records them in batches.

* chosen: a share of random actions executed, the expert's own labelled, because noise in the
  demonstrator shows recoveries (Laskey et al., "DART", CoRL 2017).
* chosen: with a :class:`Driver` the learner plays and the expert labels, because that is
  DAgger (Ross, Gordon and Bagnell, AISTATS 2011).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from scipy import ndimage

from jgtest.envs.park import (
    BACK,
    FORWARD,
    RIGHT,
    TURN_LEFT,
    TURN_RIGHT,
    EnvState,
    ParkWorld,
    trace_cells,
)

#: The bearings the path follower weighs: every 30°, ``ParkWorld``'s turn, so a player whose yaw
#: starts on the turn grid can face each exactly, the pathways' four directions among them.
HEADINGS = 12
#: The demonstrations' share of uniformly random actions in place of the expert's (our choice:
#: enough that trajectories differ and show recoveries; more noise was tried, see
#: ``benchmarks/results/findings_games_reline_ppgta.json``).
DEMONSTRATION_EPSILON = 0.1
#: Distance kept from the object by the 360° walk (cells).
CIRCLE_RADIUS = 1.0
#: Where a recorded 360° walk starts: uniformly 2–3 cells off the object, the player's yaw up to
#: 0.6 rad (34°) off facing it (our choice: the paper's engineers began their recordings where
#: they chose; wider starts were tried, see
#: ``benchmarks/results/findings_games_reline_ppgta.json``).
CIRCLE_START_DISTANCE = (2.0, 3.0)
CIRCLE_START_YAW = 0.6


def _wrap(angle):
    return jnp.arctan2(jnp.sin(angle), jnp.cos(angle))


def _steer(yaw, heading, turn):
    """``(whether to turn, which turn)``: turn toward ``heading`` when it is more than half a
    turn away."""
    diff = _wrap(heading - yaw)
    return jnp.abs(diff) > turn / 2, jnp.where(diff > 0, TURN_RIGHT, TURN_LEFT)


def nearest_path_heading(env: ParkWorld) -> jax.Array:
    """``float32[size, size]``: per cell, the heading (radians) to its nearest pathway cell."""
    _, (rows, cols) = ndimage.distance_transform_edt(~env.map.path, return_indices=True)
    r, c = np.mgrid[: env.size, : env.size]
    return jnp.asarray(np.arctan2(rows - r, cols - c), jnp.float32)


class FollowerMemory(struct.PyTreeNode):
    """What the path follower remembers: the cells its traces covered (``walked``,
    ``bool[size, size]``, :func:`jgtest.envs.park.trace_cells`) and :func:`guide_field` of them
    (``guide``, ``int32[size, size]``), refreshed by :func:`refresh_guide` (it is a flood fill:
    once in a while, not every step)."""

    walked: jax.Array
    guide: jax.Array


#: :func:`guide_field`'s value where no unwalked pathway can be reached.
FAR = 1 << 20


def guide_field(env: ParkWorld, walked: jax.Array) -> jax.Array:
    """``int32[size, size]``: each walkable cell's 4-connected walking distance (cells) to the
    nearest pathway cell not ``walked``; :data:`FAR` where none is reachable. Jittable (a flood
    fill in ``lax.while_loop``, one ring a pass)."""
    walk, target = env.walkable_mask, env.path_mask & ~walked
    dist = jnp.where(target, 0, FAR).astype(jnp.int32)

    def relax(carry):
        dist, _ = carry
        pad = jnp.pad(dist, 1, constant_values=FAR)
        near = jnp.minimum(
            jnp.minimum(pad[:-2, 1:-1], pad[2:, 1:-1]), jnp.minimum(pad[1:-1, :-2], pad[1:-1, 2:])
        )
        new = jnp.where(walk, jnp.minimum(dist, near + 1), FAR)
        return new, jnp.any(new != dist)

    return jax.lax.while_loop(lambda c: c[1], relax, (dist, jnp.bool_(True)))[0]


def new_memory(env: ParkWorld) -> FollowerMemory:
    walked = jnp.zeros((env.size, env.size), bool)
    return FollowerMemory(walked=walked, guide=guide_field(env, walked))


def remember(memory: FollowerMemory, positions: jax.Array) -> FollowerMemory:
    """``memory`` with the traces at ``positions [..., 2]`` walked (the guide is not refreshed)."""
    rows, cols, within = trace_cells(positions)
    size = memory.walked.shape[0]
    inside = within & (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
    walked = memory.walked.at[jnp.where(inside, rows, size), jnp.where(inside, cols, size)].set(
        True, mode="drop"
    )
    return memory.replace(walked=walked)


def refresh_guide(env: ParkWorld, memory: FollowerMemory) -> FollowerMemory:
    return memory.replace(guide=guide_field(env, memory.walked))


#: The 4 neighbours' ``(d_row, d_col)`` for walking down the guide (its own 4-connected steps: a
#: diagonal step can clip a blocked corner).
_NEIGHBOURS = np.array([(-1, 0), (0, -1), (0, 1), (1, 0)], np.int32)


class _Bearings(NamedTuple):
    """What the path follower sees along its :data:`HEADINGS` bearings."""

    headings: jax.Array  # float32[HEADINGS] the fixed bearings (radians)
    cells: jax.Array  # int32[HEADINGS, 4, 2] the (x, y) cells 1–4 ahead along each
    pathy: jax.Array  # float32[HEADINGS] pathway cells among the first 3
    open_ahead: jax.Array  # bool[HEADINGS] whether the player can go that way


def _bearings(env: ParkWorld, params, state: EnvState) -> _Bearings:
    """The bearings are fixed (turning in place changes no score but the straight-on one). A
    bearing is open when the next cell is walkable (not a dead end: crates, water) and the body
    can take a step that way (not a lane's edge against a tree)."""
    headings = jnp.arange(HEADINGS) * (2 * jnp.pi / HEADINGS)
    directions = jnp.stack([jnp.cos(headings), jnp.sin(headings)], axis=-1)
    ahead = jnp.asarray([1.0, 2.0, 3.0, 4.0])[None, :, None] * directions[:, None, :]
    cells = jnp.clip(jnp.floor(state.pos + ahead).astype(jnp.int32), 0, env.size - 1)
    pathy = env.path_mask[cells[:, :3, 1], cells[:, :3, 0]].astype(jnp.float32).sum(axis=1)
    step = lambda d: env.slide(state.pos, params.move_speed * d, params.radius)
    stepped = jax.vmap(step)(directions)
    walkable = env.walkable_mask[cells[:, 0, 1], cells[:, 0, 0]]
    moved = jnp.linalg.norm(stepped - state.pos, axis=-1) > 0.5 * params.move_speed
    return _Bearings(headings, cells, pathy, walkable & moved)


def _snap(bearings: _Bearings, angle: jax.Array) -> jax.Array:
    """The open bearing nearest ``angle``."""
    headings = bearings.headings
    return headings[jnp.argmax(jnp.cos(headings - angle) - 10.0 * ~bearings.open_ahead)]


def path_action(
    env: ParkWorld,
    params,
    state: EnvState,
    key,
    to_path: jax.Array,
    epsilon: float = 0.1,
    memory: FollowerMemory | None = None,
):
    """The path follower's action; ``to_path`` from :func:`nearest_path_heading`.

    On a pathway it heads where the pathway goes: :data:`HEADINGS` bearings scored by the
    pathway cells 1–3 cells ahead, straight on preferred, a little random preference at
    junctions, never into a blocked cell. Off a pathway it heads to the nearest pathway cell.
    It turns when the heading is more than half a turn away, else walks forward; with
    probability ``epsilon`` a uniformly random movement action replaces its own.

    With a ``memory`` of the pathway already walked (:class:`FollowerMemory`, what a test
    engineer remembers of the park), headings onto unwalked pathway 1–4 cells ahead score 1.5 a
    cell more; when no heading shows any, the follower walks down
    :attr:`FollowerMemory.guide` (toward the centre of the 4-neighbour nearest to unwalked
    pathway), on or off a pathway.
    """
    k_pref, k_noise, k_random = jax.random.split(key, 3)
    cell = jnp.floor(state.pos).astype(jnp.int32)
    on_path = env.path_mask[cell[1], cell[0]]
    bearings = _bearings(env, params, state)
    straight = jnp.cos(bearings.headings - state.yaw)
    # A random junction choice; with a memory, the unwalked way decides.
    jitter = 0.3 if memory is None else 0.05
    preference = jitter * jax.random.uniform(k_pref, (HEADINGS,))
    score = bearings.pathy + 0.9 * straight + preference - 10.0 * ~bearings.open_ahead
    to_nearest = _snap(bearings, to_path[cell[1], cell[0]])
    heading = jnp.where(on_path, bearings.headings[jnp.argmax(score)], to_nearest)
    if memory is not None:
        heading = _toward_unwalked(env, memory, state, cell, on_path, bearings, score, heading)
    turning, turn_action = _steer(state.yaw, heading, jnp.radians(params.turn_deg))
    return _with_noise(jnp.where(turning, turn_action, FORWARD), k_noise, k_random, epsilon)


def _toward_unwalked(env, memory, state, cell, on_path, bearings: _Bearings, score, heading):
    """:func:`path_action`'s heading with a memory: onto unwalked pathway in sight, else down
    the guide."""
    unwalked = env.path_mask & ~memory.walked
    seen = unwalked[bearings.cells[..., 1], bearings.cells[..., 0]].astype(jnp.float32)
    fresh = seen.sum(axis=1) * bearings.open_ahead
    local = bearings.headings[jnp.argmax(score + 1.5 * fresh)]
    around = jnp.clip(cell[::-1][None, :] + _NEIGHBOURS, 0, env.size - 1)  # (row, col)
    walkable = env.walkable_mask[around[:, 0], around[:, 1]]
    distance = jnp.where(walkable, memory.guide[around[:, 0], around[:, 1]], FAR)
    # To the centre of the neighbour down the guide.
    toward = around[jnp.argmin(distance)][::-1] + 0.5 - state.pos
    down_guide = _snap(bearings, jnp.arctan2(toward[1], toward[0]))
    guided = jnp.where(distance.min() < FAR, down_guide, heading)
    return jnp.where(on_path & (fresh.sum() > 0), local, guided)


def circle_action(
    params,
    state: EnvState,
    target: jax.Array,
    key,
    epsilon: float = 0.1,
    radius: float = CIRCLE_RADIUS,
):
    """The 360° walk's action around object ``target``: :func:`walk_around` (face the object,
    keep ``radius`` from it, strafe right: a walk around it, facing it), replaced with
    probability ``epsilon`` by a uniformly random movement action. Its progress is the angle
    swept around the object (:func:`swept_angle`)."""
    k_noise, k_random = jax.random.split(key)
    centre = params.ooi_pos[target]
    action = walk_around(state.pos, state.yaw, centre, params.turn_deg, radius)
    return _with_noise(action, k_noise, k_random, epsilon)


def _with_noise(action, k_noise, k_random, epsilon):
    """``action``, or with probability ``epsilon`` a uniform one of the six movement actions."""
    random = jax.random.uniform(k_noise) < epsilon
    return jnp.where(random, jax.random.randint(k_random, (), 0, 6), action).astype(jnp.int32)


def walk_around(position, yaw, centre, turn_deg, radius: float = CIRCLE_RADIUS) -> jax.Array:
    """The 360° walk's noiseless action from the player's ``position`` (cells) and ``yaw``
    (radians) around ``centre``, a turn key turning ``turn_deg``: face the object, keep
    ``radius`` (±0.3) from it, strafe right. What a bridged game's scripted test plays from its
    telemetry. Jittable."""
    rel = centre - position
    distance = jnp.linalg.norm(rel)
    turning, turn_action = _steer(yaw, jnp.arctan2(rel[1], rel[0]), jnp.radians(turn_deg))
    keep = jnp.where(
        distance > radius + 0.3, FORWARD, jnp.where(distance < radius - 0.3, BACK, RIGHT)
    )
    return jnp.where(turning, turn_action, keep).astype(jnp.int32)


def object_in_view(objects: dict, target) -> tuple[jax.Array, jax.Array]:
    """``(box, pixels)`` of object ``target`` among a frame's ``info["objects"]`` (zeros when it
    is not drawn)."""
    hit = (objects["id"] == target) & (target >= 0)
    slot = jnp.argmax(hit)
    box = jnp.where(hit.any(), objects["box"][slot], 0)
    return box, jnp.where(hit.any(), objects["pixels"][slot], 0)


def swept_angle(positions: jax.Array, centre: jax.Array) -> jax.Array:
    """Total angle (radians, signed) swept around ``centre`` by a trajectory
    ``positions [T, 2]``."""
    angles = jnp.arctan2(positions[:, 1] - centre[1], positions[:, 0] - centre[0])
    return jnp.sum(_wrap(jnp.diff(angles)))


@functools.partial(jax.jit, static_argnums=0)  # a reset renders: op by op it takes seconds
def start_near(env: ParkWorld, params, target: jax.Array, key, distance: float = 2.5) -> EnvState:
    """A state ``distance`` cells from object ``target``, at the first walkable of 16 bearings
    (from a random one), facing it (a uniform start, facing it, if none is walkable)."""
    k_reset, k_angle = jax.random.split(key)
    _, state = env.reset_env(k_reset, params)
    first = jax.random.uniform(k_angle, (), maxval=2 * jnp.pi)
    bearings = first + jnp.arange(16) * (2 * jnp.pi / 16)
    centre = params.ooi_pos[target]
    spots = centre[None, :] + distance * jnp.stack([jnp.cos(bearings), jnp.sin(bearings)], axis=-1)
    cells = jnp.clip(jnp.floor(spots).astype(jnp.int32), 0, env.size - 1)
    ok = env.walkable_mask[cells[:, 1], cells[:, 0]]
    # Walled in all round: a uniform start.
    spot = jnp.where(ok.any(), spots[jnp.argmax(ok)], state.pos)
    facing = jnp.arctan2(centre[1] - spot[1], centre[0] - spot[0])
    return state.replace(pos=spot, yaw=facing)


class Driver(NamedTuple):
    """A learner that plays a recording in the expert's place (:func:`demonstrations`'
    ``driver``): the expert only labels the states the learner visits (DAgger, Ross, Gordon and
    Bagnell, AISTATS 2011). Per trajectory, unbatched: ``init(frame, info) -> carry`` on the
    first frame, then at every step ``act(carry, frame, info, key) -> (action, carry)`` on the
    current one."""

    init: Callable
    act: Callable


def demonstrations(
    env: ParkWorld,
    params,
    key,
    kind: str,
    num: int,
    steps: int,
    epsilon: float = DEMONSTRATION_EPSILON,
    targets: jax.Array | None = None,
    driver: Driver | None = None,
) -> dict:
    """``num`` expert trajectories of ``steps`` steps, in one jitted call (``lax.scan`` over
    steps, ``vmap`` over trajectories).

    Args:
      env: the park.
      params: its params (the objects).
      key: the trajectories' key.
      kind: ``"path"`` (from uniform starts in ``env.demo_region``) or ``"circle"`` (around an
        object, from :data:`CIRCLE_START_DISTANCE` cells off it, yaw up to
        :data:`CIRCLE_START_YAW` off facing it).
      num: trajectories.
      steps: steps a trajectory.
      epsilon: the share of uniformly random actions executed in place of the expert's.
      targets: ``int32[num]`` objects to circle (``"circle"``; default: drawn among the
        reachable ones).
      driver: a learner whose actions are executed instead of the noisy expert's (``epsilon``
        is then unused); ``intended`` still holds the expert's action on every frame: the
        learner's own states, labelled.

    Returns:
      dict of ``[num, steps, ...]`` arrays: ``frames`` (uint8 RGB, the frame the action was
      chosen on), ``actions`` (executed: ``epsilon`` of them random), ``intended`` (the expert's
      action on that frame, before the noise: what imitation learns, as DART labels a noisy
      demonstrator's trajectories), ``positions``, ``on_path``, ``od_box``, ``od_visible``,
      ``target_box`` and ``target_pixels`` (the circled object's box and pixels in the frame,
      zeros where out of view or for path following); and ``targets`` (``[num]``, circle only,
      else −1).
    """
    if kind not in ("path", "circle"):
        raise ValueError(f"kind must be 'path' or 'circle', got {kind!r}")
    if num < 1 or steps < 1:
        raise ValueError(f"num and steps must be at least 1, got {num} and {steps}")
    reachable = np.flatnonzero(env.ooi_reachable(params))
    if targets is None:
        rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
        targets = jnp.asarray(rng.choice(reachable, num))
    to_path = nearest_path_heading(env)
    targets = jnp.asarray(targets, jnp.int32)
    return _demonstrations(env, params, key, kind, num, steps, epsilon, targets, to_path, driver)


def _demonstrations(env, params, key, kind, num, steps, epsilon, targets, to_path, driver):
    @jax.jit
    def run(params, key, targets, to_path):
        def one(key, target):
            k_start, k_run = jax.random.split(key)
            state = _demonstration_start(env, params, kind, target, k_start)
            frame, info = env.observe(state, params)
            learner = driver.init(frame, info) if driver is not None else ()
            body = functools.partial(
                _demonstration_step, env, params, kind, target, to_path, epsilon, driver
            )
            carry = (state, frame, info, learner)
            _, out = jax.lax.scan(body, carry, jax.random.split(k_run, steps))
            return out

        out = jax.vmap(one)(jax.random.split(key, num), targets)
        no_targets = jnp.full((num,), -1, jnp.int32)
        return {**out, "targets": targets if kind == "circle" else no_targets}

    return run(params, key, targets, to_path)


def _demonstration_start(env, params, kind, target, key) -> EnvState:
    """A recording's first state: near ``target`` (``"circle"``) or in the demonstration
    corner (``"path"``)."""
    if kind != "circle":
        return env.reset_for_demonstration(key, params)[1]
    k_near, k_distance, k_yaw = jax.random.split(key, 3)
    low, high = CIRCLE_START_DISTANCE
    distance = jax.random.uniform(k_distance, (), minval=low, maxval=high)
    state = start_near(env, params, target, k_near, distance)
    off = jax.random.uniform(k_yaw, (), minval=-CIRCLE_START_YAW, maxval=CIRCLE_START_YAW)
    return state.replace(yaw=state.yaw + off)


def _demonstration_step(env, params, kind, target, to_path, epsilon, driver, carry, k):
    """One recorded step (:func:`demonstrations`): the expert's intended action, the executed
    one (noisy, or the ``driver``'s) and what the frame showed."""
    state, frame, info, learner = carry
    k_act, k_step = jax.random.split(k)
    if kind == "circle":
        # The expert's action, then the noise drawn from the same keys as circle_action's.
        intended = circle_action(params, state, target, k_act, 0.0)
        k_noise, k_random = jax.random.split(k_act)
    else:
        intended = path_action(env, params, state, k_act, to_path, 0.0)
        _, k_noise, k_random = jax.random.split(k_act, 3)
    if driver is None:
        action = _with_noise(intended, k_noise, k_random, epsilon)
    else:
        action, learner = driver.act(learner, frame, info, jax.random.fold_in(k, 1))
    next_frame, next_state, _, _, next_info = env.step_env(k_step, state, action, params)
    shown = target if kind == "circle" else -1
    target_box, target_pixels = object_in_view(info["objects"], shown)
    out = {
        "frames": frame,
        "actions": action,
        "intended": intended,
        "positions": state.pos,
        "on_path": info["on_path"],
        "od_box": info["od_box"],
        "od_visible": info["od_visible"],
        "target_box": target_box,
        "target_pixels": target_pixels,
    }
    return (next_state, next_frame, next_info, learner), out
