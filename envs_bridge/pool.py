"""A game farm: ``actors`` host games, one process per Ray actor, as one batched :class:`HostEnv`.

A game process that dies, hangs or sends a malformed frame is a crash bug record, not a crash of
the campaign (SPEC §4): :class:`GameFarm` records it, restarts that game and goes on.

* chosen: the farm resets every episode itself from ``seed + i + N * e``, because a crash trace
  then replays in a fresh single game from its record's seed.
* chosen: a failing reset is retried in fresh processes, because it has no action to record.

Example: ``envs_bridge.make("supertuxkart:scotland", actors=4)``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings
from collections.abc import Callable

import numpy as np

from envs_bridge.protocol import (
    BridgeError,
    GameCrashed,
    GameTimeout,
    HostEnv,
    MalformedFrame,
    check_frames,
)
from jgtest.records import BugRecord
from jgtest.types import Telemetry

#: Fresh processes a failing reset is tried in before the farm gives up.
RESET_ATTEMPTS = 3
_TELEMETRY_FIELDS = tuple(field.name for field in dataclasses.fields(Telemetry))
_GAME_ATTRIBUTES = (
    "name",
    "num_envs",
    "num_actions",
    "action_names",
    "frame_shape",
    "bug_kinds",
    "bug_names",
    "num_cells",
    "max_steps_in_episode",
    "intro_steps",
    "noop_action",
)


def _import_ray():
    try:
        import ray
    except ImportError as error:
        raise ImportError("envs_bridge.pool needs Ray: pip install jgtest[dist]") from error
    return ray


class _GameActor:
    """Lives in the actor's process and holds its one game."""

    def __init__(self, make_game: Callable[[], HostEnv]):
        self.game = make_game()

    def describe(self) -> dict:
        """The game's attributes, this process's pid and the Ray node it runs on."""
        import ray

        game = self.game
        return {
            "pid": os.getpid(),
            "node": ray.get_runtime_context().get_node_id(),
            **{key: getattr(game, key) for key in _GAME_ATTRIBUTES},
        }

    def reset(self, seed: int):
        return self.game.reset(seed)

    def step(self, action: int):
        return self.game.step(np.asarray([action], np.int32))

    def close(self) -> None:
        self.game.close()


class GameFarm(HostEnv):
    """``actors`` games, one per Ray actor process, behind the host contract.

    Frames come back as ``uint8[N, H, W, C]`` and ``info["telemetry"]`` as the per-game telemetry
    concatenated to ``[N, ...]``; ``info`` holds only ``"telemetry"`` and ``"autoreset"``. Without
    a Ray to join, the farm starts a local one; on a cluster every node needs this package and the
    game's, since each actor imports the factory's module.

    **Episodes and seeds.** The farm resets each game itself at the start of every episode:
    episode ``e`` of slot ``i`` is reset with :meth:`episode_seed` = ``seed + i + N * e``
    (episode 0 is the contract's ``seed + i``). The step after an episode ends (``terminated |
    truncated``, or a crash) resets that game with its next episode's seed and returns the first
    frame with reward 0 and ``info["autoreset"]`` set. A bug trace of slot ``i`` therefore
    replays in a fresh single game: ``reset(record.seed)`` then ``record.actions``.

    **Faults.** On a step, a game process that died (Ray's ``RayActorError``: killed, out of
    memory, a native crash), a step that did not answer within ``timeout_s`` (the process is
    killed with ``ray.kill``), a :class:`GameCrashed` (or another bridge error) or a malformed
    reply (:class:`MalformedFrame` from :func:`check_frames`, or a reply not of the contract's
    form) is a crash of that game. The farm (a) builds a ``kind="crash"`` :class:`BugRecord` with
    the episode's actions up to and including the failing one, the episode's seed and index, the
    slot, the last good position, the seconds since the farm started (``wall_s``) and the error
    (``detail``), keeps it in :attr:`crashes` and hands it to ``on_crash`` at once; (b) replaces
    the actor with a fresh process; (c) returns for that slot ``terminated=True``, reward 0, its
    last good frame and telemetry with ``crashed=True``. The other games go on. A fault during a
    reset is retried in a fresh process, up to :data:`RESET_ATTEMPTS`, then raised as
    :class:`GameCrashed`; any other exception a game raises is a bug of its bridge and
    propagates.

    Args:
      make_game: picklable ``() -> HostEnv`` building one game (``num_envs == 1``).
      actors: games (and actor processes) in the batch, ``num_envs``.
      seed: the seed :meth:`reset` uses when given none.
      name: the game id in records (default: the game's own ``name``).
      ray_address: a Ray cluster to join; without it, and with no Ray running,
        a local Ray instance is started (and shut down by :meth:`close`). A
        Ray already connected in this process is used as it is.
      timeout_s: limit of every reset and step call, in seconds.
      start_timeout_s: limit for starting a game process (importing the game
        and building it).
      cpus_per_actor: Ray CPUs each actor reserves (fractions let several
        games share a core).
      on_crash: called with each crash :class:`BugRecord` as soon as it is found.

    Raises:
      ValueError: ``actors < 1``, a non-positive timeout, a negative
        ``cpus_per_actor``, or a factory whose game has ``num_envs != 1``.
      GameCrashed, GameTimeout: a game process could not be started.
      ImportError: Ray is not installed.
    """

    def __init__(
        self,
        make_game: Callable[[], HostEnv],
        actors: int,
        seed: int = 0,
        name: str | None = None,
        ray_address: str | None = None,
        timeout_s: float = 60.0,
        start_timeout_s: float = 120.0,
        cpus_per_actor: float = 0.5,
        on_crash: Callable[[BugRecord], None] | None = None,
    ):
        if not callable(make_game):
            raise ValueError(f"make_game must be a callable building one game, got {make_game!r}")
        if int(actors) < 1:
            raise ValueError(f"actors must be >= 1, got {actors}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if not start_timeout_s > 0:
            raise ValueError(f"start_timeout_s must be > 0, got {start_timeout_s}")
        if not cpus_per_actor >= 0:
            raise ValueError(f"cpus_per_actor must be >= 0, got {cpus_per_actor}")
        ray = self._ray = _import_ray()
        self.num_envs = int(actors)
        self.timeout_s, self.start_timeout_s = float(timeout_s), float(start_timeout_s)
        self.crashes: list[BugRecord] = []
        self._make_game, self._on_crash, self._default_seed = make_game, on_crash, int(seed)
        self._actors: list = [None] * self.num_envs
        self._pids = [0] * self.num_envs
        self._nodes = [""] * self.num_envs
        self._closed = False
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            cpus = max(os.cpu_count() or 1, math.ceil(self.num_envs * cpus_per_actor))
            local = (
                {}
                if ray_address
                else dict(num_cpus=cpus, include_dashboard=False, ignore_reinit_error=True)
            )
            # JAX warns of any fork; Ray's is subprocess's fork + exec
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
                ray.init(address=ray_address, log_to_driver=False, **local)
        # SPREAD: the games go to as many nodes as the cluster has, so a lost node takes the fewest
        # games
        self._actor_class = ray.remote(_GameActor).options(
            num_cpus=cpus_per_actor, max_restarts=0, scheduling_strategy="SPREAD"
        )
        self._start_time = time.monotonic()
        self.name = name or "game farm"
        try:
            described = self._spawn(range(self.num_envs))
        except BaseException:
            self.close()
            raise
        first = described[0]
        if first["num_envs"] != 1:
            self.close()
            built = first["num_envs"]
            raise ValueError(
                f"make_game must build a single game (num_envs == 1), it built num_envs={built}"
            )
        self.name = name or first["name"]
        self.num_actions, self.action_names = first["num_actions"], tuple(first["action_names"])
        self.frame_shape, self.bug_kinds = tuple(first["frame_shape"]), tuple(first["bug_kinds"])
        self._bug_names = tuple(first["bug_names"])
        self.num_cells, self.max_steps_in_episode = (
            first["num_cells"],
            first["max_steps_in_episode"],
        )
        self.intro_steps, self.noop_action = first["intro_steps"], first["noop_action"]
        self._seed: int | None = None
        self._episode = np.zeros(self.num_envs, np.int64)
        self._actions: list[list[int]] = [[] for _ in range(self.num_envs)]
        self._needs_reset = np.zeros(self.num_envs, bool)
        self._frames = np.zeros((self.num_envs, *self.frame_shape), np.uint8)
        self._telemetry: list[Telemetry | None] = [None] * self.num_envs

    # -- public surface -------------------------------------------------------------------------

    @property
    def bug_names(self) -> tuple[str, ...]:
        return self._bug_names

    def pids(self) -> list[int]:
        """The OS pid of each game's actor process (changes when a game is restarted)."""
        return list(self._pids)

    def nodes(self) -> list[str]:
        """The Ray node id each game's actor runs on (games are spread over the cluster's nodes)."""
        return list(self._nodes)

    def episode_seed(self, env_index: int, episode: int) -> int:
        """The seed episode ``episode`` of slot ``env_index`` is reset with: ``seed + i + N *
        episode``."""
        return self._seed + env_index + self.num_envs * episode

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict]:
        """Resets every game (game ``i`` with ``seed + i``) and starts episode 0 of each slot."""
        self._check_open()
        self._seed = self._default_seed if seed is None else int(seed)
        self._episode[:] = 0
        replies = self._call([(i, "reset", self.episode_seed(i, 0)) for i in range(self.num_envs)])
        for i, reply in enumerate(replies):
            self._start_episode(i, reply)
        info = {"telemetry": self._batched_telemetry(), "autoreset": np.zeros(self.num_envs, bool)}
        return self._frames.copy(), info

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Steps every game (or auto-resets those whose episode ended); faults become crash
        records."""
        self._check_open()
        if self._seed is None:
            raise RuntimeError(f"{self.name}: call reset() before step()")
        actions = self.check_actions(actions)
        autoreset = self._needs_reset.copy()
        replies = self._call(
            [
                (i, "reset", self.episode_seed(i, int(self._episode[i]) + 1))
                if autoreset[i]
                else (i, "step", int(actions[i]))
                for i in range(self.num_envs)
            ]
        )
        reward = np.zeros(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        crashed = []
        for i, reply in enumerate(replies):
            if autoreset[i]:
                self._episode[i] += 1
                self._start_episode(i, reply)
                continue
            self._actions[i].append(int(actions[i]))
            if isinstance(reply, BridgeError):
                self._record_crash(i, reply)
                crashed.append(i)
                terminated[i] = True
            else:
                frames, reward[i], terminated[i], truncated[i], self._telemetry[i] = reply
                self._frames[i] = frames[0]
            self._needs_reset[i] = terminated[i] or truncated[i]
        if crashed:
            self._replace(crashed)
        info = {"telemetry": self._batched_telemetry(), "autoreset": autoreset}
        return self._frames.copy(), reward, terminated, truncated, info

    def close(self) -> None:
        """Closes the games, kills the actor processes and shuts down the Ray the farm started
        (idempotent)."""
        if self._closed:
            return
        self._closed = True
        actors = [actor for actor in self._actors if actor is not None]
        if actors:
            refs = [actor.close.remote() for actor in actors]
            self._ray.wait(refs, num_returns=len(refs), timeout=min(self.timeout_s, 5.0))
            for actor in actors:
                self._ray.kill(actor, no_restart=True)
        if self._started_ray:
            self._ray.shutdown()

    # -- internals ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self.name}: the game farm is closed")

    def _spawn(self, slots) -> list[dict]:
        """Starts a fresh actor in each slot and waits for its game to be built."""
        slots = list(slots)
        for i in slots:
            self._actors[i] = self._actor_class.remote(self._make_game)
        refs = [self._actors[i].describe.remote() for i in slots]
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=self.start_timeout_s)
        if len(ready) < len(refs):
            raise GameTimeout(
                f"{self.name}: a game process did not start within {self.start_timeout_s} s"
            )
        try:
            described = self._ray.get(refs, timeout=self.start_timeout_s)
        except self._ray.exceptions.RayError as error:
            raise GameCrashed(f"{self.name}: a game process failed to start: {error}") from error
        for i, description in zip(slots, described):
            self._pids[i], self._nodes[i] = description["pid"], description["node"]
        return described

    def _replace(self, slots: list[int]) -> None:
        """Kills the actors of ``slots`` (hung or dead) and starts fresh ones."""
        for i in slots:
            self._ray.kill(self._actors[i], no_restart=True)
        self._spawn(slots)

    def _call(self, requests: list[tuple[int, str, int]]) -> list:
        """Sends each ``(slot, "reset" | "step", seed | action)`` at once; each reply, parsed, or
        the :class:`BridgeError` it failed with, all within one ``timeout_s``."""
        refs = [getattr(self._actors[i], call).remote(argument) for i, call, argument in requests]
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=self.timeout_s)
        ready = set(ready)
        replies = []
        for ref, (i, call, _) in zip(refs, requests):
            process = f"game process {self._pids[i]}"
            if ref not in ready:
                timed_out = f"{call} timed out after {self.timeout_s} s"
                replies.append(GameTimeout(f"{self.name}: {timed_out} ({process} killed)"))
                continue
            try:
                replies.append(self._parse(self._ray.get(ref, timeout=self.timeout_s), call))
            except self._ray.exceptions.RayActorError as error:
                why = f"{type(error).__name__}: killed by a signal, out of memory or a native crash"
                replies.append(GameCrashed(f"{self.name}: {process} died during {call} ({why})"))
            except self._ray.exceptions.RayTaskError as error:  # the game raised
                if not isinstance(error.cause, BridgeError):
                    raise
                replies.append(error.cause)
            except MalformedFrame as error:  # from _parse
                replies.append(error)
        return replies

    def _parse(self, reply, call: str) -> tuple:
        """``(frames[1, H, W, C], reward, terminated, truncated, telemetry[1, ...])``, or
        MalformedFrame."""
        try:
            if call == "reset":
                (frames, info), reward, terminated, truncated = reply, 0.0, False, False
            else:
                frames, reward, terminated, truncated, info = reply
            frames = check_frames(frames, (1, *self.frame_shape), self.name)
            telemetry = Telemetry(
                **{key: np.asarray(getattr(info["telemetry"], key)) for key in _TELEMETRY_FIELDS}
            )
            if any(np.shape(getattr(telemetry, key))[:1] != (1,) for key in _TELEMETRY_FIELDS):
                raise ValueError("telemetry is not batched [1, ...]")
            flags = [np.asarray(value).reshape(()) for value in (reward, terminated, truncated)]
            return frames, float(flags[0]), bool(flags[1]), bool(flags[2]), telemetry
        except MalformedFrame:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            raise MalformedFrame(
                f"{self.name}: malformed reply to {call} ({type(error).__name__}: {error})"
            ) from error

    def _start_episode(self, i: int, reply) -> None:
        """Takes slot ``i``'s reset reply (retrying a failed reset in fresh processes)."""
        seed = self.episode_seed(i, int(self._episode[i]))
        for _ in range(RESET_ATTEMPTS):
            if not isinstance(reply, BridgeError):
                break
            warning = f"{self.name}: game {i} failed at reset(seed={seed}) ({reply}); restarting it"
            warnings.warn(warning, RuntimeWarning, stacklevel=3)
            self._replace([i])
            [reply] = self._call([(i, "reset", seed)])
        if isinstance(reply, BridgeError):
            attempts = f"{RESET_ATTEMPTS} fresh processes"
            raise GameCrashed(
                f"{self.name}: game {i} failed at reset(seed={seed}) in {attempts}: {reply}"
            )
        frames, _, _, _, self._telemetry[i] = reply
        self._frames[i] = frames[0]
        self._actions[i] = []
        self._needs_reset[i] = False

    def _record_crash(self, i: int, error: BridgeError) -> None:
        """Keeps slot ``i``'s crash record and hands it to ``on_crash``; marks its telemetry
        crashed."""
        last = self._telemetry[i]
        episode = int(self._episode[i])
        record = BugRecord(
            kind="crash",
            game=self.name,
            bug_id=-1,
            step=len(self._actions[i]) - 1,
            episode=episode,
            seed=self.episode_seed(i, episode),
            env_index=i,
            actions=tuple(self._actions[i]),
            position=tuple(float(x) for x in last.position.reshape(-1)),
            wall_s=time.monotonic() - self._start_time,
            detail=f"{type(error).__name__}: {error}",
        )
        self.crashes.append(record)
        if self._on_crash is not None:
            self._on_crash(record)
        zeros = {
            key: np.zeros_like(getattr(last, key))
            for key in ("bugs_fired", "game_reward", "frame_time_ms")
        }
        self._telemetry[i] = dataclasses.replace(last, crashed=np.ones_like(last.crashed), **zeros)

    def _batched_telemetry(self) -> Telemetry:
        fields = {
            key: np.concatenate([getattr(t, key) for t in self._telemetry])
            for key in _TELEMETRY_FIELDS
        }
        return Telemetry(**fields)
