"""The host contract every bridged game keeps: batched numpy ``reset`` / ``step``.

A host game runs outside JAX; the host loop (:mod:`jgtest.host_loop`) feeds its frames to the
same jitted agents as the on-device games. The contract mirrors gymnax's (SPEC §4), batched over
``num_envs`` games (:class:`HostEnv`)::

    obs, info = env.reset(seed)                    # game i seeded with seed + i
    obs, reward, terminated, truncated, info = env.step(actions)

* chosen: ``info["telemetry"]`` is the on-device :class:`jgtest.types.Telemetry`, batched, because
  oracles and reports then read bridged games unchanged.
* chosen: episodes restart on the next step (``info["autoreset"]``), as envpool and Gymnasium do.
"""

from __future__ import annotations

import abc
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from jgtest.types import Telemetry


class BridgeError(RuntimeError):
    """Base class of what a bridged game can fail with."""


class GameCrashed(BridgeError):
    """The game process died (or the game reported a crash) during a call."""


class GameTimeout(BridgeError, TimeoutError):
    """A call to the game did not answer within its timeout (a hang)."""


class MalformedFrame(BridgeError, ValueError):
    """A frame of the wrong shape or dtype, or with NaN or infinite values."""


def importable_here() -> None:
    """The current directory on ``sys.path``, as ``python -m`` puts it: a user's game, telemetry and
    assertion modules are found from where ``jgtest`` runs."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def load_named(spec: str, what: str, check: Callable[[Any], bool]) -> Any:
    """The object ``module:name`` names (a user's telemetry function, a game's assertions), or
    ``ValueError`` saying what is missing; ``check`` says whether the object is a ``what``."""
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name:
        raise ValueError(f"a {what} is named module:name, got {spec!r}")
    importable_here()
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"{what} {spec!r}: cannot import {module_name!r} ({error})") from None
    found = getattr(module, name, None)
    if found is None or not check(found):
        raise ValueError(f"{what} {spec!r}: {module_name} has no {what} named {name!r}")
    return found


def episode_seed(seed: int, game: int, episode: int) -> int:
    """The seed a replayable bridge resets ``episode`` of game ``game`` with, in a campaign of
    ``seed`` (:attr:`HostEnv.replayable`): a record's seed, game and episode give its start."""
    return int(np.random.SeedSequence([seed, game, episode]).generate_state(1)[0] % (2**31))


def host_telemetry(position, cell, bugs_fired, game_reward, frame_time_ms, crashed) -> Telemetry:
    """A batched :class:`Telemetry` of numpy arrays with the on-device dtypes
    (``float32`` position, reward and frame time, ``int32`` cell, ``bool`` flags)."""
    return Telemetry.make(position, cell, bugs_fired, game_reward, frame_time_ms, crashed, xp=np)


def check_frames(frames: Any, shape: tuple[int, ...], game: str) -> np.ndarray:
    """``frames`` as a ``uint8`` array of ``shape``, or :class:`MalformedFrame` saying what is
    wrong.

    Float frames are accepted when finite and in ``[0, 255]`` (and rounded);
    NaN or infinite values, a wrong shape or a non-numeric dtype are refused.
    """
    array = np.asarray(frames)
    if array.shape != tuple(shape):
        raise MalformedFrame(
            f"{game}: frame batch has shape {array.shape}, expected {tuple(shape)}"
        )
    if array.dtype == np.uint8:
        return array
    if not np.issubdtype(array.dtype, np.number):
        raise MalformedFrame(f"{game}: frames have dtype {array.dtype}, expected uint8")
    if not np.all(np.isfinite(array)):
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise MalformedFrame(f"{game}: {bad} NaN or infinite pixel value(s) in the frame batch")
    if array.min() < 0 or array.max() > 255:
        raise MalformedFrame(
            f"{game}: pixel values in [{array.min()}, {array.max()}], outside [0, 255]"
        )
    return np.round(array).astype(np.uint8)


class DeviceTelemetry(abc.ABC):
    """A game's telemetry as pure JAX functions of the raw arrays its :meth:`HostEnv.step_raw`
    returns.

    Instances are hashable and compare equal when they compute the same thing
    (the host loop caches its jitted step per telemetry).

    Attributes:
      keys: the ``info`` entries of a reset or a step that :meth:`take` reads.
    """

    keys: tuple[str, ...]

    def take(self, info: dict) -> dict:
        """The raw arrays :meth:`init` and :meth:`step` read, from a reset's or a step's ``info``:
        the :attr:`keys` entries as they are. A telemetry that reads a few columns of a wide
        array cuts them here, on the host, so that the host loop's per-step program keeps
        only small buffers: XLA's CPU runtime runs a program whose buffers are all at most
        512 bytes on the calling thread, one that holds a larger one on its thread pool
        (:func:`jgtest.host_loop.make_player`). Works on numpy and jax arrays alike."""
        return {key: info[key] for key in self.keys}

    @abc.abstractmethod
    def init(self, raw: dict):
        """The carry (a pytree) after a reset whose ``info`` holds ``raw``."""

    @abc.abstractmethod
    def step(self, carry, raw: dict, autoreset) -> tuple[Any, Telemetry]:
        """``(carry, telemetry)`` of a step: the :class:`Telemetry` :meth:`HostEnv.step` would
        report."""


class HostEnv(abc.ABC):
    """A batch of ``num_envs`` copies of a game on the host, on the contract of
    :mod:`envs_bridge.protocol`.

    Subclasses set the attributes below in ``__init__`` and implement
    :meth:`reset`, :meth:`step` and :meth:`close`. What a step returns:

    * ``obs``: ``uint8[N, H, W, C]`` frames (``frame_shape``), as the game drew them (the host
      loop grayscales, resizes and stacks them with the on-device wrappers' functions).
    * ``reward``: ``float32[N]``, the game reward of the paper's setting.
    * ``info["telemetry"]``: a :class:`jgtest.types.Telemetry` of numpy arrays, batched
      ``[N, ...]``, with the same fields as on device (position, cell, bugs_fired, game_reward,
      frame_time_ms, crashed).
    * ``info["autoreset"]``: ``bool[N]``. The step after ``terminated | truncated`` ignores the
      action, resets that game and returns its first frame with reward 0; ``autoreset`` marks
      those steps, which are not transitions of any episode.
    * ``info["features"]``: ``float32[N, F]``, from a game that provides Wuji's state features
      (the ``state_features`` signal, Def. 3), with their ranges in :attr:`feature_bounds`.
    * a game's own entries (``"ram"`` for Atari, ``"path_done"`` and ``"centering"`` for
      SuperTuxKart).

    A game whose telemetry is a pure function of a few raw arrays (Ms. Pac-Man's RAM) may also
    offer it as a :class:`DeviceTelemetry` and a :meth:`step_raw` that skips it: the host loop then
    computes the telemetry inside its one jitted call a step. The game farm
    (:mod:`envs_bridge.pool`) turns :class:`BridgeError` faults into crash bug records and restarts
    the game.

    Attributes:
      name: the game's id as the CLI names it (``"ale:MsPacman"``).
      num_envs: games stepped together.
      num_actions: size of the discrete action set.
      action_names: one name per action.
      frame_shape: ``(H, W, C)`` of one frame.
      bug_kinds: the oracle kind of each injected bug (``bugs_fired`` order).
      num_cells: size of the coverage-cell space (``telemetry.cell`` range).
      max_steps_in_episode: the episode cap (truncation).
      intro_steps, noop_action: see below (class attributes; 0 intro steps by default).
    """

    name: str
    num_envs: int
    num_actions: int
    action_names: tuple[str, ...]
    frame_shape: tuple[int, int, int]
    bug_kinds: tuple[str, ...]
    num_cells: int
    max_steps_in_episode: int
    #: The signals the game provides to testing methods (:mod:`jgtest.signals`).
    signals: frozenset[str] = frozenset()
    #: Whether every episode starts from :func:`episode_seed`: such a game takes ``first_game`` (the
    #: campaign's index of its game 0) and ``reset(seed, episode=E)`` starts its games at episode E,
    #: so that :func:`jgtest.host_loop.replay_record` plays a record's actions again.
    replayable: bool = False
    #: ``(low, high)``, ``float32[F]`` each: the range of each state feature of
    #: ``info["features"]``, set by a game that provides the ``state_features`` signal.
    feature_bounds: tuple[np.ndarray, np.ndarray] | None = None
    #: Set by a game that offers :meth:`step_raw` (the class docstring).
    device_telemetry: DeviceTelemetry | None = None
    #: Steps at the start of each episode that the host loop plays with :attr:`noop_action` and does
    #: not count as the agent's (a game's intro, waited out as RELINE's package waits out Ms.
    #: Pac-Man's).
    intro_steps: int = 0
    noop_action: int = 0

    @property
    def num_bugs(self) -> int:
        return len(self.bug_kinds)

    @property
    def bug_names(self) -> tuple[str, ...]:
        """What each bug is, in ``bugs_fired`` order, for records and reports (its kind, unless the
        game names it)."""
        return self.bug_kinds

    @classmethod
    def declared_signals(cls, name: str, options: dict) -> frozenset[str]:
        """The signals the game ``name`` made with ``options`` provides, known before it starts:
        :attr:`signals` unless the game or an option adds one (an Atari game whose RAM position is
        annotated, a Gymnasium game's telemetry function)."""
        del name, options
        return cls.signals

    @abc.abstractmethod
    def reset(self, seed: int) -> tuple[np.ndarray, dict]:
        """Resets every game (game ``i`` with ``seed + i``): ``(frames, info)``."""

    @abc.abstractmethod
    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Steps every game: ``(frames, reward, terminated, truncated, info)``."""

    def step_raw(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Steps every game without computing telemetry or reward: ``(frames, terminated, truncated,
        info)``, ``info`` holding ``autoreset`` and the entries :attr:`device_telemetry` reads.

        A run steps a game with :meth:`step` or with this, not both, from its reset on.
        """
        raise NotImplementedError(
            f"{self.name} computes its telemetry on the host: step it with step()"
        )

    def close(self) -> None:  # noqa: B027 -- optional: a farm with nothing to free keeps it
        """Frees the games (idempotent)."""

    def check_actions(self, actions) -> np.ndarray:
        """``actions`` as ``int32[num_envs]``, or ``ValueError`` naming the bad entry.

        The shape and dtype are checked the first time a batch of that shape and dtype
        comes (a host loop sends the same every step); the range on every step, in one
        comparison when all are in it.
        """
        actions = np.asarray(actions)
        if (actions.shape, actions.dtype) != getattr(self, "_checked_actions", None):
            if actions.shape != (self.num_envs,):
                raise ValueError(
                    f"{self.name}: expected {self.num_envs} actions, got shape {actions.shape}"
                )
            if not np.issubdtype(actions.dtype, np.integer):
                raise ValueError(
                    f"{self.name}: actions must be integers, got dtype {actions.dtype}"
                )
            self._checked_actions = (actions.shape, actions.dtype)
        if not (
            actions.astype(np.int64, copy=False).view(np.uint64) < self.num_actions
        ).all():  # negatives wrap above
            bad = np.flatnonzero((actions < 0) | (actions >= self.num_actions))
            raise ValueError(
                f"{self.name}: action {actions[bad[0]]} of game {bad[0]} is outside [0, "
                f"{self.num_actions})"
            )
        return actions.astype(np.int32, copy=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
