"""Any Gymnasium game with a discrete action set behind the host contract: ``gym:ENV_ID``.

The game is ``gymnasium.make(ENV_ID)`` (``gym:module:Env-v0`` imports ``module`` first); a user's
telemetry function (``module:function``) reports position, cell, objects and more
(:class:`GymnasiumEnv`).

* chosen: copies stepped one after another, because each step is then timed on its own.
* chosen: without a ``cell``, Go-Explore's frame hash (:func:`frame_hashes`), because a random
  campaign still counts the screens it saw.

Example: ``jgtest run random --game gym:my_games:Maze-v0 --telemetry my_telemetry:telemetry``.
"""

from __future__ import annotations

import math
import os
import time
import zlib
from collections.abc import Callable, Sequence

import numpy as np

from envs_bridge.protocol import (
    HostEnv,
    check_frames,
    episode_seed,
    host_telemetry,
    importable_here,
    load_named,
)
from jgtest.errors import BadInput
from jgtest.types import check_telemetry_fields

#: The telemetry fields a user's function may return, with the shape each must have (``objects``: a
#: list of boxes).
TELEMETRY_FIELDS = {
    "position": (2,),
    "cell": (),
    "frame_time_ms": (),
    "game_reward": (),
    "crashed": (),
    "angle": (),
    "objects": None,
}
#: What a telemetry function reports on every step unless its ``provides`` attribute says otherwise.
DEFAULT_PROVIDES = ("position",)
#: The declared fields that are signals of their own name (:mod:`jgtest.signals`).
SIGNAL_FIELDS = ("position", "objects")
#: Cells of the frame hash used when the telemetry gives no cell.
HASH_CELLS = 65_536


class TelemetryError(BadInput):
    """A user's telemetry function returned something the bridge cannot use; the message names the
    field."""


def check_registering_module(env_id: str) -> None:
    """Refuses ``MODULE:ENV_ID`` whose module (the one that registers the game) is not installed,
    without importing it: what a campaign checks before it opens its run directory.

    Raises:
      BadInput: naming the module.
    """
    import importlib.util

    module = env_id.split(":", 1)[0] if ":" in env_id else None
    try:
        found = module is None or importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or an empty name
        found = False
    if not found:
        raise BadInput(
            f"gym:{env_id}: cannot import module {module!r}, which should register the game; "
            "install it"
        )


def frame_hashes(frames: np.ndarray, num_cells: int) -> np.ndarray:
    """A coarse hash of each frame of ``uint8[N, H, W(, C)]``, Go-Explore's cell of a frame (Ecoffet
    et al., 2021: "downscaled to 11 × 8 with 8 pixel intensities"): the grayscale frame's 8×11 block
    means at 8 levels, CRC-32, modulo ``num_cells``; ``int64[N]``. The blocks are averaged over
    every ``stride``-th pixel (32 or more rows and columns sampled, 4 or more per block), which
    keeps the hash to a few hundredths of a millisecond a 400 × 600 frame."""
    stride = max(1, min(frames.shape[1], frames.shape[2]) // 32)
    sampled = frames[:, ::stride, ::stride]
    gray = (
        sampled.mean(axis=-1, dtype=np.float32) if sampled.ndim == 4 else sampled.astype(np.float32)
    )
    rows, cols = (
        np.linspace(0, n, k + 1).astype(int)[:-1] for n, k in zip(gray.shape[1:], (8, 11))
    )
    sums = np.add.reduceat(np.add.reduceat(gray, rows, axis=1), cols, axis=2)
    counts = np.outer(
        np.diff(np.append(rows, gray.shape[1])), np.diff(np.append(cols, gray.shape[2]))
    )
    levels = np.minimum(sums / counts // 32, 7).astype(np.uint8)
    return np.asarray([zlib.crc32(level.tobytes()) % num_cells for level in levels], np.int64)


def frame_hash(frame: np.ndarray, num_cells: int) -> int:
    """:func:`frame_hashes` of one frame."""
    return int(frame_hashes(frame[None], num_cells)[0])


def declared_fields(telemetry: Callable) -> tuple[str, ...]:
    """The fields ``telemetry`` reports on every step: its ``provides`` attribute, else
    :data:`DEFAULT_PROVIDES`.

    Raises:
      TelemetryError: a declared field the bridge does not know.
    """
    fields = tuple(getattr(telemetry, "provides", DEFAULT_PROVIDES))
    unknown = sorted(set(fields) - set(TELEMETRY_FIELDS))
    if unknown:
        raise TelemetryError(
            f"telemetry function's provides names unknown field(s) {', '.join(unknown)}; "
            f"fields: {', '.join(TELEMETRY_FIELDS)}"
        )
    return fields


def _telemetry_function(telemetry: str | Callable | None) -> Callable | None:
    return (
        load_named(telemetry, "telemetry function", callable)
        if isinstance(telemetry, str)
        else telemetry
    )


def _checked_objects(value, where: str) -> list[tuple[str, int, float, float, float, float]]:
    """A telemetry's ``objects``: a list of ``(name, id, x, y, width, height)``, each checked."""
    if not isinstance(value, (list, tuple)):
        raise TelemetryError(
            f"{where} returned objects of type {type(value).__name__}, expected a list of "
            "(name, id, x, y, width, height)"
        )
    boxes = []
    for k, box in enumerate(value):
        shaped = isinstance(box, (list, tuple)) and len(box) == 6 and isinstance(box[0], str)
        numbers = shaped and all(
            isinstance(v, (int, float, np.number)) and math.isfinite(v) for v in box[1:]
        )
        if not numbers or not float(box[1]).is_integer() or box[4] < 0 or box[5] < 0:
            raise TelemetryError(
                f"{where} returned objects[{k}] = {box!r}, expected (name, id, x, y, width, "
                "height): a name, an integer id, "
                "finite numbers and a box of width and height at least 0"
            )
        boxes.append((box[0], int(box[1]), *(float(v) for v in box[2:])))
    return boxes


def _action_names(
    names: str | Sequence[str] | None, num_actions: int, game: str
) -> tuple[str, ...]:
    """The game's actions' names: ``names`` (comma-separated or a sequence, one a discrete action),
    else ``action 0``, …"""
    if names is None:
        return tuple(f"action {a}" for a in range(num_actions))
    names = tuple(n.strip() for n in (names.split(",") if isinstance(names, str) else names))
    if len(names) != num_actions or not all(names):
        raise ValueError(
            f"{game}: action_names gives {len(names)} name(s) for its {num_actions} actions: "
            f"{', '.join(names)}"
        )
    return names


def _is_image(space) -> bool:
    shape, dtype = getattr(space, "shape", None), getattr(space, "dtype", None)
    return (
        dtype == np.uint8
        and shape is not None
        and (len(shape) == 2 or (len(shape) == 3 and shape[-1] in (1, 3, 4)))
    )


def headless_sdl() -> None:
    """SDL's dummy audio and video drivers, unless the user chose others (``SDL_AUDIODRIVER``,
    ``SDL_VIDEODRIVER``): the games that draw with pygame (Gymnasium's classic control, Box2D) open
    SDL, which on a machine without a sound card or a display prints ALSA's and XDG's errors on
    stderr; the bridge draws frames off screen and plays no sound."""
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


class GymnasiumEnv(HostEnv):
    """``num_envs`` copies of the Gymnasium game ``env_id``.

    Copies are stepped one after another in this process, with Gymnasium's next-step autoreset
    (``AutoresetMode.NEXT_STEP``), each copy's step timed on its own. Modules named in ``env_id``
    or ``telemetry`` are found from the current directory first, as ``python -m`` finds them.
    What the bridge reads:

    * **frames**: the observation when it is an image (``uint8[H, W]`` or ``[H, W, C]``), else
      ``env.render()`` in ``rgb_array`` mode; a game that has neither is refused.
    * **telemetry**: ``telemetry(obs, info, env) -> dict``, called per copy per step with that
      copy's observation, ``info`` and environment (the unwrapped game's state is
      ``env.unwrapped``). It returns any of ``position`` (two numbers), ``cell`` (an int in
      ``[0, num_cells)``), ``frame_time_ms``, ``game_reward``, ``crashed``, ``angle`` (the
      player's heading in degrees) and ``objects`` (the things of interest in view,
      ``[(name, id, x, y, width, height)]``, their boxes in the frame's pixels, as ViZDoom's
      labels buffer gives them); each is checked, and a wrong shape, a NaN or a cell out of
      range is refused naming the field (:class:`TelemetryError`). The fields it reports on
      every step are declared as its ``provides`` attribute (default ``("position",)``), read
      before the game starts: they make the game's signals (``position``, ``objects``), and a
      step that leaves one out is refused. ``objects`` and ``angle`` come to the methods as
      ``info["objects"]`` (a list per copy) and ``info["angle"]`` (``float32[N]``).
    * **actions' names**: ``action_names``, a comma-separated list (or a sequence), one name a
      discrete action: how reports show them, and how a method that presses named buttons finds
      them (Inspector's 360° walk on a level: ``MOVE_FORWARD``, ``TURN_LEFT``, ``TURN_RIGHT``,
      ``MOVE_LEFT``). Default ``action 0``, ``action 1``, …
    * **frame time**: each step's wall time in milliseconds, unless the function reports the
      game's own.
    * **cells**: the function's ``cell``; without one, a coarse hash of the frame
      (:func:`frame_hashes`).
    * **crashes**: an exception raised by the game's ``step`` is a crash (``telemetry.crashed``,
      and bug 0 of kind ``crash``, recorded the moment it happens); the copy's episode ends
      there, it restarts on the next step, and the campaign goes on.

    Args:
      env_id: a registered id, or ``module:Env-v0`` to import ``module`` first.
      num_envs: copies stepped one after another.
      telemetry: ``module:function`` (or the function) mapping ``(obs, info, env)`` to telemetry
        fields.
      num_cells: the coverage cells: the range of the telemetry's ``cell``, or the frame hash's.
      max_steps_in_episode: the episode cap; default the game's ``max_episode_steps``, else 10,000.
      seed: the campaign's seed; every episode starts from
        :func:`envs_bridge.protocol.episode_seed`.
      first_game: the campaign's index of copy 0 (replays build one copy of a campaign's game).

    Raises:
      ValueError: an unknown id, a game without a discrete action set or frames, a bad telemetry
        name.
    """

    #: Signals (:mod:`jgtest.signals`) of every Gymnasium game; ``position`` comes with a telemetry
    #: function.
    signals = frozenset({"cells", "game_reward", "frame_time", "oracle_inputs", "rgb_frames"})
    replayable = True

    @classmethod
    def declared_signals(cls, name: str, options: dict) -> frozenset[str]:
        """What the game provides, read before it starts; a ``gym:MODULE:ENV_ID`` whose module is
        not installed is refused here (:func:`check_registering_module`), before any run directory
        is made."""
        check_registering_module(name.removeprefix("gym:"))
        telemetry = options.get("telemetry")
        if not telemetry:
            return cls.signals
        return cls.signals | (
            set(declared_fields(_telemetry_function(telemetry))) & set(SIGNAL_FIELDS)
        )

    def __init__(
        self,
        env_id: str,
        num_envs: int = 1,
        telemetry: str | Callable | None = None,
        num_cells: int | None = None,
        max_steps_in_episode: int | None = None,
        seed: int = 0,
        first_game: int = 0,
        action_names: str | Sequence[str] | None = None,
    ):
        import gymnasium

        headless_sdl()
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.name, self.num_envs, self._seed, self._first = (
            f"gym:{env_id}",
            num_envs,
            int(seed),
            int(first_game),
        )
        self._telemetry = _telemetry_function(telemetry)
        self._provides = declared_fields(self._telemetry) if self._telemetry is not None else ()
        importable_here()
        try:
            probe = gymnasium.make(env_id)
        except gymnasium.error.Error as error:
            raise ValueError(f"gym:{env_id}: {error}") from None
        except ImportError as error:  # gym:MODULE:ENV_ID whose module is not installed
            raise ValueError(
                f"gym:{env_id}: cannot import module {error.name or env_id.split(':')[0]!r}, "
                "which should register the game; install it"
            ) from None
        if not isinstance(probe.action_space, gymnasium.spaces.Discrete):
            probe.close()
            raise ValueError(
                f"gym:{env_id}: jgtest's agents choose among discrete actions; this game's "
                f"action space is {probe.action_space}"
            )
        self._frames_from_obs = _is_image(probe.observation_space)
        render_mode = None if self._frames_from_obs else "rgb_array"
        if render_mode and "rgb_array" not in probe.metadata.get("render_modes", ()):
            probe.close()
            raise ValueError(
                f"gym:{env_id}: its observations are not images and it cannot render "
                "rgb_array frames, which jgtest's agents read"
            )
        probe.close()
        self._envs = [gymnasium.make(env_id, render_mode=render_mode) for _ in range(num_envs)]
        spec_steps = (
            self._envs[0].spec.max_episode_steps if self._envs[0].spec is not None else None
        )
        self.max_steps_in_episode = int(max_steps_in_episode or spec_steps or 10_000)
        self.num_actions = int(self._envs[0].action_space.n)
        self.action_names = _action_names(action_names, self.num_actions, self.name)
        self.bug_kinds = ("crash",)  # bug 0: the game raised in its step
        self.num_cells = int(num_cells or HASH_CELLS)
        self._done = np.zeros(num_envs, bool)
        self._steps = np.zeros(num_envs, np.int64)
        self._episodes = np.zeros(num_envs, np.int64)
        self._position = np.zeros((num_envs, 2), np.float32)
        self._angle = np.zeros(num_envs, np.float32)
        obs, info = self._envs[0].reset(seed=episode_seed(seed, self._first, 0))
        self.frame_shape = self._frame(self._envs[0], obs).shape
        # the telemetry function checked once, before any campaign starts
        self._read(0, obs, info, 0.0, 0.0, False)

    def _frame(self, env, obs) -> np.ndarray:
        frame = np.asarray(obs if self._frames_from_obs else env.render())
        return frame[..., None] if frame.ndim == 2 else frame

    def _read(
        self, i: int, obs, info: dict, reward: float, elapsed_ms: float, crashed: bool
    ) -> dict:
        frame = self._frame(self._envs[i], obs)
        fields = {
            "position": self._position[i],
            "cell": None,
            "frame_time_ms": elapsed_ms,
            "game_reward": reward,
            "crashed": crashed,
            "angle": self._angle[i],
            "objects": [],
        }
        # a crash is reported where the copy last was, seeing nothing
        if self._telemetry is not None and not crashed:
            fields.update(self.checked(self._telemetry(obs, info, self._envs[i])))
            self._position[i], self._angle[i] = fields["position"], fields["angle"]
        return {"frame": frame, **fields}

    def checked(self, out) -> dict:
        """The telemetry function's output checked field by field (:class:`TelemetryError` names the
        one at fault)."""
        where = f"{self.name}: telemetry function"
        check_telemetry_fields(out, TELEMETRY_FIELDS, where, TelemetryError)
        fields = {}
        for key, value in out.items():
            if key == "objects":
                fields[key] = _checked_objects(value, where)
                continue
            array = np.asarray(value)
            if array.shape != TELEMETRY_FIELDS[key]:
                raise TelemetryError(
                    f"{where} returned {key} of shape {array.shape}, expected "
                    f"{TELEMETRY_FIELDS[key]}"
                )
            if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
                raise TelemetryError(
                    f"{where} returned {key} of dtype {array.dtype}, expected numbers"
                )
            if not np.all(np.isfinite(array)):
                raise TelemetryError(f"{where} returned {key} = {value!r}: NaN or infinite")
            fields[key] = array
        if "cell" in fields:
            cell = fields["cell"]
            if cell != math.floor(cell) or not 0 <= cell < self.num_cells:
                raise TelemetryError(
                    f"{where} returned cell {cell}, not an integer in [0, {self.num_cells}) "
                    "(set num_cells)"
                )
            fields["cell"] = int(cell)
        if "frame_time_ms" in fields and fields["frame_time_ms"] < 0:
            raise TelemetryError(
                f"{where} returned frame_time_ms {fields['frame_time_ms']}, below 0"
            )
        left_out = [f for f in self._provides if f not in fields]
        if left_out:
            raise TelemetryError(
                f"{where} declares {', '.join(left_out)} (its provides) but returned none"
            )
        return fields

    def _batch(self, rows: list[dict]) -> tuple[np.ndarray, object, dict]:
        column = lambda key: np.stack([r[key] for r in rows])
        frames = check_frames(column("frame"), (self.num_envs, *self.frame_shape), self.name)
        # hashed together, where the telemetry gave no cell
        if any(r["cell"] is None for r in rows):
            hashed = frame_hashes(frames, self.num_cells)
            rows = [
                {**r, "cell": hashed[i] if r["cell"] is None else r["cell"]}
                for i, r in enumerate(rows)
            ]
        crashed = column("crashed").astype(bool)
        telemetry = host_telemetry(
            column("position"),
            column("cell"),
            crashed[:, None],
            column("game_reward"),
            column("frame_time_ms"),
            crashed,
        )
        extra = {"angle": column("angle").astype(np.float32)} if "angle" in self._provides else {}
        if "objects" in self._provides:
            extra["objects"] = [r["objects"] for r in rows]
        return frames, telemetry, extra

    def _start_episode(self, i: int):
        return self._envs[i].reset(
            seed=episode_seed(self._seed, self._first + i, int(self._episodes[i]))
        )

    def reset(self, seed: int, episode: int = 0) -> tuple[np.ndarray, dict]:
        """Every copy starts episode ``episode`` (0: the campaign's first) of the campaign
        ``seed``."""
        self._seed, self._episodes[:] = int(seed), episode
        rows = []
        for i in range(self.num_envs):
            obs, info = self._start_episode(i)
            rows.append(self._read(i, obs, info, 0.0, 0.0, False))
        self._done[:], self._steps[:] = False, 0
        frames, telemetry, extra = self._batch(rows)
        return frames, {"telemetry": telemetry, "autoreset": np.zeros(self.num_envs, bool), **extra}

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        actions = self.check_actions(actions)
        rows, terminated, truncated, autoreset = (
            [],
            np.zeros(self.num_envs, bool),
            np.zeros(self.num_envs, bool),
            self._done.copy(),
        )
        for i, env in enumerate(self._envs):
            crashed = False
            start = time.perf_counter()
            if autoreset[i]:
                self._episodes[i] += 1
                obs, info = self._start_episode(i)
                reward, self._steps[i] = 0.0, 0
            else:
                try:
                    obs, reward, terminated[i], truncated[i], info = env.step(int(actions[i]))
                except Exception:  # noqa: BLE001
                    # a game's fault is a crash record, not the campaign's end
                    obs, info = env.reset()
                    reward, crashed, terminated[i] = 0.0, True, True
                self._steps[i] += 1
                truncated[i] |= self._steps[i] >= self.max_steps_in_episode and not terminated[i]
            rows.append(
                self._read(
                    i, obs, info, float(reward), (time.perf_counter() - start) * 1e3, crashed
                )
            )
        self._done = terminated | truncated
        frames, telemetry, extra = self._batch(rows)
        return (
            frames,
            telemetry.game_reward,
            terminated,
            truncated,
            {"telemetry": telemetry, "autoreset": autoreset, **extra},
        )

    def close(self) -> None:
        for env in self._envs:
            env.close()
        self._envs = []
