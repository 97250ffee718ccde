"""Kart Track: RELINE's SuperTuxKart case study on device (Tufano et al., 2022, §4).

A kart laps a closed track, exposing RELINE's coordinates (§4.1.1): ``path_done`` (``y``, the
arc length driven from the start line) and ``centering`` (``x``, the signed distance from the
centreline). The reward is ``r_g`` (§4.1.1, :func:`game_reward`). A hidden render-cost field
(§4.1.2, :func:`render_cost`) gives each step's frame time; its heavy spots are the injected
``low_fps`` bugs.

* chosen: a step is an action and its four frames, dt = 0.4 s, because a lap then takes about
  as many actions as the paper's episodes (§4.1.3).
* chosen: road limits at θ/2 and a barrier at 1.5 θ, because Fig. 4-(c) draws the limits there
  and the kart's projection on the centreline must stay unique.
* chosen: heavy spots near the start and late in the lap, on the racing line and at the road's
  edge, because there the paper's agents found their points (§4.2).
* chosen: the nearest heavy spot ahead is observed, because the paper's agent sees slow
  objects in its frames (§4.1).

Rules: :class:`KartTrack`; notes: ``docs/twins/kart-track.md``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.coverage import bucketize
from jgtest.envs import bitmask, rng
from jgtest.envs.base import TestingEnv
from jgtest.rewards import kart_progress_reward
from jgtest.signals import DEVICE_DEFAULT
from jgtest.types import Telemetry

#: (throttle, brake, steer) of each action; steer +1 = left (counter-clockwise).
ACTIONS = np.array(
    [
        [0.0, 0.0, 0.0],  # 0 coast
        [1.0, 0.0, 0.0],  # 1 throttle
        [0.0, 1.0, 0.0],  # 2 brake
        [1.0, 0.0, 1.0],  # 3 throttle + left
        [1.0, 0.0, -1.0],  # 4 throttle + right
        [0.0, 0.0, 1.0],  # 5 steer left
        [0.0, 0.0, -1.0],  # 6 steer right
    ],
    np.float32,
)
ACTION_NAMES = ("coast", "throttle", "brake", "throttle_left", "throttle_right", "left", "right")

#: Distances ahead (track units) at which the observation samples the curvature.
LOOK_AHEAD = (10.0, 25.0, 50.0, 80.0, 120.0)
#: Curvature (1/units) is multiplied by this before clipping to [-1, 1].
CURVATURE_SCALE = 50.0
#: How far ahead (track units) a heavy spot is in view (the last curvature sample).
VIEW_RANGE = LOOK_AHEAD[-1]
OBS_SIZE = 9 + len(LOOK_AHEAD)

#: Default heavy spots: (share of the lap at the centre, centering, radius, extra ms at the
#: centre). Pairs near the start, in the middle and in the last quarter of the lap, one of each
#: on the road beside the racing line (``|centering|`` 7, radius 5, +16 ms) and one at the
#: road's edge inside θ (``|centering|`` 17, radius 8, +18 ms), which only an agent rewarded
#: for slow frames has a reason to visit (``docs/twins/kart-track.md``). Both stay clear of the
#: line a lap follows: the package's 300 calibration laps have no frame over 19.5 ms (99.9th
#: percentile 14.87 ms, mean 12.76, ``benchmarks/results/reline_kart_package_logs.json``).
DEFAULT_SPOTS = (
    (0.025, 7.0, 5.0, 16.0),
    (0.06, -17.0, 8.0, 18.0),
    (0.33, 7.0, 5.0, 16.0),
    (0.55, 17.0, 8.0, 18.0),
    (0.78, -7.0, 5.0, 16.0),
    (0.83, 17.0, 8.0, 18.0),
)


@struct.dataclass
class Track:
    """A closed centreline polyline, driven in vertex order.

    Attributes:
      points: ``float32[N, 2]`` vertices (world x, y); vertex 0 is on the
        start/finish line; segment ``i`` goes from vertex ``i`` to ``i + 1``
        (mod N).
      cum: ``float32[N + 1]`` arc length at each vertex, ``cum[0] = 0``,
        ``cum[N]`` = the track length ``L``.
      curvature: ``float32[N]`` signed curvature at each vertex (1/units,
        positive: the track turns left).
    """

    points: jax.Array
    cum: jax.Array
    curvature: jax.Array

    @property
    def length(self) -> jax.Array:
        """Track length ``L`` (arc length of one lap)."""
        return self.cum[-1]


def default_centreline(
    half_extent: tuple[float, float] = (320.0, 180.0),
    exponent: float = 4.0,
    wiggle: float = 20.0,
    wiggle_freq: int = 3,
    num_dense: int = 20_000,
) -> np.ndarray:
    """Densely sampled default centreline: a superellipse with a radial wiggle.

    ``|x/a|^n + |y/b|^n = 1`` (a rounded rectangle for ``n = 4``), scaled by
    ``1 + wiggle / mean_radius * sin(wiggle_freq * t)``; counter-clockwise,
    starting at the rightmost point.

    Returns:
      ``float64[num_dense, 2]`` points (not closed: the last point is not the first).
    """
    a, b = half_extent
    t = np.linspace(0.0, 2.0 * np.pi, num_dense, endpoint=False)
    c, s = np.cos(t), np.sin(t)
    x = a * np.sign(c) * np.abs(c) ** (2.0 / exponent)
    y = b * np.sign(s) * np.abs(s) ** (2.0 / exponent)
    r = 1.0 + wiggle / np.hypot(x, y).mean() * np.sin(wiggle_freq * t)
    return np.stack([x * r, y * r], axis=1)


def make_track(centreline: np.ndarray, num_points: int = 512) -> Track:
    """Resamples a closed polyline at equal arc length into a :class:`Track`.

    Args:
      centreline: ``[M, 2]`` points of a closed curve in driving order (the
        closing segment from the last point to the first is implied), with the
        start line at point 0. Sample it densely: the curve is resampled
        linearly.
      num_points: vertices of the resampled track.

    Raises:
      ValueError: too few points or a degenerate curve.
    """
    pts = np.asarray(centreline, np.float64)
    if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 8:
        raise ValueError(f"centreline must be an [M, 2] array with M >= 8, got shape {pts.shape}")
    if num_points < 16:
        raise ValueError(f"num_points must be at least 16, got {num_points}")
    closed = np.concatenate([pts, pts[:1]])
    seg = np.linalg.norm(np.diff(closed, axis=0), axis=1)
    if np.any(seg <= 0):
        raise ValueError("centreline has repeated consecutive points")
    dense_cum = np.concatenate([[0.0], np.cumsum(seg)])
    targets = np.linspace(0.0, dense_cum[-1], num_points, endpoint=False)
    points = np.stack([np.interp(targets, dense_cum, closed[:, k]) for k in range(2)], axis=1)
    d = np.roll(points, -1, axis=0) - points
    lengths = np.linalg.norm(d, axis=1)
    cum = np.concatenate([[0.0], np.cumsum(lengths)])
    heading = np.arctan2(d[:, 1], d[:, 0])
    turn = np.angle(np.exp(1j * (heading - np.roll(heading, 1))))  # turn at vertex i
    curvature = turn / (0.5 * (lengths + np.roll(lengths, 1)))
    return Track(
        points=jnp.asarray(points, jnp.float32),
        cum=jnp.asarray(cum, jnp.float32),
        curvature=jnp.asarray(curvature, jnp.float32),
    )


def _segments(track: Track) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Segment starts ``[N, 2]``, vectors ``[N, 2]`` and lengths ``[N]``."""
    a = track.points
    d = jnp.roll(a, -1, axis=0) - a
    return a, d, track.cum[1:] - track.cum[:-1]


#: Segments searched on each side of the previous one when a step re-projects the
#: kart (a step moves at most ``max_speed * dt`` = 10.8 units; segments are ≈ 3.5).
PROJECTION_WINDOW = 8


def _project_over(track: Track, xy: jax.Array, candidates: jax.Array):
    """Nearest centreline point to ``xy`` among segments ``candidates``:
    (arc length, centering, segment, distance along it)."""
    a, d, lengths = (x[candidates] for x in _segments(track))
    rel = xy - a
    t = jnp.clip(jnp.sum(rel * d, axis=-1) / (lengths**2), 0.0, 1.0)
    diff = rel - t[:, None] * d
    dist2 = jnp.sum(diff**2, axis=-1)
    k = jnp.argmin(dist2)
    # Right of the driving direction d is where cross(d, v) < 0.
    cross = d[k, 0] * diff[k, 1] - d[k, 1] * diff[k, 0]
    centering = -jnp.sign(cross) * jnp.sqrt(dist2[k])
    along = t[k] * lengths[k]
    i = candidates[k]
    return jnp.mod(track.cum[i] + along, track.length), centering, i, along


def _project(track: Track, xy: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Nearest point of the whole centreline to ``xy`` (see :func:`_project_over`)."""
    return _project_over(track, xy, jnp.arange(track.points.shape[0]))


def _project_near(track: Track, xy: jax.Array, arc_hint: jax.Array):
    """:func:`_project` restricted to ``PROJECTION_WINDOW`` segments around the
    one holding ``arc_hint`` (O(window) instead of O(N) per step)."""
    n = track.points.shape[0]
    hint, _ = _segment_at(track, arc_hint)
    candidates = jnp.mod(hint + jnp.arange(-PROJECTION_WINDOW, PROJECTION_WINDOW + 1), n)
    return _project_over(track, xy, candidates)


def track_coordinates(track: Track, xy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """RELINE's coordinates of a world point (§4.1.1), lap-local.

    Args:
      track: the track.
      xy: ``float[2]`` world position.

    Returns:
      ``(arc_length, centering)``: arc length in ``[0, L)`` of the nearest
      centreline point, measured from the start line in the driving direction
      (the lap-local ``path_done``), and the signed distance to it, positive to
      the right of the driving direction, negative to the left.
    """
    arc, centering, _, _ = _project(track, jnp.asarray(xy, jnp.float32))
    return arc, centering


def _segment_at(track: Track, arc: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Segment index holding lap-local arc length ``arc mod L`` and the arc within it."""
    n = track.points.shape[0]
    s = jnp.mod(arc, track.length)
    i = jnp.clip(jnp.searchsorted(track.cum, s, side="right") - 1, 0, n - 1)
    return i, s - track.cum[i]


def _point_on_segment(
    track: Track, i: jax.Array, along: jax.Array, centering: jax.Array
) -> jax.Array:
    a, d, lengths = _segments(track)
    unit = d[i] / lengths[i]
    right = jnp.stack([unit[1], -unit[0]])
    return a[i] + along * unit + centering * right


def track_point(track: Track, arc: jax.Array, centering: jax.Array = 0.0) -> jax.Array:
    """World ``(x, y)`` at track coordinates (inverse of :func:`track_coordinates`).

    Args:
      track: the track.
      arc: arc length from the start line (taken mod ``L``).
      centering: signed offset from the centreline, positive to the right.
    """
    i, along = _segment_at(track, jnp.asarray(arc, jnp.float32))
    return _point_on_segment(track, i, along, jnp.asarray(centering, jnp.float32))


def track_heading(track: Track, arc: jax.Array) -> jax.Array:
    """Direction (radians, world frame) of the driving direction at ``arc``."""
    i, _ = _segment_at(track, jnp.asarray(arc, jnp.float32))
    _, d, _ = _segments(track)
    return jnp.arctan2(d[i, 1], d[i, 0])


def curvature_at(track: Track, arc: jax.Array) -> jax.Array:
    """Signed curvature (1/units, positive = left turn) of the centreline at ``arc``."""
    i, _ = _segment_at(track, jnp.asarray(arc, jnp.float32))
    return track.curvature[i]


def wrap_arc(delta: jax.Array, length: jax.Array) -> jax.Array:
    """``delta`` wrapped into ``[-length/2, length/2)`` (arc change across the start line)."""
    return jnp.mod(delta + 0.5 * length, length) - 0.5 * length


@struct.dataclass
class EnvState(environment.EnvState):
    xy: jax.Array  # float32[2] world position
    heading: jax.Array  # float32 radians, world frame
    speed: jax.Array  # float32 units/s, >= 0
    arc: jax.Array  # float32 lap-local arc length of the projection, [0, L)
    centering: jax.Array  # float32 signed distance from the centreline, + right
    path_done: jax.Array  # float32 arc length traversed since the start line (RELINE's y)
    bugs_seen: jax.Array  # uint32: bit k set once heavy spot k fired this episode (:mod:`bitmask`)
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    """Numeric parameters (vmappable). Distances in track units, times in s.

    Attributes:
      track: the :class:`Track` (set by the constructor).
      heavy_pos: ``float32[K, 2]`` heavy-spot centres as (path_done in
        ``[0, L)``, centering).
      heavy_radius: ``float32[K]`` spot radii (bug trigger distance; the extra
        render cost falls to 13.5% at the radius).
      heavy_ms: ``float32[K]`` extra render time at each spot's centre (ms).
      half_width: road limits, ``|centering| <= half_width`` is on the road
        (10: half of θ, §4.1.1).
      theta: RELINE's θ (§4.1.1): ``r_g = -1`` when ``|centering| > theta``.
      progress_cap: RELINE's M (§4.1.1): cap of the per-step progress reward.
      finish_bonus: reward for completing the lap (§4.1.1: +1,000).
      wall_offset: barrier at ``|centering| = wall_offset``.
      wall_speed_factor: speed kept when hitting the barrier.
      dt: seconds per step (an action and the four frames rendered after it).
      max_speed, accel, brake_decel, drag: longitudinal dynamics (units/s, units/s²).
      offtrack_max_speed, offtrack_decel: friction off the road.
      max_curvature, max_yaw_rate: steering (1/units, rad/s).
      base_ms: render time of four frames away from heavy spots (ms).
      scenery_ms: amplitude of the scenery's smooth render cost along the lap (ms).
      view_ms, view_distance: the roadside scenery in view (:func:`view_cost`): its render time
        at the barrier (ms) and how far ahead the kart looks (units).
      noise_ms: sd of the Gaussian render-time noise (ms).
      load_scale, load_offset_ms: the machine's load (:func:`frame_time`).
      threshold_ms: the low-FPS threshold ``t`` in force, for ``bugs_fired``.
      max_steps_in_episode: 225 steps of 0.4 s = 90 s (§4.1.3).
    """

    track: Track
    heavy_pos: jax.Array
    heavy_radius: jax.Array
    heavy_ms: jax.Array
    half_width: float = 10.0
    theta: float = 20.0
    progress_cap: float = 10.0
    finish_bonus: float = 1000.0
    wall_offset: float = 30.0
    wall_speed_factor: float = 0.5
    dt: float = 0.4
    max_speed: float = 27.0
    accel: float = 8.0
    brake_decel: float = 25.0
    drag: float = 1.5
    offtrack_max_speed: float = 12.0
    offtrack_decel: float = 15.0
    max_curvature: float = 0.125
    max_yaw_rate: float = 0.6
    base_ms: float = 12.76
    scenery_ms: float = 0.6
    view_ms: float = 6.0
    view_distance: float = 20.0
    noise_ms: float = 0.3
    load_scale: float = 1.0
    load_offset_ms: float = 0.0
    # The paper's t, which RELINE's rule gives on this twin (kart_probes; a campaign sets its own).
    threshold_ms: float = 18.36
    max_steps_in_episode: int = 225


def game_reward(
    params: EnvParams, centering: jax.Array, delta_path_done: jax.Array, lap_done: jax.Array
) -> jax.Array:
    """RELINE's SuperTuxKart game reward ``r_g`` (§4.1.1), with the game-only finish bonus.

    :func:`jgtest.rewards.kart_progress_reward` (``-1`` if ``|centering| > θ``,
    else ``max(min(Δpath_done, M), 0)``) plus ``finish_bonus`` (+1,000) when
    ``lap_done``.
    """
    progress = kart_progress_reward(centering, delta_path_done, params.theta, params.progress_cap)
    return (progress + jnp.where(lap_done, params.finish_bonus, 0.0)).astype(jnp.float32)


def frame_time(params: EnvParams, cost_ms: jax.Array, key: jax.Array) -> jax.Array:
    """Measured render time of the four frames.

    ``max(load_scale · cost + load_offset_ms + N(0, noise_ms²), 0)``: ``load_scale`` and
    ``load_offset_ms`` are 1 and 0 when the game is played alone; a training loop sets them to
    model "the load on the server ... higher during training" (§4.1.3).
    """
    noise = params.noise_ms * rng.normal(key)
    return jnp.maximum(params.load_scale * cost_ms + params.load_offset_ms + noise, 0.0)


def spot_in_view(params: EnvParams, path_done: jax.Array, centering: jax.Array) -> jax.Array:
    """``float32[3]``: (in view, distance ahead / VIEW_RANGE, centering offset / θ) of the
    nearest heavy spot at most ``VIEW_RANGE`` ahead and at most its radius behind
    (``(0, 1, 0)`` when none is).

    It stands for what the paper's agent sees in its screenshots (§4.1): the objects that make
    frames slow are visible before the kart reaches them. The distance is negative once the
    kart is past the spot's centre; the offset is the spot's centering minus the kart's.
    """
    ahead = wrap_arc(params.heavy_pos[:, 0] - path_done, params.track.length)
    candidate = (ahead >= -params.heavy_radius) & (ahead <= VIEW_RANGE)
    k = jnp.argmin(jnp.where(candidate, ahead, jnp.inf))
    seen = candidate[k]
    return jnp.stack(
        [
            seen.astype(jnp.float32),
            jnp.where(seen, jnp.clip(ahead[k] / VIEW_RANGE, -1.0, 1.0), 1.0),
            jnp.where(
                seen, jnp.clip((params.heavy_pos[k, 1] - centering) / params.theta, -2.0, 2.0), 0.0
            ),
        ]
    )


def heavy_distance(params: EnvParams, path_done: jax.Array, centering: jax.Array) -> jax.Array:
    """``float32[K]`` distance from ``(path_done, centering)`` to each heavy spot.

    The path_done difference is wrapped around the lap, so spot positions are
    lap-local and ``path_done`` may be accumulated over laps or negative.
    """
    ds = wrap_arc(path_done - params.heavy_pos[:, 0], params.track.length)
    dc = centering - params.heavy_pos[:, 1]
    return jnp.sqrt(ds**2 + dc**2)


def scenery_cost(params: EnvParams, path_done: jax.Array) -> jax.Array:
    """The scenery's smooth share of the render time (ms) along the lap, in ``±scenery_ms``.

    ``scenery_ms · (0.6 sin(2π·3s/L + 0.5) + 0.4 sin(2π·7s/L + 1.3))``, ``s`` the lap-local
    path: the paper's replays of one lap show "a clear trend" of render times along it (Fig. 3).
    """
    phase = 2.0 * jnp.pi * path_done / params.track.length
    return params.scenery_ms * (0.6 * jnp.sin(3.0 * phase + 0.5) + 0.4 * jnp.sin(7.0 * phase + 1.3))


def view_cost(params: EnvParams, centering: jax.Array, heading_error: jax.Array) -> jax.Array:
    """The render time (ms) of the scenery behind the barrier that the kart looks at.

    ``view_ms · clip((c_v - wall_offset) / view_distance, 0, 1)``, where
    ``c_v = centering - view_distance · sin(heading_error)`` is the centering of the point
    ``view_distance`` ahead of the kart along its heading (``heading_error`` + left). The
    scenery stands behind the right-hand barrier, the outside of the lap: a kart that drives
    down the road sees none of it, one that looks over that barrier sees it all.

    * chosen: fitted with the probes of :mod:`jgtest.methods.reline.kart_probes` to the
      package's logs, where a random kart's frames are slow far more often than rl-baseline's
      (``benchmarks/results/kart_probes.json``).
    """
    sight = centering - params.view_distance * jnp.sin(heading_error)
    beyond = (sight - params.wall_offset) / params.view_distance
    return params.view_ms * jnp.clip(beyond, 0.0, 1.0)


def render_cost(
    params: EnvParams, path_done: jax.Array, centering: jax.Array, heading_error=0.0
) -> jax.Array:
    """Noise-free render time (ms) of the four frames at a place and a view (§4.1.2's ``rT``).

    ``base_ms + scenery(path_done) + view(centering, heading_error)
    + Σ_k heavy_ms[k] * exp(-2 d_k² / heavy_radius[k]²)``, ``d_k`` from :func:`heavy_distance`,
    the scenery along the lap from :func:`scenery_cost`, the view from :func:`view_cost`
    (``heading_error`` 0: a kart facing down the road). Broadcasts over leading axes of the
    coordinates (use ``jax.vmap`` for maps).
    """
    d = heavy_distance(params, path_done, centering)
    bumps = params.heavy_ms * jnp.exp(-2.0 * d**2 / params.heavy_radius**2)
    along = params.base_ms + scenery_cost(params, path_done)
    return (along + view_cost(params, centering, heading_error) + jnp.sum(bumps, axis=-1)).astype(
        jnp.float32
    )


def drive(params: EnvParams, state: EnvState, action) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Throttle, brake and steering over one step of ``dt``: ``(xy, heading, speed)``.

    Speed changes by ``accel`` (throttle), ``brake_decel`` (brake) and ``drag``; off the road
    (``|centering| > half_width``) ``offtrack_decel`` slows the kart down to
    ``offtrack_max_speed``; speed stays in ``[0, max_speed]`` (no reverse). Steering turns the
    heading at ``min(speed * max_curvature, max_yaw_rate)`` rad/s. A traced out-of-range
    action is clipped into ``[0, 7)``.
    """
    action = jnp.clip(jnp.asarray(action, jnp.int32), 0, len(ACTIONS) - 1)
    throttle, brake, steer = jnp.asarray(ACTIONS)[action]
    pedals = throttle * params.accel - brake * params.brake_decel - params.drag
    speed = state.speed + params.dt * pedals
    off_road = jnp.abs(state.centering) > params.half_width
    slowed = jnp.maximum(speed - params.offtrack_decel * params.dt, params.offtrack_max_speed)
    speed = jnp.where(off_road & (speed > params.offtrack_max_speed), slowed, speed)
    speed = jnp.clip(speed, 0.0, params.max_speed)
    yaw_rate = steer * jnp.minimum(speed * params.max_curvature, params.max_yaw_rate)
    heading = jnp.mod(state.heading + yaw_rate * params.dt + jnp.pi, 2 * jnp.pi) - jnp.pi
    xy = state.xy + speed * params.dt * jnp.stack([jnp.cos(heading), jnp.sin(heading)])
    return xy, heading, speed


def track_progress(params: EnvParams, state: EnvState, xy: jax.Array, speed: jax.Array):
    """The kart's new track coordinates, the barrier and RELINE's progress ``Δpath_done``.

    The kart is projected on the centreline near its last arc; beyond ``|centering| =
    wall_offset`` it is put back on the barrier and keeps ``wall_speed_factor`` of its speed.
    ``Δpath_done`` is the change of the projection's arc length wrapped into ``[-L/2, L/2)``,
    so a full lap adds exactly ``L`` and driving backwards subtracts.

    Returns:
      ``(xy, speed, arc, centering, delta_path_done, path_done)``.
    """
    track = params.track
    arc, centering, seg, along = _project_near(track, xy, state.arc)
    hit = jnp.abs(centering) > params.wall_offset
    centering = jnp.clip(centering, -params.wall_offset, params.wall_offset)
    xy = jnp.where(hit, _point_on_segment(track, seg, along, centering), xy)
    speed = jnp.where(hit, speed * params.wall_speed_factor, speed)
    delta = wrap_arc(arc - state.arc, track.length)
    return xy, speed, arc, centering, delta, state.path_done + delta


def low_fps_bugs(
    params: EnvParams, key: jax.Array, arc: jax.Array, centering: jax.Array, heading_error, seen
):
    """The step's frame time and the heavy spots' ``low_fps`` bugs: ``(frame_ms, slow, fired)``.

    ``frame_ms`` is :func:`frame_time` of :func:`render_cost` at the kart's place and view
    (noise drawn with ``key``). Spot ``k`` is ``slow`` when the kart is within
    ``heavy_radius[k]`` of its centre and ``frame_ms > threshold_ms`` (RELINE's ``t``, §4.1.3);
    it has ``fired`` when it is slow and not ``seen`` before in the episode.
    """
    frame_ms = frame_time(params, render_cost(params, arc, centering, heading_error), key)
    inside = heavy_distance(params, arc, centering) <= params.heavy_radius
    slow_here = inside & (frame_ms > params.threshold_ms)
    return frame_ms, slow_here, slow_here & ~seen


class KartTrack(TestingEnv):
    """RELINE's SuperTuxKart case study on device (§4).

    The track: a closed centreline (:func:`default_centreline`, a rounded rectangle with a
    gentle wiggle, ``L`` about 1,791 units) driven counter-clockwise, resampled at equal arc
    length, vertex 0 on the start line. The road is ``|centering| <= half_width`` (10); a
    barrier stands at ``wall_offset`` (30). Dynamics: :func:`drive` and :func:`track_progress`.
    An episode ends when the lap is done (``path_done >= L``) or after 225 steps, the paper's
    90 s (§4.1.3).

    Actions (``Discrete(7)``, :data:`ACTIONS`): 0 coast, 1 throttle, 2 brake, 3 throttle +
    left, 4 throttle + right, 5 left (coasting), 6 right (coasting).

    Reward: :func:`game_reward`, ``r_g`` of §4.1.1: ``-1`` when ``|centering| > θ`` (20), else
    ``max(min(Δpath_done, M), 0)`` (M = 10), plus ``finish_bonus`` (+1,000) on the step the lap
    is completed. ``info`` also carries the step's ``centering`` and ``delta_path_done``
    (RELINE's ``x`` and ``δ_y``, for :class:`jgtest.rewards.RelineReward`).

    Frame time and bugs: :func:`render_cost` (``base_ms``, the scenery along the lap, the
    heavy spots' Gaussian bumps), measured under the machine's load by :func:`frame_time`;
    spot ``k`` is bug ``k`` (:func:`low_fps_bugs`).

    Observation (``float32[14]``): speed / max_speed; sin and cos of the heading error
    (+: pointing left of the driving direction); centering / θ (clipped to ±2); the
    centreline's signed curvature at :data:`LOOK_AHEAD` times :data:`CURVATURE_SCALE` (clipped
    to ±1); path_done / L (clipped to ±1); time / max_steps_in_episode; and the heavy spot in
    view (:func:`spot_in_view`): in view, distance ahead / :data:`VIEW_RANGE`, centering
    offset / θ.

    Telemetry: ``position`` = world ``(x, y)``; ``cell`` = (lap-local path_done, centering in
    ``±1.5 θ``) bucketed into ``cell_buckets`` (:meth:`cell_of`: RELINE's points, §4.1.3);
    ``frame_time_ms``. State fields can be set with ``state.replace``;
    :meth:`state_at` builds a consistent state from track coordinates.

    Args:
      heavy_spots: the ``K`` heavy spots (= injected ``low_fps`` bugs) as
        ``(share of the lap, centering, radius, extra ms)`` (default
        :data:`DEFAULT_SPOTS`); their params (``heavy_pos`` etc.) can also be
        set directly.
      cell_buckets: ``(path_done buckets, centering buckets)`` of the coverage
        cells; also ``map_shape``.
      centreline: ``[M, 2]`` closed polyline in driving order, start line at
        point 0 (default: :func:`default_centreline`).
      num_points: vertices of the resampled track.

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("KartTrack-v0")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> obs, state, r, term, trunc, info = env.step(jax.random.key(1), state, 1, params)
      >>> bool(info["telemetry"].frame_time_ms > 0)      # the render cost field's frame time
      True
    """

    #: Signals (:mod:`jgtest.signals`): the track's simulated rendering load per step.
    signals = DEVICE_DEFAULT | {"frame_time"}

    env_id = "KartTrack-v0"
    num_actions = len(ACTIONS)

    def __init__(
        self,
        heavy_spots: tuple[tuple[float, float, float, float], ...] = DEFAULT_SPOTS,
        cell_buckets: tuple[int, int] = (200, 24),
        centreline: np.ndarray | None = None,
        num_points: int = 512,
    ):
        super().__init__()
        spots = np.asarray(heavy_spots, np.float32)
        if spots.ndim != 2 or spots.shape[0] < 1 or spots.shape[1] != 4:
            raise ValueError(
                "heavy_spots must be a non-empty list of (share, centering, radius, ms), "
                f"got {heavy_spots!r}"
            )
        if len(spots) > bitmask.MAX_FLAGS:
            raise ValueError(f"heavy_spots: at most {bitmask.MAX_FLAGS} spots, got {len(spots)}")
        if not np.all((spots[:, 0] >= 0) & (spots[:, 0] < 1)):
            raise ValueError(
                f"heavy_spots: each share of the lap must be in [0, 1), got {spots[:, 0].tolist()}"
            )
        self._num_heavy = len(spots)
        buckets = tuple(int(b) for b in cell_buckets)
        if len(buckets) != 2 or min(buckets) < 1:
            raise ValueError(f"cell_buckets must be two positive ints, got {cell_buckets}")
        self._cell_buckets = buckets
        self.track = make_track(
            default_centreline() if centreline is None else centreline, num_points
        )
        length = float(self.track.length)
        self._default_params = EnvParams(
            track=self.track,
            heavy_pos=jnp.asarray(
                np.stack([spots[:, 0] * length, spots[:, 1]], axis=1), jnp.float32
            ),
            heavy_radius=jnp.asarray(spots[:, 2]),
            heavy_ms=jnp.asarray(spots[:, 3]),
        )

    # ----- metadata ---------------------------------------------------------
    @property
    def track_length(self) -> float:
        """Length ``L`` of the constructor's track."""
        return float(self.track.length)

    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ("low_fps",) * self._num_heavy

    @property
    def map_shape(self) -> tuple[int, int]:
        return self._cell_buckets

    def observation_space(self, params) -> spaces.Box:
        low = np.array(
            [0.0, -1.0, -1.0, -2.0] + [-1.0] * len(LOOK_AHEAD) + [-1.0, 0.0, 0.0, -1.0, -2.0],
            np.float32,
        )
        high = np.array(
            [1.0, 1.0, 1.0, 2.0] + [1.0] * len(LOOK_AHEAD) + [1.0, 1.0, 1.0, 1.0, 2.0], np.float32
        )
        return spaces.Box(jnp.asarray(low), jnp.asarray(high), (OBS_SIZE,), jnp.float32)

    # ----- dynamics ---------------------------------------------------------
    def state_at(
        self, params: EnvParams, path_done, centering=0.0, speed=0.0, heading_error=0.0
    ) -> EnvState:
        """A state with the kart at track coordinates (for tests and replays).

        Args:
          params: env params (their track is used).
          path_done: traversed path; the kart is placed at ``path_done mod L``.
          centering: signed offset from the centreline (+ right).
          speed: units/s.
          heading_error: heading relative to the driving direction (radians,
            + left; π drives backwards).
        """
        track = params.track
        path_done = jnp.asarray(path_done, jnp.float32)
        xy = track_point(track, path_done, centering)
        arc, c, _, _ = _project(track, xy)
        return EnvState(
            xy=xy,
            heading=(track_heading(track, path_done) + heading_error).astype(jnp.float32),
            speed=jnp.asarray(speed, jnp.float32),
            arc=arc,
            centering=c,
            path_done=path_done,
            bugs_seen=jnp.uint32(0),
            time=0,
        )

    def reset_env(self, key, params: EnvParams):
        """The kart stands on the start line, on the centreline, facing the driving direction."""
        del key
        state = self.state_at(params, 0.0)
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        """One step: :func:`drive`, :func:`track_progress`, :func:`game_reward`, then
        :func:`low_fps_bugs` (the step's frame time and the heavy spots' bugs)."""
        xy, heading, speed = drive(params, state, action)
        xy, speed, arc, centering, delta, path_done = track_progress(params, state, xy, speed)
        lap_done = path_done >= params.track.length
        r_game = game_reward(params, centering, delta, lap_done)
        seen = bitmask.unpack(state.bugs_seen, self._num_heavy)
        # as the observation computes it, so that XLA computes it once for both
        heading_error = heading.astype(jnp.float32) - track_heading(
            params.track, arc.astype(jnp.float32)
        )
        frame_ms, slow_here, fired = low_fps_bugs(params, key, arc, centering, heading_error, seen)
        state = EnvState(
            xy=xy.astype(jnp.float32),
            heading=heading.astype(jnp.float32),
            speed=speed.astype(jnp.float32),
            arc=arc.astype(jnp.float32),
            centering=centering.astype(jnp.float32),
            path_done=path_done.astype(jnp.float32),
            bugs_seen=state.bugs_seen | bitmask.pack(list(slow_here)),
            time=state.time + 1,
        )
        telemetry = Telemetry.make(
            position=xy,
            cell=self.cell_of(params, arc, centering),
            bugs_fired=fired,
            game_reward=r_game,
            frame_time_ms=frame_ms,
        )
        info = {
            "telemetry": telemetry,
            "centering": state.centering,
            "delta_path_done": delta.astype(jnp.float32),
        }
        return self.get_obs(state, params), state, r_game, lap_done, info

    def cell_of(self, params: EnvParams, path_done, centering) -> jax.Array:
        """Coverage cell of (lap-local path_done, centering): row-major in ``map_shape``."""
        n_path, n_cent = self._cell_buckets
        span = 1.5 * params.theta
        row = bucketize(jnp.mod(path_done, params.track.length), 0.0, params.track.length, n_path)
        col = bucketize(centering, -span, span, n_cent)
        return (row * n_cent + col).astype(jnp.int32)

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        params = self.default_params if params is None else params
        track = params.track
        err = state.heading - track_heading(track, state.arc)
        ahead = state.arc + jnp.asarray(LOOK_AHEAD, jnp.float32)
        curv = jax.vmap(lambda s: curvature_at(track, s))(ahead)
        obs = jnp.concatenate(
            [
                jnp.stack(
                    [
                        jnp.clip(state.speed / params.max_speed, 0.0, 1.0),
                        jnp.sin(err),
                        jnp.cos(err),
                        jnp.clip(state.centering / params.theta, -2.0, 2.0),
                    ]
                ),
                jnp.clip(curv * CURVATURE_SCALE, -1.0, 1.0),
                jnp.stack(
                    [
                        jnp.clip(state.path_done / track.length, -1.0, 1.0),
                        jnp.clip(state.time / params.max_steps_in_episode, 0.0, 1.0),
                    ]
                ),
                spot_in_view(params, state.arc, state.centering),
            ]
        )
        return obs.astype(jnp.float32)

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.path_done >= params.track.length

    # ----- testing hooks ----------------------------------------------------
    def validate_params(self, params: EnvParams) -> None:
        """Refuses heavy spots off the track's coordinate range, bad radii, bad geometry."""
        super().validate_params(params)
        points = np.asarray(params.track.points)
        if points.shape != tuple(self.track.points.shape):
            expected = tuple(self.track.points.shape)
            raise ValueError(f"{self.name}: track has {points.shape} points, expected {expected}")
        self._check_spot_shapes(params)
        wall = self._check_scalars(params)
        self._check_spots(params, wall)
        self._check_barrier(params, wall)

    def _check_spot_shapes(self, params: EnvParams) -> None:
        k = self._num_heavy
        pos = np.asarray(params.heavy_pos)
        radius = np.asarray(params.heavy_radius)
        extra = np.asarray(params.heavy_ms)
        if pos.shape != (k, 2) or radius.shape != (k,) or extra.shape != (k,):
            raise ValueError(
                f"{self.name}: heavy_pos, heavy_radius, heavy_ms must have shapes "
                f"({k}, 2), ({k},), ({k},); got {pos.shape}, {radius.shape}, {extra.shape}"
            )

    def _check_scalars(self, params: EnvParams) -> float:
        """Refuses non-finite, non-positive or negative scalars; returns ``wall_offset``."""
        scalars = {name: float(np.asarray(getattr(params, name))) for name in _SCALARS}
        for name, value in scalars.items():
            if not np.isfinite(value):
                raise ValueError(f"{self.name}: {name} must be finite, got {value}")
        for name in _POSITIVE:
            if scalars[name] <= 0:
                raise ValueError(f"{self.name}: {name} must be positive, got {scalars[name]}")
        for name in _NON_NEGATIVE:
            if scalars[name] < 0:
                raise ValueError(f"{self.name}: {name} must be non-negative, got {scalars[name]}")
        factor = scalars["wall_speed_factor"]
        if not 0.0 <= factor <= 1.0:
            raise ValueError(f"{self.name}: wall_speed_factor must be in [0, 1], got {factor}")
        return scalars["wall_offset"]

    def _check_spots(self, params: EnvParams, wall: float) -> None:
        """Refuses heavy spots off the track, non-positive radii and negative extra times."""
        length = float(np.asarray(params.track.length))
        pos = np.asarray(params.heavy_pos)
        radius = np.asarray(params.heavy_radius)
        extra = np.asarray(params.heavy_ms)
        for i in range(self._num_heavy):
            s, c = (float(v) for v in pos[i])
            where = f"{self.name}: heavy spot {i} at (path_done={s:.2f}, centering={c:.2f})"
            if not (np.isfinite(s) and 0.0 <= s < length):
                raise ValueError(
                    f"{where} is off the track: path_done must be in [0, {length:.2f})"
                )
            if not (np.isfinite(c) and abs(c) <= wall):
                raise ValueError(
                    f"{where} is off the track: |centering| must be at most wall_offset={wall:g}"
                )
            if not (np.isfinite(radius[i]) and radius[i] > 0):
                raise ValueError(f"{where} has radius {radius[i]}; it must be positive")
            if not (np.isfinite(extra[i]) and extra[i] >= 0):
                raise ValueError(f"{where} has heavy_ms {extra[i]}; it must be non-negative")

    def _check_barrier(self, params: EnvParams, wall: float) -> None:
        """Refuses a barrier band that does not project uniquely onto the centreline."""
        length = float(np.asarray(params.track.length))
        curvature = np.abs(np.asarray(params.track.curvature))
        min_radius = 1.0 / max(float(curvature.max()), 1e-9)
        if wall >= min_radius:
            raise ValueError(
                f"{self.name}: wall_offset={wall:g} must be below the track's tightest radius "
                f"{min_radius:.1f}"
            )
        arcs = np.asarray(params.track.cum[:-1])
        probe = np.concatenate([arcs, arcs])
        offsets = np.concatenate([np.full_like(arcs, wall), np.full_like(arcs, -wall)])
        got = np.asarray(_check_projection(params.track, jnp.asarray(probe), jnp.asarray(offsets)))
        err = np.abs((got - probe + 0.5 * length) % length - 0.5 * length)
        if err.max() > 0.05 * length:
            raise ValueError(
                f"{self.name}: wall_offset={wall:g} is too wide for this track: points on the "
                "barrier project onto another part of the centreline"
            )


#: :meth:`KartTrack.validate_params`' scalar params (those with a float default): all finite, some
#: positive, some >= 0.
_SCALARS = tuple(
    field.name for field in dataclasses.fields(EnvParams) if isinstance(field.default, float)
)
_POSITIVE = (
    "half_width",
    "theta",
    "wall_offset",
    "dt",
    "max_speed",
    "load_scale",
    "view_distance",
)
_NON_NEGATIVE = (
    "progress_cap",
    "accel",
    "brake_decel",
    "drag",
    "offtrack_max_speed",
    "offtrack_decel",
    "max_curvature",
    "max_yaw_rate",
    "base_ms",
    "scenery_ms",
    "view_ms",
    "noise_ms",
)


@jax.jit
def _check_projection(track: Track, arcs: jax.Array, offsets: jax.Array) -> jax.Array:
    """Lap-local arc of the projection of ``track_point(arcs, offsets)`` (vectorised)."""

    def one(s, c):
        return _project(track, track_point(track, s, c))[0]

    return jax.vmap(one)(arcs, offsets)
