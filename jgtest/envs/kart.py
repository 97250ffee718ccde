"""Kart Track: the on-device twin of RELINE's SuperTuxKart case study (Tufano et al., 2022, §4).

A kart drives laps of a closed track. The game exposes the two coordinates
RELINE reads from SuperTuxKart (§4.1.1):

* ``path_done`` (the paper's ``y``): "the path traversed by the agent from the
  starting line of the track". Here: the arc length, along the centreline, of
  the kart's projection on the centreline, accumulated since the start line.
  Each step adds the signed change of the projection's arc length, wrapped into
  ``[-L/2, L/2)`` (``L`` the track length), so crossing the start line forwards
  keeps counting (a full lap adds exactly ``L``) and driving backwards
  subtracts (backing over the start line gives a negative ``path_done``).
* ``centering`` (the paper's ``x``): "centering equals 0 if the agent is at the
  center of the track ... going towards right results in positive values of
  the centering value, going left in negative values". Here: the signed
  distance from the centreline, positive to the right of the driving
  direction.

:func:`track_coordinates` computes both coordinates (the lap-local arc length)
for any world point, :func:`track_point` is its inverse.

Track. A smooth closed centreline (by default a rounded rectangle, a
superellipse of half-extents 320 x 180 with a gentle radial wiggle; length
``L`` ≈ 1,791 units, tightest radius ≈ 49 units), driven counter-clockwise,
resampled into ``num_points`` vertices at equal arc length, vertex 0 on the
start/finish line. Centering is in the paper's units (Fig. 4-(c)): θ = 20
"roughly represents the double of |x| when the agent approaches the sides of
the road" (§4.1.1), so the road's limits are ``|centering| <= half_width`` =
10, and the band 10 < |centering| <= θ is off the road (the kart is slowed by
friction) but not penalised by ``r_g``. (Fig. 4-(c) draws the limits at ≈ ±18
on an axis normalised so that θ = 20 reads ≈ 36: 10 × 36/20 = 18.) A barrier
at ``|centering| = wall_offset`` (30 = 1.5 θ) stops the kart from leaving the
track's surroundings (it is put back on the barrier and loses speed), so the
projection on the centreline is always unique.

Dynamics (kinematic): one step is one action followed by the four frames
RELINE renders after it (§4.1.2), ``dt`` = 0.4 s of game time, so that a lap
takes about as many steps as the paper's: its trained rl-baseline produced
48,825 render times in 300 episodes (§4.1.3), ≈ 163 actions an episode
(episodes stopped when the kart got stuck, footnote 2, so about a lap), with
"~70 seconds ... sufficient to complete a lap"; a good driver laps this track
in ≈ 170 steps (68 s). At the top speed a step advances ≈ 10.8 units, so the
cap M = 10 on Δpath_done binds on straights and a step of progress weighs what
a slow frame does, the paper's reason for M ("the same maximum reward also
given by the performance reward function", §4.1.1).
Speed is in ``[0, max_speed]`` (no reverse), changed by throttle ``accel``,
brake ``brake_decel`` and rolling ``drag``; off the road an extra
``offtrack_decel`` slows the kart down to ``offtrack_max_speed``. Steering
turns the heading at ``min(speed * max_curvature, max_yaw_rate)`` rad/s.
Episodes last up to 225 steps = 90 s as in the paper (§4.1.3: "a maximum
duration of 90 seconds") or end when the lap is completed (``path_done >= L``).

Actions (``Discrete(7)``):

====  ======================================
 0    coast
 1    throttle
 2    brake
 3    throttle + steer left
 4    throttle + steer right
 5    steer left (coasting)
 6    steer right (coasting)
====  ======================================

A traced out-of-range action is clipped into ``[0, 7)``.

Game reward (RELINE §4.1.1), with ``Δpath_done = path_done_i - path_done_{i-1}``::

    r_g = -1                              if |centering| > θ     (θ = 20)
          max(min(Δpath_done, M), 0)      otherwise              (M = 10)
        + finish_bonus (+1,000)           on the step the lap is completed

The lap's completion terminates the episode. RELINE's performance reward
``r_p`` (§4.1.2, threshold ``t``) is built by the method from
``telemetry.frame_time_ms``, not here.

Render cost. A hidden field gives the time (ms) to render the four frames that
follow each action (§4.1.2, "rT_i"): ``base_ms``, plus a smooth scenery term
along the lap (``scenery_ms``, ±1.5 ms: the paper's replays of one lap show "a
clear trend" of render times along it, Fig. 3, which its reliability check
measures with Spearman's ρ, median 0.91; 1.5 ms gives a median ρ ≈ 0.90
over replays of one lap), plus ``K`` heavy spots,
Gaussian bumps in ``(path_done mod L, centering)`` coordinates
(:func:`render_cost`), plus Gaussian noise of sd ``noise_ms`` drawn with the
step key; the machine's load scales and shifts it (:func:`frame_time`,
``load_scale`` and ``load_offset_ms``: 1 and 0 when the game is played alone,
set by a training loop to model "the load on the server ... higher during
training", §4.1.3, so that RELINE's δ is a measurement). Spot ``k`` adds
``heavy_ms[k] * exp(-2 d² / heavy_radius[k]²)`` at distance ``d`` from its
centre. The default spots (:data:`DEFAULT_SPOTS`) follow what the paper
found: some near the start line, where its random agent found all its points,
and some near the end of the lap, where RELINE's points concentrated besides
the start (§4.2), plus two in the middle; half of them on the racing line
(``|centering|`` ≤ 2, radius 10, +16 ms) and half broad areas at the road's
edge, inside θ (``|centering|`` 15, radius 16, +18 ms), which only an agent
rewarded for slow frames has a reason to visit. Sized so that a driver's
five-σ threshold (≈ 24.5-25.5 ms: the spots it drives through or near widen
the spread, as real slow spots do) leaves the cores of the spots above it on
most visits. The paper's RELINE found its points (173; rl-baseline 33)
"within or very close [to] the area of the game we ask it to explore", the
band up to θ beyond the road's limits, while rl-baseline's are "closer to the
track" (§4.2, Fig. 4-(c)); the edge areas are that band's slow places. They
are broad (their core above ``t``, ≈ 17 units across, takes 3-4 steps at the
off-road speed) by choice: narrow edge spots (centering 12, radius 8, a core
about one step long) drew neither agent off the racing line (RELINE 14
points, rl-baseline 15, 400k steps each).

Injected bugs: the heavy spots, of kind ``"low_fps"``. Bug ``k`` fires the
first time per episode a step inside spot ``k`` (within ``heavy_radius[k]``)
renders slower than ``threshold_ms``, the low-FPS threshold in force
(RELINE's ``t``; a method sets it from its calibration, §4.1.3), i.e. when
the low-FPS oracle fires there. ``reward`` is ``r_g``
(``telemetry.game_reward``).

``info`` also carries the step's ``centering`` and ``delta_path_done`` (RELINE's
``x`` and ``δ_y``, for :class:`jgtest.rewards.RelineReward`).

Observation: ``float32[14]``:

====  ==================================================================
 0    speed / max_speed, in [0, 1]
 1    sin(heading error), heading error = kart heading - track tangent
      (positive: the kart points to the left of the driving direction)
 2    cos(heading error)
 3    centering / θ, clipped to [-2, 2]
 4-8  signed curvature of the centreline (positive: left turn) 10, 25, 50,
      80 and 120 units ahead, times ``CURVATURE_SCALE`` (50), clipped to
      [-1, 1]
 9    path_done / L, clipped to [-1, 1]
 10   time / max_steps_in_episode, in [0, 1]
 11   1 if a heavy spot is in view, else 0
 12   its distance ahead along the track / ``VIEW_RANGE`` (120), in
      [-1, 1] (negative: the kart is inside it, past its centre); 1 if none
 13   (its centering - the kart's centering) / θ, clipped to [-2, 2]; 0 if none
====  ==================================================================

The spot in view (:func:`spot_in_view`) stands for what the paper's agent
sees: it plays from four 200x150 grayscale screenshots (§4.1), in which the
objects that make frames slow (the sheep of Fig. 2-(c)) are visible before
the kart reaches them; a vector twin without them would ask its agents to
locate spots from ``path_done`` alone (a spot's core is 0.6% of the lap).
The nearest spot whose centre is at most ``VIEW_RANGE`` ahead (the farthest
curvature sample) and not yet more than its radius behind is in view.

Telemetry: ``position`` = world ``(x, y)`` of the kart (for bird's-eye maps of
the track); ``cell`` = bucket of (lap-local path_done in ``[0, L]``, centering
in ``[-1.5 θ, 1.5 θ]``) with ``cell_buckets`` buckets each (row = path_done
bucket, column = centering bucket, so ``map_shape = cell_buckets``): RELINE's
"points" (§4.1.3, a point "is represented by its coordinates"), by default
200 × 24 cells of ≈ 9 × 2.5 units, about one step of a fast kart long, so the
cells at the core of a heavy spot render above ``t`` on most visits of an
agent that drives through it; ``frame_time_ms`` = the noisy render time of the
step.

State fields (``xy``, ``heading``, ``speed``, ``arc``, ``centering``,
``path_done``, ``bugs_seen``, ``time``) can be set with ``state.replace`` to
place the kart; :meth:`KartTrack.state_at` builds a consistent state from
track coordinates.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.coverage import bucketize
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

#: Default heavy spots: (share of the lap at the centre, centering, radius,
#: extra ms at the centre). Pairs near the start, in the middle and in the last
#: quarter of the lap, one of each on the racing line and one a broad area at the
#: road's edge (see the module docstring). The
#: last two sit 17-22% of a lap before the line, beyond the reach of a random
#: kart, which wanders ≈ 140 units (8% of a lap, median) either way in 90 s.
DEFAULT_SPOTS = (
    (0.025, 0.0, 10.0, 16.0),
    (0.06, -15.0, 16.0, 18.0),
    (0.33, 2.0, 10.0, 16.0),
    (0.55, 15.0, 16.0, 18.0),
    (0.78, -2.0, 10.0, 16.0),
    (0.83, 15.0, 16.0, 18.0),
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


def _point_on_segment(track: Track, i: jax.Array, along: jax.Array, centering: jax.Array) -> jax.Array:
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
    bugs_seen: jax.Array  # bool[K] heavy spots already visited this episode
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
    base_ms: float = 14.0
    scenery_ms: float = 1.5
    noise_ms: float = 0.3
    load_scale: float = 1.0
    load_offset_ms: float = 0.0
    threshold_ms: float = 25.0  # ≈ this twin's calibrated t, 25.4 (RELINE's method sets it; the paper's 18.36 is its machine's)
    max_steps_in_episode: int = 225


def game_reward(params: EnvParams, centering: jax.Array, delta_path_done: jax.Array, lap_done: jax.Array) -> jax.Array:
    """RELINE's SuperTuxKart game reward ``r_g`` (§4.1.1), with the game-only finish bonus.

    :func:`jgtest.rewards.kart_progress_reward` (``-1`` if ``|centering| > θ``,
    else ``max(min(Δpath_done, M), 0)``) plus ``finish_bonus`` (+1,000) when
    ``lap_done``.
    """
    progress = kart_progress_reward(centering, delta_path_done, params.theta, params.progress_cap)
    return (progress + jnp.where(lap_done, params.finish_bonus, 0.0)).astype(jnp.float32)


def frame_time(params: EnvParams, cost_ms: jax.Array, key: jax.Array) -> jax.Array:
    """Measured render time of the four frames: ``max(load_scale · cost + load_offset + N(0, noise²), 0)``."""
    noise = params.noise_ms * jax.random.normal(key, (), jnp.float32)
    return jnp.maximum(params.load_scale * cost_ms + params.load_offset_ms + noise, 0.0)


def spot_in_view(params: EnvParams, path_done: jax.Array, centering: jax.Array) -> jax.Array:
    """``float32[3]``: (in view, distance ahead / VIEW_RANGE, centering offset / θ) of the
    nearest heavy spot at most ``VIEW_RANGE`` ahead and at most its radius behind
    (``(0, 1, 0)`` when none is); see the module docstring."""
    ahead = wrap_arc(params.heavy_pos[:, 0] - path_done, params.track.length)
    candidate = (ahead >= -params.heavy_radius) & (ahead <= VIEW_RANGE)
    k = jnp.argmin(jnp.where(candidate, ahead, jnp.inf))
    seen = candidate[k]
    return jnp.stack([
        seen.astype(jnp.float32),
        jnp.where(seen, jnp.clip(ahead[k] / VIEW_RANGE, -1.0, 1.0), 1.0),
        jnp.where(seen, jnp.clip((params.heavy_pos[k, 1] - centering) / params.theta, -2.0, 2.0), 0.0),
    ])  # fmt: skip


def heavy_distance(params: EnvParams, path_done: jax.Array, centering: jax.Array) -> jax.Array:
    """``float32[K]`` distance from ``(path_done, centering)`` to each heavy spot.

    The path_done difference is wrapped around the lap, so spot positions are
    lap-local and ``path_done`` may be accumulated over laps or negative.
    """
    ds = wrap_arc(path_done - params.heavy_pos[:, 0], params.track.length)
    dc = centering - params.heavy_pos[:, 1]
    return jnp.sqrt(ds**2 + dc**2)


def scenery_cost(params: EnvParams, path_done: jax.Array) -> jax.Array:
    """The scenery's smooth share of the render time (ms) along the lap, in ``±scenery_ms``:
    ``scenery_ms · (0.6 sin(2π·3s/L + 0.5) + 0.4 sin(2π·7s/L + 1.3))``, ``s`` the lap-local path."""
    phase = 2.0 * jnp.pi * path_done / params.track.length
    return params.scenery_ms * (0.6 * jnp.sin(3.0 * phase + 0.5) + 0.4 * jnp.sin(7.0 * phase + 1.3))


def render_cost(params: EnvParams, path_done: jax.Array, centering: jax.Array) -> jax.Array:
    """Noise-free render time (ms) of the four frames at a place (§4.1.2's ``rT``).

    ``base_ms + scenery(path_done) + Σ_k heavy_ms[k] * exp(-2 d_k² / heavy_radius[k]²)``,
    ``d_k`` from :func:`heavy_distance`, the scenery from :func:`scenery_cost`.
    Broadcasts over leading axes of ``path_done`` and ``centering`` (use
    ``jax.vmap`` for maps).
    """
    d = heavy_distance(params, path_done, centering)
    bumps = params.heavy_ms * jnp.exp(-2.0 * d**2 / params.heavy_radius**2)
    return (params.base_ms + scenery_cost(params, path_done) + jnp.sum(bumps, axis=-1)).astype(jnp.float32)


class KartTrack(TestingEnv):
    """RELINE's SuperTuxKart case study on device (see module docstring).

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
            raise ValueError(f"heavy_spots must be a non-empty list of (share, centering, radius, ms), got {heavy_spots!r}")
        if not np.all((spots[:, 0] >= 0) & (spots[:, 0] < 1)):
            raise ValueError(f"heavy_spots: each share of the lap must be in [0, 1), got {spots[:, 0].tolist()}")
        self._num_heavy = len(spots)
        buckets = tuple(int(b) for b in cell_buckets)
        if len(buckets) != 2 or min(buckets) < 1:
            raise ValueError(f"cell_buckets must be two positive ints, got {cell_buckets}")
        self._cell_buckets = buckets
        self.track = make_track(default_centreline() if centreline is None else centreline, num_points)
        length = float(self.track.length)
        self._default_params = EnvParams(
            track=self.track,
            heavy_pos=jnp.asarray(np.stack([spots[:, 0] * length, spots[:, 1]], axis=1), jnp.float32),
            heavy_radius=jnp.asarray(spots[:, 2]),
            heavy_ms=jnp.asarray(spots[:, 3]),
        )

    # ----- metadata ---------------------------------------------------------
    @property
    def default_params(self) -> EnvParams:
        return self._default_params

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

    @property
    def num_actions(self) -> int:
        return len(ACTIONS)


    def observation_space(self, params) -> spaces.Box:
        low = np.array([0.0, -1.0, -1.0, -2.0] + [-1.0] * len(LOOK_AHEAD) + [-1.0, 0.0, 0.0, -1.0, -2.0], np.float32)
        high = np.array([1.0, 1.0, 1.0, 2.0] + [1.0] * len(LOOK_AHEAD) + [1.0, 1.0, 1.0, 1.0, 2.0], np.float32)
        return spaces.Box(jnp.asarray(low), jnp.asarray(high), (OBS_SIZE,), jnp.float32)

    # ----- dynamics ---------------------------------------------------------
    def state_at(self, params: EnvParams, path_done, centering=0.0, speed=0.0, heading_error=0.0) -> EnvState:
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
            bugs_seen=jnp.zeros((self._num_heavy,), bool),
            time=0,
        )

    def reset_env(self, key, params: EnvParams):
        """The kart stands on the start line, on the centreline, facing the driving direction."""
        del key
        state = self.state_at(params, 0.0)
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        track = params.track
        length = track.length
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, len(ACTIONS) - 1)
        throttle, brake, steer = jnp.asarray(ACTIONS)[action]

        # Longitudinal dynamics, with friction off the road.
        speed = state.speed + params.dt * (throttle * params.accel - brake * params.brake_decel - params.drag)
        off_road = jnp.abs(state.centering) > params.half_width
        slowed = jnp.maximum(speed - params.offtrack_decel * params.dt, params.offtrack_max_speed)
        speed = jnp.where(off_road & (speed > params.offtrack_max_speed), slowed, speed)
        speed = jnp.clip(speed, 0.0, params.max_speed)
        # Steering and motion.
        yaw_rate = steer * jnp.minimum(speed * params.max_curvature, params.max_yaw_rate)
        heading = jnp.mod(state.heading + yaw_rate * params.dt + jnp.pi, 2 * jnp.pi) - jnp.pi
        xy = state.xy + speed * params.dt * jnp.stack([jnp.cos(heading), jnp.sin(heading)])

        # Track coordinates, barrier.
        arc, centering, seg, along = _project_near(track, xy, state.arc)
        hit = jnp.abs(centering) > params.wall_offset
        centering = jnp.clip(centering, -params.wall_offset, params.wall_offset)
        xy = jnp.where(hit, _point_on_segment(track, seg, along, centering), xy)
        speed = jnp.where(hit, speed * params.wall_speed_factor, speed)
        delta = wrap_arc(arc - state.arc, length)
        path_done = state.path_done + delta
        lap_done = path_done >= length

        r_game = game_reward(params, centering, delta, lap_done)

        # Render time (noisy, under the machine's load) and the heavy spots' low-FPS bugs.
        frame_ms = frame_time(params, render_cost(params, arc, centering), key)
        slow_here = (heavy_distance(params, arc, centering) <= params.heavy_radius) & (frame_ms > params.threshold_ms)
        fired = slow_here & ~state.bugs_seen

        state = EnvState(
            xy=xy.astype(jnp.float32),
            heading=heading.astype(jnp.float32),
            speed=speed.astype(jnp.float32),
            arc=arc.astype(jnp.float32),
            centering=centering.astype(jnp.float32),
            path_done=path_done.astype(jnp.float32),
            bugs_seen=state.bugs_seen | slow_here,
            time=state.time + 1,
        )
        telemetry = Telemetry.make(
            position=xy,
            cell=self.cell_of(params, arc, centering),
            bugs_fired=fired,
            game_reward=r_game,
            frame_time_ms=frame_ms,
        )
        info = {"telemetry": telemetry, "centering": state.centering, "delta_path_done": delta.astype(jnp.float32)}
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
            raise ValueError(f"{self.name}: track has {points.shape} points, expected {tuple(self.track.points.shape)}")
        length = float(np.asarray(params.track.length))
        k = self._num_heavy
        pos = np.asarray(params.heavy_pos)
        radius = np.asarray(params.heavy_radius)
        extra = np.asarray(params.heavy_ms)
        if pos.shape != (k, 2) or radius.shape != (k,) or extra.shape != (k,):
            raise ValueError(
                f"{self.name}: heavy_pos, heavy_radius, heavy_ms must have shapes ({k}, 2), ({k},), ({k},); "
                f"got {pos.shape}, {radius.shape}, {extra.shape}"
            )
        scalars = {
            name: float(np.asarray(getattr(params, name)))
            for name in (
                "half_width", "theta", "progress_cap", "finish_bonus", "wall_offset", "wall_speed_factor", "dt",
                "max_speed", "accel", "brake_decel", "drag", "offtrack_max_speed", "offtrack_decel",
                "max_curvature", "max_yaw_rate", "base_ms", "scenery_ms", "noise_ms", "load_scale", "load_offset_ms",
                "threshold_ms",
            )
        }
        for name, value in scalars.items():
            if not np.isfinite(value):
                raise ValueError(f"{self.name}: {name} must be finite, got {value}")
        for name in ("half_width", "theta", "wall_offset", "dt", "max_speed", "load_scale"):
            if scalars[name] <= 0:
                raise ValueError(f"{self.name}: {name} must be positive, got {scalars[name]}")
        for name in ("progress_cap", "accel", "brake_decel", "drag", "offtrack_max_speed", "offtrack_decel",
                     "max_curvature", "max_yaw_rate", "base_ms", "scenery_ms", "noise_ms"):
            if scalars[name] < 0:
                raise ValueError(f"{self.name}: {name} must be non-negative, got {scalars[name]}")
        if not 0.0 <= scalars["wall_speed_factor"] <= 1.0:
            raise ValueError(f"{self.name}: wall_speed_factor must be in [0, 1], got {scalars['wall_speed_factor']}")
        wall = scalars["wall_offset"]
        for i in range(k):
            s, c = (float(v) for v in pos[i])
            where = f"heavy spot {i} at (path_done={s:.2f}, centering={c:.2f})"
            if not (np.isfinite(s) and 0.0 <= s < length):
                raise ValueError(f"{self.name}: {where} is off the track: path_done must be in [0, {length:.2f})")
            if not (np.isfinite(c) and abs(c) <= wall):
                raise ValueError(
                    f"{self.name}: {where} is off the track: |centering| must be at most wall_offset={wall:g}"
                )
            if not (np.isfinite(radius[i]) and radius[i] > 0):
                raise ValueError(f"{self.name}: {where} has radius {radius[i]}; it must be positive")
            if not (np.isfinite(extra[i]) and extra[i] >= 0):
                raise ValueError(f"{self.name}: {where} has heavy_ms {extra[i]}; it must be non-negative")
        # The barrier band must project uniquely onto the centreline.
        curvature = np.abs(np.asarray(params.track.curvature))
        min_radius = 1.0 / max(float(curvature.max()), 1e-9)
        if wall >= min_radius:
            raise ValueError(
                f"{self.name}: wall_offset={wall:g} must be below the track's tightest radius {min_radius:.1f}"
            )
        arcs = np.asarray(params.track.cum[:-1])
        probe = np.concatenate([arcs, arcs])
        offsets = np.concatenate([np.full_like(arcs, wall), np.full_like(arcs, -wall)])
        got = np.asarray(_check_projection(params.track, jnp.asarray(probe), jnp.asarray(offsets)))
        err = np.abs((got - probe + 0.5 * length) % length - 0.5 * length)
        if err.max() > 0.05 * length:
            raise ValueError(
                f"{self.name}: wall_offset={wall:g} is too wide for this track: points on the barrier "
                "project onto another part of the centreline"
            )


@jax.jit
def _check_projection(track: Track, arcs: jax.Array, offsets: jax.Array) -> jax.Array:
    """Lap-local arc of the projection of ``track_point(arcs, offsets)`` (vectorised)."""

    def one(s, c):
        return _project(track, track_point(track, s, c))[0]

    return jax.vmap(one)(arcs, offsets)
