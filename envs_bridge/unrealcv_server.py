"""A local server that speaks the UnrealCV wire protocol and serves ``ParkWorld-v0`` as the game.

No Unreal build runs here, so the bridge (:mod:`envs_bridge.unreal`) is tested and
demonstrated against this server, driven by the real ``unrealcv.Client``. It
follows ``../shared/UNREALCV.md`` (the 1.3.2 client and the UnrealCV server
sources) byte for byte:

* frames ``uint32 magic 0x9E2B83C1``, ``uint32 length``, payload, little-endian;
* on accept, one greeting frame ``connected to ParkWorld``; one client at a time;
* requests ``b"<id>:<command>"``, replies ``b"<id>:" + body``; an unknown command gets
  ``error No handler found for URI '<command>'`` (``vget /unrealcv/commands`` too, as a
  real 5.2 server does); images are raw PNG (RGBA) or BMP (32-bit BGRA) bytes.

The game: the client's keys move the on-device world (``vset /action/keyboard KEY
SECONDS``: ``round(SECONDS / tick_s)`` steps of the key's action, at least one),
``lit`` returns its rendered frame, ``object_mask`` each object in its own colour,
``/objects`` and ``/object/{name}/location|bounds|color`` its objects, and
``vrun RestartLevel [SEED]`` starts an episode as ``ParkWorld.reset_env`` does from
``reset_key(episode_key(seed, 0, 0))`` (a game-specific console command, as studios add).
Units are Unreal's: 100 per cell (centimetres); yaw in degrees; pitch 10° per look step.

Faults, injected on command for the bridge's fault tests (:meth:`UnrealCVServer.inject`):
``delay`` (the reply comes ``delay_s`` late), ``drop`` (half a reply, then the socket
closes), ``wrong_magic``, ``truncated`` (a header announcing more than is sent, then
the socket closes), ``out_of_order`` (the reply carries the next id), ``error``
(``error injected fault``), ``no_greeting`` (the next connection is never greeted) and
``dark_text_image`` (an image request gets a tiny 3-channel dark BMP, whose bytes
decode as text).

Binds to loopback only, unless ``allow_remote=True``.
"""

from __future__ import annotations

import io
import ipaddress
import re
import socket
import struct
import threading
import time
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np

from envs_bridge.unreal import PAPER_KEYS

MAGIC = 0x9E2B83C1
#: The longest a key may be held in one request (seconds).
MAX_PRESS_S = 10.0
FAULTS = ("delay", "drop", "wrong_magic", "truncated", "out_of_order", "error", "no_greeting", "dark_text_image")
UNITS_PER_CELL = 100.0
PITCH_DEG_PER_STEP = 10.0


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


class ParkGame:
    """The game behind the server: one ``ParkWorld-v0`` on device, stepped by keys."""

    def __init__(self, tick_s: float = 0.1, **game_kwargs):
        from jgtest.envs.park_render import OOI_TYPES
        from jgtest.envs.registration import make

        self.env, self.params = make("ParkWorld-v0", **game_kwargs)
        self.tick_s = tick_s
        self._step = jax.jit(self.env.step_env)
        self._view = jax.jit(self.env.view)
        self._reset = jax.jit(self.env.reset_env)
        types = np.asarray(self.params.ooi_type)
        self.names = [object_name(i, OOI_TYPES[t]) for i, t in enumerate(types)]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.paused = False
        self.steps = 0
        self.restart(0)
        self.press(PAPER_KEYS[0], tick_s)  # compile the step and the view now, not during a client's first request
        self.frame()
        self.restart(0)

    def restart(self, seed: int) -> None:
        from jgtest.rollout import episode_key, reset_key

        _, self.state = self._reset(reset_key(episode_key(seed, 0, 0)), self.params)
        self.steps = 0

    def press(self, key: str, seconds: float) -> None:
        action = PAPER_KEYS.index(key)
        if not 0 <= seconds <= MAX_PRESS_S:
            raise ValueError(f"a key is held 0 to {MAX_PRESS_S:g} seconds, got {seconds}")
        for _ in range(max(1, int(round(seconds / self.tick_s)))):
            if not self.paused:
                _, self.state, _, _, _ = self._step(jax.random.key(self.steps), self.state, jnp.int32(action), self.params)
                self.steps += 1

    def frame(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rgba, mask colours rgba)`` of the current view."""
        rgb, mask = (np.asarray(x) for x in self._view(self.state, self.params))
        alpha = np.full(rgb.shape[:2] + (1,), 255, np.uint8)
        colours = np.array([object_colour(i) for i in range(len(self.names))] + [(0, 0, 0)], np.uint8)
        return np.concatenate([rgb, alpha], -1), np.concatenate([colours[mask], alpha], -1)

    def location(self) -> tuple[float, float, float]:
        x, y = np.asarray(self.state.pos) * UNITS_PER_CELL
        return float(x), float(y), float(self.env.eye_height(self.state, self.params)) * UNITS_PER_CELL

    def rotation(self) -> tuple[float, float, float]:
        return -float(self.state.pitch) * PITCH_DEG_PER_STEP, float(np.degrees(float(self.state.yaw))), 0.0

    def teleport(self, x: float, y: float, yaw_deg: float | None = None) -> None:
        pos = jnp.asarray([x / UNITS_PER_CELL, y / UNITS_PER_CELL], jnp.float32)
        self.state = self.state.replace(pos=pos) if yaw_deg is None else self.state.replace(pos=pos, yaw=jnp.float32(np.radians(yaw_deg)))

    def object_location(self, i: int) -> tuple[float, float, float]:
        x, y = np.asarray(self.params.ooi_pos[i]) * UNITS_PER_CELL
        return float(x), float(y), 0.0

    def object_bounds(self, i: int) -> tuple[float, ...]:
        from jgtest.envs.park_render import OOI_SIZE

        width, height = OOI_SIZE[int(self.params.ooi_type[i])] * UNITS_PER_CELL
        x, y, _ = self.object_location(i)
        return x - width / 2, y - width / 2, 0.0, x + width / 2, y + width / 2, float(height)


class UnrealCVServer:
    """The protocol server (module docstring). Use as a context manager, or :meth:`start` / :meth:`stop`.

    Args:
      host: where to listen.
      port: the port (0: any free one; :attr:`address` says which).
      unix_path: listen on a unix socket instead.
      allow_remote: allow a non-loopback ``host``.
      delay_s: how late a ``delay`` fault's reply comes.
      game_kwargs: ``ParkWorld-v0`` options (``size``, ``num_oois``, ``res``).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, unix_path: str | None = None, allow_remote: bool = False,
                 delay_s: float = 2.0, tick_s: float = 0.1, project: str = "ParkWorld", **game_kwargs):  # fmt: skip
        if unix_path is None and not allow_remote and not _loopback(host):
            raise ValueError(f"refusing to listen on {host!r}: not a loopback address (pass allow_remote=True to expose the game)")
        self.host, self.port, self.unix_path = host, port, unix_path
        self.delay_s, self.project = delay_s, project
        self.game = ParkGame(tick_s, **game_kwargs)
        self.faults: deque[str] = deque()  # the injected faults to come, in order
        self._skips: deque[int] = deque()  # requests each waits for once it is next
        self.requests: deque[str] = deque(maxlen=10_000)  # the latest commands received, in order
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._running = False

    # ----- lifecycle ---------------------------------------------------------------
    @property
    def address(self):
        """``(host, port)`` or the unix path, as ``unrealcv.Client`` takes it."""
        return self.unix_path if self.unix_path else (self.host, self.port)

    def start(self) -> UnrealCVServer:
        if self.unix_path:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.bind(self.unix_path)
        else:
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind((self.host, self.port))
            self.port = self._sock.getsockname()[1]
        self._sock.listen(1)
        self._sock.settimeout(0.2)
        self._running = True
        self._thread = threading.Thread(target=self._serve, name="unrealcv-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def inject(self, fault: str, times: int = 1, after: int = 0) -> None:
        """The next ``times`` replies (``no_greeting``: connections) suffer ``fault``, once ``after`` more
        requests have been answered normally after the faults injected before it."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        with self._lock:
            self.faults.extend([fault] * times)
            self._skips.extend([after] + [0] * (times - 1))

    def _take(self, *wanted: str) -> str | None:
        with self._lock:
            if self.faults and self.faults[0] in wanted:
                if self._skips[0] > 0 and self.faults[0] != "no_greeting":
                    self._skips[0] -= 1
                    return None
                self._skips.popleft()
                return self.faults.popleft()
        return None

    # ----- serving -----------------------------------------------------------------
    def _serve(self) -> None:
        while self._running:
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(0.2)
                if self._take("no_greeting"):
                    self._hold(conn)
                    continue
                try:
                    conn.sendall(frame_bytes(f"connected to {self.project}".encode()))
                except OSError:  # the client left before its greeting
                    continue
                self._converse(conn)

    def _hold(self, conn) -> None:
        """Keeps a connection open without a word until the client leaves."""
        while self._running:
            try:
                if not conn.recv(4096):
                    return
            except TimeoutError:
                continue
            except OSError:
                return

    def _converse(self, conn) -> None:
        buffer = b""
        while self._running:
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= 8:
                magic, size = struct.unpack("<II", buffer[:8])
                if magic != MAGIC:
                    return  # a wrong magic: disconnect, as the server does
                if len(buffer) < 8 + size:
                    break
                payload, buffer = buffer[8 : 8 + size], buffer[8 + size :]
                try:
                    if not self._answer(conn, payload):
                        return
                except OSError:  # the client left (e.g. after timing out on a delayed reply)
                    return

    def _answer(self, conn, payload: bytes) -> bool:
        """Replies to one request; ``False`` when the connection is to close."""
        match = re.match(rb"(\d+):(.*)", payload, re.S)
        if match is None:
            return False
        request_id, command = int(match.group(1)), match.group(2).decode("utf-8", "replace")
        self.requests.append(command)
        fault = self._take("delay", "drop", "wrong_magic", "truncated", "out_of_order", "error", "dark_text_image")
        if fault == "dark_text_image" and not re.search(r"/(lit|object_mask)\b", command):
            self.faults.appendleft(fault)  # waits for an image request
            self._skips.appendleft(0)
            fault = None
        body = b"error injected fault" if fault == "error" else dark_text_bmp() if fault == "dark_text_image" else self._handle(command)
        reply = str(request_id + (fault == "out_of_order")).encode() + b":" + body
        if fault == "delay":
            time.sleep(self.delay_s)
        if fault == "wrong_magic":
            conn.sendall(frame_bytes(reply, magic=0xDEADBEEF))
            return True
        if fault in ("drop", "truncated"):
            whole = frame_bytes(reply)
            part = whole[: max(9, len(whole) // 2)] if fault == "drop" else struct.pack("<II", MAGIC, len(reply) + 100) + reply
            conn.sendall(part)
            return False
        conn.sendall(frame_bytes(reply))
        return True

    def _handle(self, command: str) -> bytes:
        g = self.game
        words = command.split()
        fmt = lambda values: " ".join(f"{v:.3f}" for v in values).encode()
        try:
            if len(words) >= 2 and words[0] == "vget":
                uri = words[1]
                if m := re.fullmatch(r"/camera/(\d+)/(lit|object_mask)", uri):
                    image_format = words[2] if len(words) > 2 else "png"
                    rgba, mask = g.frame()
                    image = rgba if m.group(2) == "lit" else mask
                    if image_format == "png":
                        return png(image)
                    if image_format == "bmp":
                        return bmp(image)
                if re.fullmatch(r"/camera/\d+/location", uri):
                    return fmt(g.location())
                if re.fullmatch(r"/camera/\d+/rotation", uri):
                    return fmt(g.rotation())
                if uri == "/objects":
                    return " ".join(g.names).encode()
                if m := re.fullmatch(r"/object/([^/]+)/(location|bounds|color)", uri):
                    if m.group(1) not in g.index:
                        return f"error Object {m.group(1)} not found".encode()
                    i = g.index[m.group(1)]
                    if m.group(2) == "color":
                        r, gg, b = object_colour(i)
                        return f"(R={r},G={gg},B={b},A=255)".encode()
                    return fmt(g.object_location(i) if m.group(2) == "location" else g.object_bounds(i))
                if uri == "/action/game/is_paused":
                    return b"true" if g.paused else b"false"
                if uri in ("/unrealcv/status",):
                    return f"Is Listening\nClient Connected\n{self.port}\nConfiguration\nWidth: {g.env.camera.res}\nHeight: {g.env.camera.res}".encode()
                if uri == "/unrealcv/version":
                    return b"v1.0.0"
                if uri in ("/scene/name", "/level/name"):
                    return self.project.encode()
            if len(words) >= 2 and words[0] == "vset":
                uri = words[1]
                if uri == "/action/keyboard" and len(words) == 4 and words[2] in PAPER_KEYS:
                    g.press(words[2], float(words[3]))
                    return b"ok"
                if re.fullmatch(r"/camera/\d+/(location|moveto)", uri) and len(words) == 5:
                    g.teleport(float(words[2]), float(words[3]))
                    return b"ok"
                if re.fullmatch(r"/camera/\d+/rotation", uri) and len(words) == 5:
                    g.teleport(*g.location()[:2], yaw_deg=float(words[3]))
                    return b"ok"
                if uri in ("/action/game/pause", "/action/game/resume"):
                    g.paused = uri.endswith("pause")
                    return b"ok"
            if words and words[0] == "vrun":
                if len(words) >= 2 and words[1] == "RestartLevel":
                    g.restart(int(words[2]) if len(words) > 2 else 0)
                return b"ok"
        except (ValueError, IndexError, OverflowError) as error:  # a malformed request is answered, never fatal
            return f"error {error}".encode()
        return f"error No handler found for URI '{command}'".encode()


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv=None) -> int:
    """``python -m envs_bridge.unrealcv_server [--port P | --unix PATH] [--size N --num-oois K]``: serve
    ``ParkWorld-v0`` over the UnrealCV protocol until interrupted (a stand-in Unreal game for demos)."""
    import argparse
    import time

    parser = argparse.ArgumentParser(prog="python -m envs_bridge.unrealcv_server", description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback unless --allow-remote)")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--unix", default=None, metavar="PATH", help="listen on a unix socket instead")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument("--size", type=int, default=256, help="the park's side in cells")
    parser.add_argument("--num-oois", type=int, default=248, help="the park's objects")
    args = parser.parse_args(argv)
    try:
        server = UnrealCVServer(args.host, args.port, args.unix, args.allow_remote, size=args.size, num_oois=args.num_oois)
    except ValueError as error:
        parser.error(str(error))
    with server:
        print(f"serving ParkWorld-v0 over UnrealCV at {server.address} (Ctrl-C stops)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    raise SystemExit(main())
