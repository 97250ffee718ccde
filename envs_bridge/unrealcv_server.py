"""A local server that speaks the UnrealCV wire protocol and serves ``ParkWorld-v0`` as the game.

No Unreal build runs here, so the bridge (:mod:`envs_bridge.unreal`) is tested against this
server, driven by the real ``unrealcv.Client``, byte for byte as ``../shared/UNREALCV.md`` says.
:class:`UnrealCVServer` lists its commands, injectable faults and bounds.

* chosen: several clients at once, each in a world of its own, so none moves another's player.
* chosen: a malformed command gets an ``error ...`` reply, never a closed connection.
* chosen: loopback only unless ``allow_remote=True``, because a remote listener exposes the game.

Example: ``python -m envs_bridge.unrealcv_server``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import ipaddress
import logging
import math
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from typing import NoReturn

import jax
import jax.numpy as jnp
import numpy as np

from envs_bridge.unreal import PAPER_KEYS
from jgtest.errors import BadInput

MAGIC = 0x9E2B83C1
#: The largest request payload served (bytes; a command is a few hundred); a larger frame is
#: refused.
MAX_FRAME_BYTES = 4 * 2**20
#: Seconds a connection may stay silent before it is closed.
IDLE_TIMEOUT_S = 300.0
#: Connections served at once.
MAX_CLIENTS = 16
log = logging.getLogger(__name__)
#: The longest a key may be held in one request (seconds).
MAX_PRESS_S = 10.0
FAULTS = (
    "delay",
    "drop",
    "wrong_magic",
    "truncated",
    "out_of_order",
    "error",
    "no_greeting",
    "dark_text_image",
)
#: The faults a request can meet: all but ``no_greeting``, which a new connection meets.
REQUEST_FAULTS = tuple(fault for fault in FAULTS if fault != "no_greeting")
UNITS_PER_CELL = 100.0
PITCH_DEG_PER_STEP = 10.0
#: ``vrun RestartLevel SEED`` takes ``0 <= SEED < SEED_LIMIT`` (``jax.random.key`` keeps 32 bits of
#: a seed).
SEED_LIMIT = 2**32
MAX_PORT = 65535
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def frame_bytes(payload: bytes, magic: int = MAGIC) -> bytes:
    """One wire frame: magic, length, payload (little-endian)."""
    return struct.pack("<II", magic, len(payload)) + payload


def object_name(index: int, kind: str) -> str:
    return f"{kind}_{index:03d}"


def object_colour(index: int) -> tuple[int, int, int]:
    """A distinct, non-black mask colour per object (up to 252 objects)."""
    return 40 + (index % 6) * 40, 40 + (index // 6 % 6) * 40, 40 + (index // 36 % 7) * 30


def png(rgba: np.ndarray) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.asarray(rgba, np.uint8), "RGBA").save(out, "PNG")
    return out.getvalue()


def bmp(rgba: np.ndarray) -> bytes:
    """A 32-bit BMP (BGRA, bottom-up rows), as UnrealCV's ``bmp`` format."""
    h, w = rgba.shape[:2]
    pixels = np.ascontiguousarray(rgba[::-1, :, [2, 1, 0, 3]]).tobytes()
    header = struct.pack("<2sIHHI", b"BM", 14 + 40 + len(pixels), 0, 0, 54)
    dib = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 32, 0, len(pixels), 2835, 2835, 0, 0)
    return header + dib + pixels


def dark_text_bmp() -> bytes:
    """A 1×1, 24-bit, black BMP: every byte below 0x80, so a client decodes it as UTF-8 text."""
    header = struct.pack("<2sIHHI", b"BM", 58, 0, 0, 54)
    dib = struct.pack("<IiiHHIIiiII", 40, 1, 1, 1, 24, 0, 4, 0, 0, 0, 0)
    return header + dib + b"\x00\x00\x00\x00"


def finite(word: str) -> float:
    """``word`` of a command as a finite number; ``nan``, ``inf`` (any case or sign) and values that
    overflow (``1e999``) are refused with :class:`BadInput` naming the word."""
    try:
        value = float(word)
    except ValueError:
        raise BadInput(f"{word!r} is not a number") from None
    if not math.isfinite(value):
        raise BadInput(f"{word!r} is not a finite number")
    return value


class ParkGame:
    """The game behind the server: ``ParkWorld-v0`` built once and compiled once, for every
    connection.

    Its jitted :attr:`reset`, :attr:`step` and :attr:`view` are shared by all connections (a jitted
    function may be called from several threads at once); each connection plays a :class:`World`
    of its own (:meth:`world`). Building checks the options (``ValueError`` for a bad one);
    :meth:`warm_up` compiles.
    """

    def __init__(self, tick_s: float = 0.1, **game_kwargs):
        from jgtest.envs.park_render import OOI_TYPES
        from jgtest.envs.registration import make

        self.env, self.params = make("ParkWorld-v0", **game_kwargs)
        self.tick_s = tick_s
        self.reset = jax.jit(self.env.reset_env)
        self.step = jax.jit(self.env.step_env)
        self.view = jax.jit(self.env.view)
        types = np.asarray(self.params.ooi_type)
        self.names = [object_name(i, OOI_TYPES[t]) for i, t in enumerate(types)]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.colours = np.array(
            [object_colour(i) for i in range(len(self.names))] + [(0, 0, 0)], np.uint8
        )

    def warm_up(self) -> None:
        """Compiles the reset, the step and the view now, not during a client's first request (once
        compiled, a cheap no-op)."""
        world = self.world()
        world.press(PAPER_KEYS[0], self.tick_s)
        world.frame()

    def world(self, seed: int = 0) -> World:
        """A new world of this game, at the start of ``seed``'s episode."""
        return World(self, seed)

    def object_location(self, i: int) -> tuple[float, float, float]:
        x, y = np.asarray(self.params.ooi_pos[i]) * UNITS_PER_CELL
        return float(x), float(y), 0.0

    def object_bounds(self, i: int) -> tuple[float, ...]:
        from jgtest.envs.park_render import OOI_SIZE

        width, height = OOI_SIZE[int(self.params.ooi_type[i])] * UNITS_PER_CELL
        x, y, _ = self.object_location(i)
        return x - width / 2, y - width / 2, 0.0, x + width / 2, y + width / 2, float(height)


class World:
    """One connection's world: its own state, step count and pause, moved by its game's shared
    compiled functions. A refused change (:class:`BadInput`) leaves it as it was."""

    def __init__(self, game: ParkGame, seed: int = 0):
        self.game = game
        self.paused = False
        self.restart(seed)

    def restart(self, seed: int) -> None:
        from jgtest.rollout import episode_key, reset_key

        if not 0 <= seed < SEED_LIMIT:
            raise BadInput(f"a seed is 0 <= SEED < 2**32, got {seed}")
        _, self.state = self.game.reset(reset_key(episode_key(seed, 0, 0)), self.game.params)
        self.steps = 0

    def press(self, key: str, seconds: float) -> None:
        """Holds ``key`` for ``seconds`` (0 to :data:`MAX_PRESS_S`): that many ticks of its action,
        at least one."""
        action = PAPER_KEYS.index(key)
        if not 0 <= seconds <= MAX_PRESS_S:
            raise BadInput(f"a key is held 0 to {MAX_PRESS_S:g} seconds, got {seconds}")
        for _ in range(max(1, int(round(seconds / self.game.tick_s)))):
            if not self.paused:
                _, self.state, _, _, _ = self.game.step(
                    jax.random.key(self.steps), self.state, jnp.int32(action), self.game.params
                )
                self.steps += 1

    def frame(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rgba, mask colours rgba)`` of the current view."""
        rgb, mask = (np.asarray(x) for x in self.game.view(self.state, self.game.params))
        alpha = np.full(rgb.shape[:2] + (1,), 255, np.uint8)
        return np.concatenate([rgb, alpha], -1), np.concatenate(
            [self.game.colours[mask], alpha], -1
        )

    def location(self) -> tuple[float, float, float]:
        x, y = np.asarray(self.state.pos) * UNITS_PER_CELL
        return (
            float(x),
            float(y),
            float(self.game.env.eye_height(self.state, self.game.params)) * UNITS_PER_CELL,
        )

    def rotation(self) -> tuple[float, float, float]:
        return (
            -float(self.state.pitch) * PITCH_DEG_PER_STEP,
            float(np.degrees(float(self.state.yaw))),
            0.0,
        )

    def move_to(self, x: float, y: float) -> None:
        """Puts the player at ``(x, y)`` (Unreal units), facing as before."""
        cells = x / UNITS_PER_CELL, y / UNITS_PER_CELL
        if max(map(abs, cells)) > _FLOAT32_MAX:  # float32 would hold an infinity
            raise BadInput(f"location {x:g} {y:g} is beyond float32's range")
        self.state = self.state.replace(pos=jnp.asarray(cells, jnp.float32))

    def face(self, yaw_deg: float) -> None:
        """Turns the player to ``yaw_deg`` degrees, where it stands."""
        yaw = math.radians(yaw_deg)
        if abs(yaw) > _FLOAT32_MAX:  # float32 would hold an infinity
            raise BadInput(f"yaw {yaw_deg:g} is beyond float32's range")
        self.state = self.state.replace(yaw=jnp.float32(yaw))


class UnrealCVServer:
    """The protocol server. Use as a context manager, or :meth:`start` / :meth:`stop`.

    * Frames are ``uint32 magic 0x9E2B83C1``, ``uint32 length``, payload, little-endian; on accept,
      one greeting frame ``connected to ParkWorld``; requests ``b"<id>:<command>"``, replies
      ``b"<id>:" + body``; an unknown command gets ``error No handler found for URI
      '<command>'`` (``vget /unrealcv/commands`` too, as a real 5.2 server does); images are raw
      PNG (RGBA) or BMP (32-bit BGRA) bytes.
    * Each connection runs on a thread of its own and in a world of its own (:class:`World`): a
      restart, a key or a teleport on one connection never moves another's player, and an idle
      client holds up no other. The game's jitted reset, step and view are compiled once per
      server and shared.
    * The game: ``vset /action/keyboard KEY SECONDS`` plays ``round(SECONDS / tick_s)`` steps of
      the key's action (at least one); ``lit`` returns the rendered frame, ``object_mask`` each
      object in its own colour, ``/objects`` and ``/object/{name}/location|bounds|color`` the
      objects; ``vrun RestartLevel [SEED]`` starts an episode as ``ParkWorld.reset_env`` does from
      ``reset_key(episode_key(seed, 0, 0))`` (``0 <= SEED < 2**32``). Units are Unreal's: 100 per
      cell (centimetres); yaw in degrees; pitch 10° per look step.
    * Every number in a command must be finite: ``nan``, ``inf``, ``-inf`` (any case), a value
      that overflows (``1e999``) or a position or yaw beyond float32 is answered ``error ...``
      naming it, and the world is left as it was.
    * Faults, injected on command (:meth:`inject`), are taken by whichever connection next meets
      them: ``delay`` (the reply comes ``delay_s`` late), ``drop`` (half a reply, then the socket
      closes), ``wrong_magic``, ``truncated`` (a header announcing more than is sent, then the
      socket closes), ``out_of_order`` (the reply carries the next id), ``error`` (``error
      injected fault``), ``no_greeting`` (the next connection is never greeted) and
      ``dark_text_image`` (an image request gets a tiny 3-channel dark BMP, whose bytes decode as
      text).
    * Bounds (each refusal logged on this module's logger, naming the client): a request payload
      over ``max_frame_bytes`` is answered ``error frame of N bytes is over the server's limit of
      M`` and the connection closed, before any of it is buffered; a connection silent for
      ``idle_timeout_s`` is closed; a connection beyond ``max_clients`` is sent ``error too many
      clients (M)`` in place of the greeting and closed.

    Args:
      host: where to listen.
      port: the port, 0 to 65535 (0: any free one; :attr:`address` says which once started).
      unix_path: listen on a unix socket instead.
      allow_remote: allow a non-loopback ``host``.
      delay_s: how late a ``delay`` fault's reply comes.
      tick_s: the game time of one step (a key held ``tick_s`` seconds plays one step).
      project: the name in the greeting, ``/scene/name`` and ``/level/name``.
      max_frame_bytes: the largest request payload served.
      idle_timeout_s: seconds a connection may stay silent before it is closed.
      max_clients: connections served at once.
      game_kwargs: ``ParkWorld-v0`` options (``size``, ``num_oois``, ``res``).

    Raises:
      ValueError: a refused host, port or unix path (:class:`BadInput`, checked first, before the
        game is built), or a bad game option.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        unix_path: str | None = None,
        allow_remote: bool = False,
        delay_s: float = 2.0,
        tick_s: float = 0.1,
        project: str = "ParkWorld",
        max_frame_bytes: int = MAX_FRAME_BYTES,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_clients: int = MAX_CLIENTS,
        **game_kwargs,
    ):
        if unix_path is None:
            if not allow_remote and not _loopback(host):
                raise BadInput(
                    f"refusing to listen on {host!r}: not a loopback address "
                    "(allow_remote=True, --allow-remote, exposes the game)"
                )
            if not 0 <= port <= MAX_PORT:
                raise BadInput(f"port {port} is out of range (0 to {MAX_PORT})")
        elif not unix_path:
            raise BadInput("the unix socket path is empty")
        self.host, self.port, self.unix_path = host, port, unix_path
        for name, value in (
            ("max_frame_bytes", max_frame_bytes),
            ("idle_timeout_s", idle_timeout_s),
            ("max_clients", max_clients),
        ):
            if not value > 0:
                raise BadInput(f"{name} must be above 0, got {value}")
        self.delay_s, self.project = delay_s, project
        self.max_frame_bytes, self.idle_timeout_s, self.max_clients = (
            int(max_frame_bytes),
            float(idle_timeout_s),
            int(max_clients),
        )
        self.game = ParkGame(tick_s, **game_kwargs)
        self.faults: deque[str] = deque()  # the injected faults to come, in order
        self._skips: deque[int] = deque()  # requests each waits for once it is next
        # the latest commands received (every connection's), in order
        self.requests: deque[str] = deque(maxlen=10_000)
        self._lock = threading.Lock()  # guards the faults and the open connections
        self._sock: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self._connections: dict[
            socket.socket, threading.Thread
        ] = {}  # each open connection and the thread serving it
        self._stopping = threading.Event()

    # ----- lifecycle ---------------------------------------------------------------
    @property
    def address(self):
        """``(host, port)`` or the unix path, as ``unrealcv.Client`` takes it."""
        return self.unix_path if self.unix_path else (self.host, self.port)

    def start(self) -> UnrealCVServer:
        """Listens, then compiles the game and serves in the background.

        Raises:
          OSError: the port (or unix path) is in use, or the host cannot be listened on; raised at
            once, before the game compiles.
        """
        sock = socket.socket(
            socket.AF_UNIX if self.unix_path else socket.AF_INET, socket.SOCK_STREAM
        )
        try:
            if self.unix_path:
                sock.bind(self.unix_path)
            else:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((self.host, self.port))
                self.port = sock.getsockname()[1]
            sock.listen()
            self.game.warm_up()
        except BaseException:
            sock.close()
            raise
        sock.settimeout(0.2)  # the acceptor looks for stop() this often
        self._sock = sock
        self._stopping.clear()
        self._acceptor = threading.Thread(target=self._accept, name="unrealcv-accept", daemon=True)
        self._acceptor.start()
        return self

    def stop(self) -> None:
        """Stops accepting, closes every open connection (a reply held back by a ``delay`` fault is
        cut short) and joins the threads serving them."""
        self._stopping.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout=5)
            self._acceptor = None
        # a connection leaves the registry before its socket closes: none is shut twice
        with self._lock:
            serving = list(self._connections.items())
            for conn, _ in serving:
                try:
                    conn.shutdown(socket.SHUT_RDWR)  # wakes its thread's recv or sendall
                except OSError:  # the client already left
                    pass
        for _, thread in serving:
            thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def inject(self, fault: str, times: int = 1, after: int = 0) -> None:
        """The next ``times`` replies (``no_greeting``: connections) suffer ``fault``, once
        ``after`` more requests have been answered normally after the faults injected before it.
        Requests on every connection count, and the fault is taken by whichever connection's request
        (or accept) next meets it."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        with self._lock:
            self.faults.extend([fault] * times)
            self._skips.extend([after] + [0] * (times - 1))

    def _take(self, *wanted: str, image_request: bool = False) -> str | None:
        """Takes the next injected fault if it is one of ``wanted`` and its turn has come (a request
        counts its ``after`` down; ``no_greeting`` ignores it), else ``None``. A ``dark_text_image``
        waits for an ``image_request``."""
        with self._lock:
            if not self.faults or self.faults[0] not in wanted:
                return None
            if self._skips[0] > 0 and self.faults[0] != "no_greeting":
                self._skips[0] -= 1
                return None
            if self.faults[0] == "dark_text_image" and not image_request:
                return None
            self._skips.popleft()
            return self.faults.popleft()

    # ----- serving -----------------------------------------------------------------
    def _accept(self) -> None:
        """Accepts connections until :meth:`stop`, each served by a thread of its own."""
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:  # TimeoutError included: look for stop() again
                continue
            # its thread waits on the client that long; stop() wakes it by shutting the socket
            conn.settimeout(self.idle_timeout_s)
            with self._lock:
                full = len(self._connections) >= self.max_clients
            if full:
                log.warning(
                    "refused a connection from %s: %d clients already served",
                    _peer(conn),
                    self.max_clients,
                )
                with contextlib.suppress(OSError):
                    conn.sendall(
                        frame_bytes(f"error too many clients ({self.max_clients})".encode())
                    )
                conn.close()
                continue
            greet = not self._take("no_greeting")
            thread = threading.Thread(
                target=self._serve, args=(conn, greet), name="unrealcv-connection", daemon=True
            )
            with self._lock:
                self._connections[conn] = thread
            thread.start()

    def _serve(self, conn: socket.socket, greet: bool) -> None:
        """One connection: greeted and answered in a world of its own until either side closes it,
        or (``greet`` false, a ``no_greeting`` fault) held open without a word until the client
        leaves."""
        try:
            if greet:
                world = self.game.world()
                conn.sendall(frame_bytes(f"connected to {self.project}".encode()))
                self._converse(conn, world)
            else:
                while conn.recv(4096):
                    pass
        except TimeoutError:
            log.warning(
                "closed the connection from %s: silent for %.0f s", _peer(conn), self.idle_timeout_s
            )
        # the client left (e.g. after timing out on a delayed reply), or stop() shut the socket
        except OSError:
            pass
        finally:
            with self._lock:
                del self._connections[conn]
            conn.close()

    def _converse(self, conn: socket.socket, world: World) -> None:
        """Answers the connection's requests, frame by frame, until it closes or a reply ends it."""
        buffer = bytearray()  # appended to and cut from the front in place: linear in what arrives
        while chunk := conn.recv(65536):
            buffer += chunk
            while len(buffer) >= 8:
                magic, size = struct.unpack_from("<II", buffer)
                if magic != MAGIC:
                    return  # a wrong magic: disconnect, as the server does
                if size > self.max_frame_bytes:
                    log.warning(
                        "closed the connection from %s: a frame of %d bytes, over the limit of %d",
                        _peer(conn),
                        size,
                        self.max_frame_bytes,
                    )
                    conn.sendall(
                        frame_bytes(
                            f"error frame of {size} bytes is over the server's limit of "
                            f"{self.max_frame_bytes}".encode()
                        )
                    )
                    return
                if len(buffer) < 8 + size:
                    break
                payload = bytes(buffer[8 : 8 + size])
                del buffer[: 8 + size]
                if not self._answer(conn, world, payload):
                    return

    def _answer(self, conn: socket.socket, world: World, payload: bytes) -> bool:
        """Replies to one request; ``False`` when the connection is to close."""
        match = re.match(rb"(\d+):(.*)", payload, re.S)
        if match is None:
            return False
        request_id, command = int(match.group(1)), match.group(2).decode("utf-8", "replace")
        self.requests.append(command)
        image_request = re.search(r"/(lit|object_mask)\b", command) is not None
        fault = self._take(*REQUEST_FAULTS, image_request=image_request)
        body = (
            b"error injected fault"
            if fault == "error"
            else dark_text_bmp()
            if fault == "dark_text_image"
            else self._handle(world, command)
        )
        reply = str(request_id + (fault == "out_of_order")).encode() + b":" + body
        if fault == "delay" and self._stopping.wait(self.delay_s):
            return False  # stop() came first: the reply is never sent
        if fault == "wrong_magic":
            conn.sendall(frame_bytes(reply, magic=0xDEADBEEF))
            return True
        if fault in ("drop", "truncated"):
            whole = frame_bytes(reply)
            part = (
                whole[: max(9, len(whole) // 2)]
                if fault == "drop"
                else struct.pack("<II", MAGIC, len(reply) + 100) + reply
            )
            conn.sendall(part)
            return False
        conn.sendall(frame_bytes(reply))
        return True

    def _handle(self, world: World, command: str) -> bytes:
        """The body of the reply to ``command``, played in ``world``."""
        game = self.game
        words = command.split()
        fmt = lambda values: " ".join(f"{v:.3f}" for v in values).encode()
        try:
            if len(words) >= 2 and words[0] == "vget":
                uri = words[1]
                if m := re.fullmatch(r"/camera/(\d+)/(lit|object_mask)", uri):
                    image_format = words[2] if len(words) > 2 else "png"
                    rgba, mask = world.frame()
                    image = rgba if m.group(2) == "lit" else mask
                    if image_format == "png":
                        return png(image)
                    if image_format == "bmp":
                        return bmp(image)
                if re.fullmatch(r"/camera/\d+/location", uri):
                    return fmt(world.location())
                if re.fullmatch(r"/camera/\d+/rotation", uri):
                    return fmt(world.rotation())
                if uri == "/objects":
                    return " ".join(game.names).encode()
                if m := re.fullmatch(r"/object/([^/]+)/(location|bounds|color)", uri):
                    if m.group(1) not in game.index:
                        return f"error Object {m.group(1)} not found".encode()
                    i = game.index[m.group(1)]
                    if m.group(2) == "color":
                        r, g, b = object_colour(i)
                        return f"(R={r},G={g},B={b},A=255)".encode()
                    return fmt(
                        game.object_location(i)
                        if m.group(2) == "location"
                        else game.object_bounds(i)
                    )
                if uri == "/action/game/is_paused":
                    return b"true" if world.paused else b"false"
                if uri in ("/unrealcv/status",):
                    return (
                        f"Is Listening\nClient Connected\n{self.port}\nConfiguration\nWidth: "
                        f"{game.env.camera.res}\nHeight: {game.env.camera.res}"
                    ).encode()
                if uri == "/unrealcv/version":
                    return b"v1.0.0"
                if uri in ("/scene/name", "/level/name"):
                    return self.project.encode()
            if len(words) >= 2 and words[0] == "vset":
                uri = words[1]
                if uri == "/action/keyboard" and len(words) == 4 and words[2] in PAPER_KEYS:
                    world.press(words[2], finite(words[3]))
                    return b"ok"
                if re.fullmatch(r"/camera/\d+/(location|moveto)", uri) and len(words) == 5:
                    # every number checked before the world changes
                    x, y, _ = (finite(w) for w in words[2:])
                    world.move_to(x, y)
                    return b"ok"
                if re.fullmatch(r"/camera/\d+/rotation", uri) and len(words) == 5:
                    _, yaw, _ = (finite(w) for w in words[2:])
                    world.face(yaw)
                    return b"ok"
                if uri in ("/action/game/pause", "/action/game/resume"):
                    world.paused = uri.endswith("pause")
                    return b"ok"
            if words and words[0] == "vrun":
                if len(words) >= 2 and words[1] == "RestartLevel":
                    world.restart(int(words[2]) if len(words) > 2 else 0)
                return b"ok"
        except (ValueError, IndexError) as error:  # a malformed request is answered, never fatal
            return f"error {error}".encode()
        return f"error No handler found for URI '{command}'".encode()


def _peer(conn: socket.socket) -> str:
    """The client's address, for the log (a unix socket's peer has none)."""
    try:
        return str(conn.getpeername() or "a unix-socket client")
    except OSError:
        return "a client that left"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _OneLineParser(argparse.ArgumentParser):
    """``argparse`` whose refusals are one line, ``error: ... (see PROG --help)`` on stderr, and
    exit status 2."""

    def error(self, message: str) -> NoReturn:
        _refuse(f"{message} (see {self.prog} --help)")


def _refuse(message: object) -> NoReturn:
    """Prints ``error: MESSAGE`` on one line to stderr and exits with status 2."""
    print("error: " + " ".join(str(message).split()), file=sys.stderr)
    raise SystemExit(2)


def main(argv=None) -> int:
    """``python -m envs_bridge.unrealcv_server [--port P | --unix PATH] [--size N --num-oois K]``:
    serve ``ParkWorld-v0`` over the UnrealCV protocol until interrupted (a stand-in Unreal game for
    demos). A refused option (a port out of 0-65535, a non-loopback host without --allow-remote, a
    bad game option), a port or socket path in use, or a host that cannot be listened on is one
    line, ``error: ...`` on stderr, and exit status 2."""
    parser = _OneLineParser(prog="python -m envs_bridge.unrealcv_server", description=main.__doc__)
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (loopback unless --allow-remote)"
    )
    parser.add_argument(
        "--port", type=int, default=9000, help=f"0 to {MAX_PORT}; 0 picks a free one (default 9000)"
    )
    parser.add_argument(
        "--unix", default=None, metavar="PATH", help="listen on a unix socket instead"
    )
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument(
        "--size", type=int, default=None, help="the park's side in cells (ParkWorld's default)"
    )
    parser.add_argument("--num-oois", type=int, default=247, help="the park's objects")
    parser.add_argument(
        "--max-frame-bytes",
        type=int,
        default=MAX_FRAME_BYTES,
        help=f"the largest request served (default {MAX_FRAME_BYTES})",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=IDLE_TIMEOUT_S,
        help=f"seconds a silent connection is kept (default {IDLE_TIMEOUT_S:.0f})",
    )
    parser.add_argument(
        "--max-clients",
        type=int,
        default=MAX_CLIENTS,
        help=f"connections served at once (default {MAX_CLIENTS})",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    try:
        park = {"num_oois": args.num_oois} | ({} if args.size is None else {"size": args.size})
        bounds = {
            "max_frame_bytes": args.max_frame_bytes,
            "idle_timeout_s": args.idle_timeout,
            "max_clients": args.max_clients,
        }
        server = UnrealCVServer(
            args.host, args.port, args.unix, args.allow_remote, **bounds, **park
        )
        server.start()
    except ValueError as error:  # a refused option
        _refuse(error)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            _refuse(
                f"{args.unix} is in use"
                if args.unix
                else f"port {args.port} on {args.host} is in use"
            )
        _refuse(
            f"cannot listen on {args.unix or f'{args.host}:{args.port}'}: {error.strerror or error}"
        )
    print(f"serving ParkWorld-v0 over UnrealCV at {server.address} (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
