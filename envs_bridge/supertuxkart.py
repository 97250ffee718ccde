"""The real SuperTuxKart (``pystk2``) on the host contract: RELINE's case study (§4).

RELINE is Tufano et al., 2022. One race per process, so ``num_envs`` is 1; parallel races are a
game farm (``actors=N``). :class:`SuperTuxKartEnv` follows the on-device twin ``KartTrack-v0``
(:mod:`jgtest.envs.kart`): a step is one action and 4 frames (§4.1.2), an episode one lap of at
most 90 s (§4.1.3), coordinates and game reward as §4.1.1 gives them.

* chosen: the frame time is the wall time of the 4 frames and the read of the last image,
  because the read waits for the drawing.
* chosen: pystk2's lowest graphics (§5) at 96 × 128, because the host loop resizes any size.
* chosen: a reset with the same seed restarts the race, because the game is deterministic.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import math
import time

import jax
import numpy as np

from envs_bridge.protocol import GameTimeout, HostEnv, check_frames, host_telemetry
from envs_bridge.stk_assets import configure_environment, race_tracks
from jgtest.envs.kart import ACTION_NAMES, ACTIONS, EnvParams
from jgtest.oracles.kart_stuck import STUCK_PROGRESS, STUCK_WINDOW
from jgtest.rewards import kart_progress_reward

#: KartTrack-v0's road half width (centering units), θ, M and finish bonus.
_KART = {f.name: f.default for f in dataclasses.fields(EnvParams)}
HALF_WIDTH, THETA, PROGRESS_CAP, FINISH_BONUS = (
    _KART[k] for k in ("half_width", "theta", "progress_cap", "finish_bonus")
)
#: ``r_g`` without the finish bonus, jitted once (eager jnp ops cost ≈ 0.25 ms a step, jitted
#: ≈ 0.04 ms).
_progress_reward = jax.jit(kart_progress_reward)
#: The replication package's track (``SuperTuxKart_RELINE.py``, ``GAME_LEVEL = 'scotland'``).
DEFAULT_TRACK = "scotland"
#: The replication package's eight actions (``SuperTuxKart/code/agents/SuperTuxKart_RELINE.py``,
#: ``POSSIBLE_ACTIONS``), as (name, throttle, brake, steer (+1 left), fire, nitro).
PACKAGE_ACTIONS = (
    ("none", 0.0, False, 0.0, False, False),
    ("throttle", 1.0, False, 0.0, False, False),
    ("left", 0.0, False, 1.0, False, False),
    ("right", 0.0, False, -1.0, False, False),
    ("throttle_left", 1.0, False, 1.0, False, False),
    ("throttle_right", 1.0, False, -1.0, False, False),
    ("throttle_powerup", 1.0, False, 0.0, True, False),
    ("throttle_nitro", 1.0, False, 0.0, False, True),
)
#: KartTrack-v0's seven actions (:data:`jgtest.envs.kart.ACTIONS`) in the same form.
TWIN_ACTIONS = tuple(
    (name, float(throttle), bool(brake), float(steer), False, False)
    for name, (throttle, brake, steer) in zip(ACTION_NAMES, ACTIONS)
)
#: The action sets of :class:`SuperTuxKartEnv` (``actions``).
ACTION_SETS = {"package": PACKAGE_ACTIONS, "twin": TWIN_ACTIONS}
#: Most game frames reset waits for the start signal (the countdown takes ≈ 51).
COUNTDOWN_FRAMES = 1000
#: Whether this process has run ``pystk2.init`` (pystk2: "Only call this function once per
#: process"; measured: after ``pystk2.clean()`` a second init's next race segfaults at random)
#: and whether its race is open.
_INITIALISED = False
_OPEN = False


def _wrap(delta: float, length: float) -> float:
    """``delta`` wrapped into ``[-length/2, length/2)`` (KartTrack's ``wrap_arc``)."""
    return (delta + 0.5 * length) % length - 0.5 * length


def _buckets(value: float, low: float, high: float, num: int) -> int:
    """:func:`jgtest.coverage.bucketize` on one number: ``floor((v - low) / (high - low) · num)``
    clipped."""
    return int(np.clip(math.floor((value - low) / (high - low) * num), 0, num - 1))


class SuperTuxKartEnv(HostEnv):
    """One SuperTuxKart race on the host contract.

    ``pystk2.init`` runs once per process (after ``pystk2.clean()`` a second init segfaults), so a
    process plays one env and resets it between races; the assets come from Debian
    (:mod:`envs_bridge.stk_assets`).

    * **Step** (§4.1.2): one action, then ``frames_per_step`` (4) frames of pystk2's 0.1 s, so
      ``dt`` = 0.4 s, KartTrack's. The frame time is the ``time.perf_counter`` wall time of those
      ``race.step()`` calls plus the read of ``render_data[0].image``, which waits for the
      drawing. Frames are RGB ``uint8[1, H, W, 3]``, rendered with ``GraphicsConfig.ld()``.
    * **Episode** (§4.1.3): reset waits, with no action, through the intro and the countdown
      until the phase is GO, MUSIC or RACE, so step 0 is the start signal. ``reset(seed)``
      starts a race with ``RaceConfig.seed = seed``, or restarts it when the seed is unchanged
      (autoresets restart too). The cap is ``ceil(max_seconds / dt)`` steps (90 s → 225); the
      game's ``has_finished_race`` terminates.
    * **Coordinates** (§4.1.1) on the track's centre line (``Track.path_nodes``): ``path_done``
      starts at the lap-local distance ``s`` (``kart.distance_down_track``, recomputed from the
      kart's projection on its segment before the first crossing of the start line, where
      pystk2 leaves it frozen) wrapped into ``[-L/2, L/2)``, and each step adds
      ``wrap(s_i - s_{i-1})``; ``centering`` is ``10 · offset / (path_width / 2)``, the signed
      offset from the segment, positive to the right.
    * **Game reward** (§4.1.1): :func:`jgtest.rewards.kart_progress_reward` (θ = 20, M = 10) plus
      +1,000 on the step the lap is completed: KartTrack's defaults.
    * **Actions** (``actions``): ``"package"``, the replication package's eight
      (:data:`PACKAGE_ACTIONS`: none, throttle, left, right, throttle + left, throttle + right,
      throttle + power-up, throttle + nitro), or ``"twin"``, KartTrack-v0's seven in its order
      (coast, throttle, brake, throttle + left, throttle + right, left, right); as
      ``pystk2.Action`` (``steer`` ∓1 for left/right).
    * **Telemetry**: ``position`` = world ``(x, z)``; ``cell`` = bucket of ``path_done mod L``
      over ``[0, L]`` × bucket of ``centering`` over ``[-1.5 θ, 1.5 θ]`` (``cell_buckets``);
      no injected bugs; ``crashed`` False. ``info`` also carries ``path_done``,
      ``delta_path_done``, ``centering`` and ``stuck`` (RELINE's footnote 2, as
      :mod:`jgtest.oracles.kart_stuck` reads it). Autoreset steps return the restarted race's
      first frame with reward 0 and a frame time of 0.

    Args:
      track: a race track of the game (:func:`envs_bridge.stk_assets.race_tracks`), default
        the package's ``"scotland"`` (``SuperTuxKart_RELINE.py``, ``GAME_LEVEL``).
      num_envs: must be 1 (one race per process; use :mod:`envs_bridge.pool`).
      seed: the race's seed until :meth:`reset` names another.
      frame_size: ``(height, width)`` of the rendered frames (96 × 128: fast on llvmpipe).
      frames_per_step: game frames after each action (RELINE: 4).
      max_seconds: episode cap in game seconds (RELINE: 90).
      actions: the action set, ``"package"`` or ``"twin"`` (:data:`ACTION_SETS`).
      cell_buckets: ``(path_done buckets, centering buckets)`` of the coverage cells.
      data_dir: the asset folder (:func:`envs_bridge.stk_assets.prepare_data_dir`'s default if
        None).

    Raises:
      ValueError: bad options, ``num_envs`` other than 1, an unknown track (the error lists them)
        or action set.
      RuntimeError: another race is open in this process, or one was (pystk2 can be
        initialised once per process: reset an env rather than making a new one).
    """

    #: Signals (:mod:`jgtest.signals`): the kart's place on the track, its progress, the frames and
    #: each frame's real render time.
    signals = frozenset({"cells", "position", "game_reward", "rgb_frames", "frame_time"})

    bug_kinds = ()

    def __init__(
        self,
        track: str = DEFAULT_TRACK,
        num_envs: int = 1,
        seed: int = 0,
        frame_size: tuple[int, int] = (96, 128),
        frames_per_step: int = 4,
        max_seconds: float = 90.0,
        cell_buckets: tuple[int, int] = (200, 24),
        data_dir=None,
        actions: str = "package",
    ):
        global _INITIALISED, _OPEN
        self._open, self._race, self._state = False, None, None
        if num_envs != 1:
            raise ValueError(
                f"SuperTuxKart runs one race per process, got num_envs={num_envs}; run "
                "parallel races as a game "
                "farm (envs_bridge.pool, e.g. envs_bridge.make('supertuxkart:scotland', "
                "actors=N))"
            )
        height, width = (int(v) for v in frame_size)
        if height < 1 or width < 1:
            raise ValueError(
                f"frame_size must be two positive ints (height, width), got {frame_size}"
            )
        if int(frames_per_step) < 1:
            raise ValueError(f"frames_per_step must be at least 1, got {frames_per_step}")
        if not (math.isfinite(max_seconds) and max_seconds > 0):
            raise ValueError(f"max_seconds must be positive, got {max_seconds}")
        if actions not in ACTION_SETS:
            raise ValueError(f"actions must be one of {', '.join(ACTION_SETS)}, got {actions!r}")
        buckets = tuple(int(b) for b in cell_buckets)
        if len(buckets) != 2 or min(buckets) < 1:
            raise ValueError(f"cell_buckets must be two positive ints, got {cell_buckets}")
        root = configure_environment(data_dir)
        tracks = race_tracks(root)
        if track not in tracks:
            raise ValueError(
                f"unknown SuperTuxKart track {track!r}; race tracks: {', '.join(tracks)}"
            )
        if _OPEN:
            raise RuntimeError(
                "a SuperTuxKart race is already open in this process (pystk2 runs one per "
                "process): close it, "
                "or run races in parallel as a game farm (envs_bridge.pool)"
            )
        if _INITIALISED:
            raise RuntimeError(
                "pystk2 was already initialised (and cleaned) in this process and cannot be "
                "initialised again "
                "(the next race segfaults): play the whole run with one SuperTuxKartEnv, "
                "resetting it, or start "
                "each game in its own process (envs_bridge.pool)"
            )
        import pystk2

        graphics = pystk2.GraphicsConfig.ld()
        graphics.screen_width, graphics.screen_height, graphics.display = width, height, False
        pystk2.set_log_level(int(pystk2.LogLevel.warn))
        pystk2.init(graphics)
        _INITIALISED = _OPEN = True
        self._pystk2 = pystk2
        self._open = True
        atexit.register(self.close)

        self.track = track
        self.name = f"supertuxkart:{track}"
        self.num_envs = 1
        action_set = ACTION_SETS[actions]
        self.action_names = tuple(name for name, *_ in action_set)
        self.num_actions = len(action_set)
        self.frame_shape = (height, width, 3)
        self.map_shape = buckets
        self.num_cells = buckets[0] * buckets[1]
        #: Centering units: the road's edge, and the span the cells cover (±1.5 θ, KartTrack's).
        self.road_half_width, self.centering_span = HALF_WIDTH, 1.5 * THETA
        self.frames_per_step = int(frames_per_step)
        self.step_seconds = self.frames_per_step * round(pystk2.RaceConfig().step_size, 6)
        self.max_steps_in_episode = max(1, math.ceil(max_seconds / self.step_seconds - 1e-6))
        self._actions = [
            pystk2.Action(acceleration=throttle, brake=brake, steer=-steer, fire=fire, nitro=nitro)
            for _, throttle, brake, steer, fire, nitro in action_set
        ]
        self._seed = int(seed)
        self._done = False

    # ----- the race ---------------------------------------------------------------------
    def _start(self, seed: int) -> np.ndarray:
        """(Re)starts the race (a restart when the seed is unchanged) and waits for the start
        signal."""
        pystk2 = self._pystk2
        if self._race is not None and seed == self._seed:
            self._race.restart()
        else:
            if self._race is not None:
                self._race.stop()
                self._race = None
            config = pystk2.RaceConfig(track=self.track, laps=1, seed=seed, num_kart=1)
            config.players[0].controller = pystk2.PlayerConfig.Controller.PLAYER_CONTROL
            self._race = pystk2.Race(config)
            self._race.start()
            self._state = pystk2.WorldState()
            self._load_track()
            self._seed = seed
        phase = pystk2.WorldState.Phase
        racing = (phase.GO_PHASE, phase.MUSIC_PHASE, phase.RACE_PHASE)
        for _ in range(COUNTDOWN_FRAMES):
            self._state.update()
            if self._state.phase in racing:
                break
            self._race.step()
        else:
            raise GameTimeout(
                f"{self.name}: the race did not start within {COUNTDOWN_FRAMES} frames"
            )
        return np.array(self._race.render_data[0].image)

    def _load_track(self) -> None:
        """Caches the centre line: segment starts and directions in (x, z), right normals,
        distances, half widths."""
        track = self._pystk2.Track()
        track.update()
        nodes = np.asarray(track.path_nodes, np.float64)[:, :, [0, 2]]
        self._seg_start = nodes[:, 0]
        self._seg_dir = nodes[:, 1] - nodes[:, 0]
        self._seg_len2 = np.maximum(np.sum(self._seg_dir**2, axis=-1), 1e-12)
        right = np.stack([self._seg_dir[:, 1], -self._seg_dir[:, 0]], axis=-1)
        self._seg_right = right / np.sqrt(self._seg_len2)[:, None]
        self._seg_dist = np.asarray(track.path_distance, np.float64)
        self._half_width = np.asarray(track.path_width, np.float64).reshape(-1) / 2.0
        self.track_length = float(track.length)

    def _coordinates(self, kart) -> tuple[float, float, np.ndarray]:
        """The kart's lap-local distance ``s``, centering and world (x, z) (the class docstring)."""
        node = kart.node
        xz = np.asarray(kart.location, np.float64)[[0, 2]]
        rel = xz - self._seg_start[node]
        centering = HALF_WIDTH * float(rel @ self._seg_right[node]) / self._half_width[node]
        if kart.finished_laps >= 0:
            s = float(kart.distance_down_track)
        else:
            along = float(np.clip(rel @ self._seg_dir[node] / self._seg_len2[node], 0.0, 1.0))
            start, end = self._seg_dist[node]
            s = start + along * (end - start)
        return s, centering, xz

    def _observe(
        self, frame, reward, delta, centering, xz, frame_ms, autoreset
    ) -> tuple[np.ndarray, dict]:
        length = self.track_length
        n_path, n_cent = self.map_shape
        span = self.centering_span
        row = _buckets(self._path_done % length, 0.0, length, n_path)
        cell = row * n_cent + _buckets(centering, -span, span, n_cent)
        history = self._history
        stuck = len(history) == history.maxlen and history[-1] - history[0] < STUCK_PROGRESS
        telemetry = host_telemetry(
            position=xz[None],
            cell=[cell],
            bugs_fired=np.zeros((1, 0), bool),
            game_reward=[reward],
            frame_time_ms=[frame_ms],
            crashed=[False],
        )
        info = {
            "telemetry": telemetry,
            "autoreset": np.array([autoreset]),
            "path_done": np.array([self._path_done], np.float32),
            "delta_path_done": np.array([delta], np.float32),
            "centering": np.array([centering], np.float32),
            "stuck": np.array([stuck]),
        }
        return check_frames(frame[None], (1, *self.frame_shape), self.name), info

    def _new_episode(self, seed: int, autoreset: bool) -> tuple[np.ndarray, dict]:
        frame = self._start(seed)
        self._state.update()
        s, centering, xz = self._coordinates(self._state.karts[0])
        self._lap_s = s
        self._path_done = _wrap(s, self.track_length)
        self._history = collections.deque([self._path_done], maxlen=STUCK_WINDOW + 1)
        self._steps, self._done = 0, False
        return self._observe(frame, 0.0, 0.0, centering, xz, 0.0, autoreset)

    # ----- the host contract ------------------------------------------------------------
    def reset(self, seed: int) -> tuple[np.ndarray, dict]:
        """Starts a new race seeded ``seed`` (a restart if it is the current seed); its first
        frame."""
        self._check_open()
        return self._new_episode(int(seed), autoreset=False)

    def step(self, actions):
        """One action, ``frames_per_step`` frames (timed), the reward and flags (the class
        docstring)."""
        actions = self.check_actions(actions)
        self._check_open()
        if self._race is None:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        if self._done:
            frames, info = self._new_episode(self._seed, autoreset=True)
            return frames, np.zeros(1, np.float32), np.zeros(1, bool), np.zeros(1, bool), info
        action = self._actions[int(actions[0])]
        before = time.perf_counter()
        for _ in range(self.frames_per_step):
            self._race.step(action)
        frame = np.array(self._race.render_data[0].image)
        frame_ms = (time.perf_counter() - before) * 1e3

        self._state.update()
        kart = self._state.karts[0]
        s, centering, xz = self._coordinates(kart)
        delta = _wrap(s - self._lap_s, self.track_length)
        self._lap_s = s
        self._path_done += delta
        self._history.append(self._path_done)
        self._steps += 1
        terminated = bool(kart.has_finished_race)
        truncated = not terminated and self._steps >= self.max_steps_in_episode
        self._done = terminated or truncated
        reward = float(_progress_reward(centering, delta, THETA, PROGRESS_CAP)) + (
            FINISH_BONUS if terminated else 0.0
        )
        frames, info = self._observe(frame, reward, delta, centering, xz, frame_ms, autoreset=False)
        return (
            frames,
            np.array([reward], np.float32),
            np.array([terminated]),
            np.array([truncated]),
            info,
        )

    def _check_open(self) -> None:
        if not self._open:
            raise RuntimeError(f"{self.name}: the game is closed")

    def close(self) -> None:
        """Stops the race, drops every reference into the game and calls ``pystk2.clean()``
        (a live view of the game at exit segfaults the process); idempotent, also run at exit."""
        global _OPEN
        if not self._open:
            return
        self._open = _OPEN = False
        atexit.unregister(self.close)
        if self._race is not None:
            self._race.stop()
        self._race = self._state = None
        self._pystk2.clean()
