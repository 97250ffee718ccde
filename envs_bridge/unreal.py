"""Unreal games through UnrealCV, on the host contract (PPGTA §V-D: "We utilize UnrealCV plugin to
integrate with the game environment").

:class:`UnrealEnv` drives ``num_envs`` games, one ``unrealcv.Client`` each
(``../shared/UNREALCV.md``): the paper's 9 keys (§V-C), ``lit`` frames, object boxes from
``object_mask``, the camera's pose.

* chosen: the frame time is the ``lit`` request's round trip, because no command returns the FPS.
* chosen: a fault ends that game's episode only, because a campaign keeps what it recorded.

Example: ``jgtest run random --game unreal:127.0.0.1:9000 --ppgta-models runs/park/models``.
"""

from __future__ import annotations

import io
import socket
import threading
import time

import numpy as np

from envs_bridge.protocol import (
    BridgeError,
    GameCrashed,
    GameTimeout,
    HostEnv,
    MalformedFrame,
    host_telemetry,
)

#: The paper's 9 keys in ``ParkWorld``'s action order (forward, left, back, right, turn left, turn
#: right, look up, look down, jump), Unreal's key names.
PAPER_KEYS = ("W", "A", "S", "D", "Left", "Right", "Up", "Down", "SpaceBar")


class UnrealCommandError(BridgeError):
    """The game answered a command with ``error …``."""


def _client_class():
    import logging

    logging.getLogger("unrealcv").setLevel(logging.ERROR)
    from unrealcv import Client

    return Client


class UnrealConnection:
    """One game over one ``unrealcv.Client``: requests with a timeout, reconnects after a broken
    wire.

    A ``TimeoutError`` marks the connection broken and reconnects (the late reply would otherwise
    answer the next request); a wrong magic or a closed socket end in the same way, and so does a
    reply id out of order (the client's receiving thread stops on its id assertion, so the
    request times out). The ``unrealcv`` package is imported lazily: it pulls in docker, cv2, PIL
    and pydantic and logs at import.

    Args:
      endpoint: ``(host, port)`` or a unix socket path.
      timeout_s: per request.
      connect_timeout_s: for the greeting.
      on_fault: called with a one-line description of every fault.
    """

    def __init__(
        self, endpoint, timeout_s: float = 5.0, connect_timeout_s: float = 5.0, on_fault=None
    ):
        self.endpoint = endpoint
        self.kind = "unix" if isinstance(endpoint, str) else "inet"
        self.timeout_s, self.connect_timeout_s = timeout_s, connect_timeout_s
        self.on_fault = on_fault or (lambda line: None)
        self.client = None
        self.connects = 0

    def connect(self) -> None:
        """A fresh client, greeted within ``connect_timeout_s``, or :class:`GameTimeout` /
        :class:`GameCrashed`."""
        self.close()
        client = _client_class()(self.endpoint, self.kind)
        # a dead wire fails fast; we reconnect ourselves
        client.RECONNECT_ATTEMPTS, client.RECONNECT_BASE_DELAY = (
            1,
            0.05,
        )
        result = {}
        thread = threading.Thread(
            target=lambda: result.setdefault("ok", client.connect(timeout=self.connect_timeout_s)),
            daemon=True,
        )
        thread.start()
        thread.join(self.connect_timeout_s)
        # connect() blocks for ever when no greeting comes: close the socket under it
        if thread.is_alive():
            _close_socket(client)
            self._fault(
                GameTimeout(
                    f"unreal {self.endpoint}: connect: no greeting within "
                    f"{self.connect_timeout_s:g}s"
                )
            )
        if not result.get("ok"):
            _close_socket(client)
            self._fault(
                GameCrashed(
                    f"unreal {self.endpoint}: connect: the game refused the connection or "
                    "did not greet"
                )
            )
        self.client = client
        self.connects += 1

    def close(self) -> None:
        if self.client is not None:
            _close_socket(self.client)
            self.client = None

    def _fault(self, error: BridgeError):
        self.on_fault(str(error))
        raise error

    def _broken(self, error: BridgeError):
        """The wire can no longer be trusted (a late reply would answer the next request): drop
        it."""
        self.close()
        self._fault(error)

    def request(self, command: str):
        """The game's reply to ``command`` (``str`` or ``bytes``); connects first when needed."""
        if self.client is None:
            self.connect()
        try:
            reply = self.client.request(command, timeout=self.timeout_s)
        except TimeoutError:
            self._broken(
                GameTimeout(
                    f"unreal {self.endpoint}: {command!r}: no reply within "
                    f"{self.timeout_s:g}s; connection marked broken, reconnecting"
                )
            )
        except (ConnectionError, OSError) as error:
            self._broken(
                GameCrashed(
                    f"unreal {self.endpoint}: {command!r}: the connection broke "
                    f"({type(error).__name__}: {error})"
                )
            )
        if reply is None:
            self._broken(
                GameCrashed(
                    f"unreal {self.endpoint}: {command!r}: the connection closed before the reply"
                )
            )
        if isinstance(reply, str) and reply.startswith("error"):
            self._fault(
                UnrealCommandError(
                    f"unreal {self.endpoint}: {command!r}: the game answered {reply!r}"
                )
            )
        return reply

    def image(self, command: str) -> np.ndarray:
        """``uint8[H, W, 4]`` (RGBA) from a ``png``/``bmp`` reply, or :class:`MalformedFrame` naming
        the command."""
        return self.decode(command, self.request(command))

    def decode(self, command: str, reply) -> np.ndarray:
        """The image in ``reply`` to ``command`` (:meth:`image`)."""
        from PIL import Image

        if not isinstance(reply, bytes) or not reply:
            shown = reply[:40] if isinstance(reply, (str, bytes)) else reply
            self._fault(
                MalformedFrame(
                    f"unreal {self.endpoint}: {command!r}: expected image bytes, got "
                    f"{type(reply).__name__} {shown!r} "
                    "(an empty image, or a dark 3-channel one whose bytes decode as text)"
                )
            )
        try:
            image = np.asarray(Image.open(io.BytesIO(reply)))
        except Exception as error:  # PIL raises many kinds
            self._fault(
                MalformedFrame(
                    f"unreal {self.endpoint}: {command!r}: undecodable image "
                    f"({type(error).__name__}: {error})"
                )
            )
        if image.ndim != 3 or image.shape[2] not in (3, 4) or image.dtype != np.uint8:
            self._fault(
                MalformedFrame(
                    f"unreal {self.endpoint}: {command!r}: expected an 8-bit RGBA image, got "
                    f"shape {image.shape} {image.dtype}"
                )
            )
        if image.shape[2] == 3:  # PIL reads UnrealCV's 32-bit BMP as RGB
            image = np.concatenate([image, np.full(image.shape[:2] + (1,), 255, np.uint8)], axis=-1)
        return image

    def floats(self, command: str, n: int) -> tuple[float, ...]:
        """The ``n`` numbers of the reply to ``command``, or :class:`MalformedFrame` naming it."""
        reply = self.request(command)
        try:
            values = tuple(float(v) for v in str(reply).split())
        except ValueError:
            values = ()
        if len(values) != n:
            self._fault(
                MalformedFrame(
                    f"unreal {self.endpoint}: {command!r}: expected {n} numbers, got "
                    f"{str(reply)[:60]!r}"
                )
            )
        return values

    def colour(self, command: str) -> tuple[int, int, int]:
        """``(r, g, b)`` of a ``(R=..,G=..,B=..,A=..)`` reply, or :class:`MalformedFrame` naming the
        command."""
        reply = str(self.request(command))
        try:
            fields = dict(part.split("=") for part in reply.strip("() ").split(","))
            return int(fields["R"]), int(fields["G"]), int(fields["B"])
        except (ValueError, KeyError):
            self._fault(
                MalformedFrame(
                    f"unreal {self.endpoint}: {command!r}: expected a colour "
                    f"(R=..,G=..,B=..,A=..), got {reply[:60]!r}"
                )
            )


def _close_socket(client) -> None:
    sock = getattr(client, "sock", None)
    if sock is not None:
        # shutdown wakes a reader blocked on it
        for close in (
            lambda: sock.shutdown(socket.SHUT_RDWR),
            sock.close,
        ):
            try:
                close()
            except OSError:
                pass
    try:
        client.disconnect()
    except Exception:
        pass


class UnrealEnv(HostEnv):
    """Unreal games on the host contract.

    * actions are the paper's 9 keys (§V-C: WASD, the arrow keys, the space bar), sent as
      ``vset /action/keyboard KEY SECONDS`` (``key_map``, ``action_seconds``);
    * frames are ``vget /camera/{camera}/lit png`` (4 channels; RGB kept);
    * the detector's ground truth: ``vget /objects``, each object's ``location``, ``bounds`` and
      mask ``color`` (read once per connection), and each step's ``object_mask png``, whose
      colours give every object's box and pixels in the frame, in the shape of ``ParkWorld``'s
      ``info["objects"]``;
    * the camera's ``rotation``: its yaw (radians, ``info["yaw"]``; the scripted 360° walk steers
      by it);
    * telemetry: the camera's ``location`` (Unreal units, ``units_per_cell`` to a cell) and the
      frame time measured at the client (the ``lit`` request's round trip: a synchronous request
      waits at least one game tick);
    * a reset is a console command (``reset_command``, ``vrun RestartLevel {seed}`` by default).

    Faults (:class:`UnrealConnection`): a timeout, a wrong magic, a closed socket or a reply id
    out of order marks the connection broken and reconnects; a greeting that never comes is a
    ``GameTimeout``; an ``error …`` reply an :class:`UnrealCommandError`; an empty, undecodable or
    3-channel image, or a reply that does not parse, a ``MalformedFrame``. Every error names the
    command, is appended to :attr:`faults`, and the game's episode ends there (truncated,
    ``crashed`` in its telemetry, no objects in view; it restarts on the next step, and a failed
    restart is tried again on the next step).

    Args:
      endpoints: one ``(host, port)`` or unix socket path per game.
      camera: the camera id.
      key_map: one Unreal key name per action (the paper's 9 by default).
      action_seconds: how long a key is held per step.
      reset_command: the console command that starts an episode (``{seed}`` is replaced).
      max_steps_in_episode: the episode cap.
      units_per_cell: Unreal units per coverage cell (and per telemetry position unit).
      num_cells: the coverage-cell grid's side (cells are ``row * num_cells + col``).
      timeout_s: seconds a request may take.
      connect_timeout_s: seconds the greeting may take.
      types: object type names (an object's type is its name's prefix).
      max_visible: objects reported per frame (the most pixels first).
      min_visible_pixels: pixels an object must show to count as visible (``ParkWorld``'s rule).
    """

    #: Signals (:mod:`jgtest.signals`): the camera's place, crashes, the frames, the object mask and
    #: the server's frame time.
    signals = frozenset(
        {"cells", "position", "oracle_inputs", "rgb_frames", "objects", "frame_time"}
    )

    def __init__(
        self,
        endpoints,
        camera: int = 0,
        key_map: tuple[str, ...] = PAPER_KEYS,
        action_seconds: float = 0.1,
        reset_command: str = "vrun RestartLevel {seed}",
        max_steps_in_episode: int = 2000,
        units_per_cell: float = 100.0,
        num_cells: int = 256,
        timeout_s: float = 5.0,
        connect_timeout_s: float = 5.0,
        types: tuple[str, ...] = ("rock_pillar", "barrel", "tire", "chair"),
        max_visible: int = 8,
        min_visible_pixels: int = 12,
    ):
        if not endpoints:
            raise ValueError("UnrealEnv needs at least one endpoint")
        if len(key_map) < 1 or action_seconds <= 0:
            raise ValueError(
                "key_map must name at least one key and action_seconds must be positive"
            )
        self.name = f"unreal:{endpoints[0]}"
        self.num_envs = len(endpoints)
        self.num_actions = len(key_map)
        self.action_names = tuple(key_map)
        self.bug_kinds = ()
        self.num_cells = num_cells * num_cells
        self.max_steps_in_episode = max_steps_in_episode
        self.camera, self.key_map, self.action_seconds = camera, tuple(key_map), action_seconds
        self.reset_command, self.units_per_cell, self.grid = (
            reset_command,
            units_per_cell,
            num_cells,
        )
        self.types, self.max_visible, self.min_visible_pixels = (
            tuple(types),
            max_visible,
            min_visible_pixels,
        )
        self.faults: list[str] = []
        self.connections = [
            UnrealConnection(e, timeout_s, connect_timeout_s, self.faults.append) for e in endpoints
        ]
        self.objects: list[dict | None] = [None] * self.num_envs
        self._seeds = np.zeros(self.num_envs, np.int64)
        self._steps = np.zeros(self.num_envs, np.int64)
        self._done = np.zeros(self.num_envs, bool)
        self._episodes = np.zeros(self.num_envs, np.int64)
        self.frame_shape = None
        self._last = None

    # ----- one game -------------------------------------------------------------
    def _catalogue(self, i: int) -> dict:
        """Object names, types, locations, bounds and mask colours of game ``i`` (once per
        connection)."""
        conn = self.connections[i]
        if self.objects[i] is None or self.objects[i]["connects"] != conn.connects:
            names = str(conn.request("vget /objects")).split()
            colours = np.array(
                [conn.colour(f"vget /object/{n}/color") for n in names], np.int64
            ).reshape(-1, 3)
            self.objects[i] = {
                "names": names,
                "connects": conn.connects,
                "type": np.array(
                    [
                        self.types.index(n.rsplit("_", 1)[0])
                        if n.rsplit("_", 1)[0] in self.types
                        else -1
                        for n in names
                    ]
                ),
                "location": np.array(
                    [conn.floats(f"vget /object/{n}/location", 3) for n in names], float
                ).reshape(-1, 3),
                "bounds": np.array(
                    [conn.floats(f"vget /object/{n}/bounds", 6) for n in names], float
                ).reshape(-1, 6),
                "colour_key": colours[:, 0] * 65536 + colours[:, 1] * 256 + colours[:, 2],
            }
        return self.objects[i]

    def _observe(self, i: int) -> tuple[np.ndarray, dict]:
        conn = self.connections[i]
        command = f"vget /camera/{self.camera}/lit png"
        start = time.perf_counter()
        reply = conn.request(command)
        frame_ms = (time.perf_counter() - start) * 1000  # the round trip, not the decoding
        lit = conn.decode(command, reply)
        mask = conn.image(f"vget /camera/{self.camera}/object_mask png")
        location = conn.floats(f"vget /camera/{self.camera}/location", 3)
        rotation = conn.floats(f"vget /camera/{self.camera}/rotation", 3)
        objects = self._objects_in_view(self._catalogue(i), mask)
        position = np.array(location[:2]) / self.units_per_cell
        cell = np.clip(np.floor(position).astype(int), 0, self.grid - 1)
        return lit[..., :3], {
            "objects": objects,
            "position": position,
            "yaw": np.radians(rotation[1]),
            "cell": cell[1] * self.grid + cell[0],
            "frame_ms": frame_ms,
        }

    def _objects_in_view(self, catalogue: dict, mask: np.ndarray) -> dict:
        """``ParkWorld``-shaped ``objects`` from the mask: per object shown (most pixels first), its
        id, type, box ``(row0, col0, row1, col1)`` and pixels; ``bug`` is unknown to the bridge
        (−1)."""
        key = (
            mask[..., 0].astype(np.int64) * 65536
            + mask[..., 1].astype(np.int64) * 256
            + mask[..., 2]
        )
        k = self.max_visible
        out = {
            "id": np.full(k, -1),
            "type": np.full(k, -1),
            "bug": np.full(k, -1),
            "box": np.zeros((k, 4), np.int64),
            "pixels": np.zeros(k, np.int64),
            "visible": np.zeros(k, bool),
        }
        found = []
        for index, colour in enumerate(catalogue["colour_key"]):
            rows, cols = np.nonzero(key == colour)
            if rows.size:
                found.append(
                    (rows.size, index, (rows.min(), cols.min(), rows.max() + 1, cols.max() + 1))
                )
        for slot, (pixels, index, box) in enumerate(sorted(found, reverse=True)[:k]):
            out["id"][slot], out["type"][slot], out["box"][slot] = (
                index,
                catalogue["type"][index],
                box,
            )
            out["pixels"][slot], out["visible"][slot] = pixels, pixels >= self.min_visible_pixels
        return out

    def _restart(self, i: int, seed: int) -> tuple[np.ndarray, dict]:
        self.connections[i].request(self.reset_command.format(seed=seed))
        self._steps[i], self._done[i] = 0, False
        return self._observe(i)

    # ----- the host contract ----------------------------------------------------------
    def reset(self, seed: int) -> tuple[np.ndarray, dict]:
        self._seeds = seed + np.arange(self.num_envs)
        self._episodes[:] = 0
        results = [
            self._guarded(i, lambda i=i: self._restart(i, int(self._seeds[i])))
            for i in range(self.num_envs)
        ]
        # a game that did not restart is restarted on the next step
        self._done = np.array([r is None for r in results])
        return self._batch(results, np.zeros(self.num_envs, bool))

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        actions = self.check_actions(actions)
        autoreset = self._done.copy()
        results = []
        for i in range(self.num_envs):
            if autoreset[i]:
                self._episodes[i] += 1
                seed = int(self._seeds[i] + self._episodes[i] * self.num_envs)
                results.append(self._guarded(i, lambda i=i, seed=seed: self._restart(i, seed)))
                continue

            def one(i=i):
                self.connections[i].request(
                    f"vset /action/keyboard {self.key_map[actions[i]]} {self.action_seconds:g}"
                )
                self._steps[i] += 1
                return self._observe(i)

            results.append(self._guarded(i, one))
        frames, info = self._batch(results, autoreset)
        failed = np.array([r is None for r in results])
        truncated = ~autoreset & ((self._steps >= self.max_steps_in_episode) | failed)
        self._done = truncated | (autoreset & failed)  # a failed restart is tried again
        return (
            frames,
            np.zeros(self.num_envs, np.float32),
            np.zeros(self.num_envs, bool),
            truncated,
            info,
        )

    def _guarded(self, i: int, call):
        """``call()``, or ``None`` after a fault (recorded in :attr:`faults`; the game's episode
        ends)."""
        try:
            return call()
        except BridgeError:
            return None

    def _batch(self, results, autoreset) -> tuple[np.ndarray, dict]:
        """The games' results as batches; a failed game (``None``) repeats its last frame and
        position (keeping the shapes), is ``crashed``, and shows no objects."""
        shape = next((r[0].shape for r in results if r is not None), self.frame_shape)
        if shape is None:
            raise GameCrashed(
                f"{self.name}: no game answered; faults: {self.faults[-len(results) :]}"
            )
        self.frame_shape = tuple(shape)
        if self._last is None:
            self._last = [(np.zeros(shape, np.uint8), None)] * self.num_envs
        self._last = [r if r is not None else self._last[i] for i, r in enumerate(results)]
        frames = np.stack([f for f, _ in self._last])
        failed = np.array([r is None for r in results])
        meta = [m for _, m in self._last]
        pick = lambda key, default: np.stack([m[key] if m is not None else default for m in meta])
        none = self._objects_in_view(
            {"colour_key": np.zeros(0, np.int64), "type": np.zeros(0, np.int64)},
            np.zeros((1, 1, 3), np.uint8),
        )
        objects = {
            k: np.stack(
                [(none if bad or m is None else m["objects"])[k] for m, bad in zip(meta, failed)]
            )
            for k in none
        }
        telemetry = host_telemetry(
            position=pick("position", np.zeros(2)),
            cell=pick("cell", 0),
            bugs_fired=np.zeros((self.num_envs, 0), bool),
            game_reward=np.zeros(self.num_envs),
            frame_time_ms=np.where(failed, 0.0, pick("frame_ms", 0.0)),
            crashed=failed,
        )
        return frames, {
            "telemetry": telemetry,
            "yaw": pick("yaw", 0.0),
            "objects": objects,
            "autoreset": np.asarray(autoreset, bool),
            "faults": list(self.faults),
        }

    def close(self) -> None:
        for conn in self.connections:
            conn.close()


def parse_address(address: str):
    """``HOST:PORT`` to ``(host, port)``; a path (``/…``) stays a unix socket path."""
    if address.startswith("/"):
        return address
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(
            f"an Unreal game is unreal:HOST:PORT or unreal:/path/to/socket, got unreal:{address}"
        )
    return host, int(port)


def unreal_game(address: str, num_envs: int = 1, seed: int = 0, **options) -> UnrealEnv:
    """The game at ``address`` (``HOST:PORT`` or a socket path), as :func:`envs_bridge.make` builds
    it; one game per address (``num_envs`` 1; a farm of Unreal games is a list of endpoints to
    :class:`UnrealEnv`)."""
    if num_envs != 1:
        raise ValueError(
            f"unreal:{address} is one game; got num_envs={num_envs} (pass several endpoints "
            "to UnrealEnv)"
        )
    return UnrealEnv([parse_address(address)], **options)
