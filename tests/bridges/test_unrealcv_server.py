"""The local UnrealCV protocol server itself, over bare sockets (every read bounded by a timeout):
several clients at once, each in its own world; numbers that must be finite; its command line."""

import io
import logging
import socket
import struct
import threading
import time

import jax
import numpy as np
import pytest
from PIL import Image

import jgtest
from envs_bridge import unrealcv_server as server_module
from envs_bridge.unrealcv_server import MAGIC, UnrealCVServer, frame_bytes
from jgtest.rollout import episode_key, reset_key

# as tests/bridges/test_unreal.py: the compiled game is shared through the cache
GAME = {"size": 64, "num_oois": 40}
ENV, PARAMS = jgtest.make("ParkWorld-v0", **GAME)
GREETING = b"connected to ParkWorld"


@pytest.fixture(scope="module")
def server():
    with UnrealCVServer(**GAME) as running:
        yield running


class Wire:
    """A bare UnrealCV client: frames over a socket, each read failing after ``timeout_s``."""

    def __init__(self, address, timeout_s: float = 3.0):
        self.sock = socket.create_connection(address, timeout=timeout_s)
        self.next_id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def frame(self) -> bytes:
        magic, size = struct.unpack("<II", self._exactly(8))
        assert magic == MAGIC
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the server closed the connection")
            data += chunk
        return data

    def request(self, command: str) -> bytes:
        self.sock.sendall(frame_bytes(f"{self.next_id}:{command}".encode()))
        reply = self.frame()
        prefix = f"{self.next_id}:".encode()
        assert reply.startswith(prefix), reply[:40]
        self.next_id += 1
        return reply[len(prefix) :]

    def text(self, command: str) -> str:
        return self.request(command).decode()

    def floats(self, command: str) -> list[float]:
        return [float(v) for v in self.text(command).split()]


def _start(seed: int):
    """The on-device world at the start of ``seed``'s episode: ``(frame, state)``."""
    frame, state = jax.jit(ENV.reset_env)(reset_key(episode_key(seed, 0, 0)), PARAMS)
    return np.asarray(frame), state


def _rgb(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)))[..., :3]


def test_an_idle_client_holds_up_no_other(server):
    """A client that was greeted and then says nothing does not keep a second one waiting: the
    second is greeted and served in full, every read within a short timeout."""
    frame, state = _start(3)
    with Wire(server.address) as idle:
        assert idle.frame() == GREETING
        started = time.monotonic()
        with Wire(server.address, timeout_s=2.0) as busy:
            assert busy.frame() == GREETING
            assert busy.text("vrun RestartLevel 3") == "ok"
            np.testing.assert_allclose(
                busy.floats("vget /camera/0/location")[:2], np.asarray(state.pos) * 100, atol=1e-3
            )
            np.testing.assert_array_equal(_rgb(busy.request("vget /camera/0/lit png")), frame)
            assert busy.text("vset /action/keyboard W 0.1") == "ok"
            assert busy.text("vget /unrealcv/version") == "v1.0.0"
        assert time.monotonic() - started < 2.0
        # and the idle client is still served
        assert idle.text("vget /unrealcv/version") == "v1.0.0"


def test_each_connection_plays_its_own_world(server):
    """Restarts, keys, teleports and pauses on one connection leave another's world as it was; the
    game is compiled once for every connection."""
    frame, state = _start(3)
    with Wire(server.address) as a, Wire(server.address) as b:
        assert a.frame() == GREETING and b.frame() == GREETING
        assert a.text("vrun RestartLevel 3") == "ok" and b.text("vrun RestartLevel 3") == "ok"
        b_location, b_rotation = (
            b.floats("vget /camera/0/location"),
            b.floats("vget /camera/0/rotation"),
        )
        x, y, z = a.floats("vget /camera/0/location")
        assert a.text(f"vset /camera/0/location {x + 300} {y} {z}") == "ok"
        assert a.text("vset /camera/0/rotation 0 90 0") == "ok"
        assert a.text("vset /action/keyboard W 0.3") == "ok"
        assert a.text("vset /action/game/pause") == "ok"
        assert a.floats("vget /camera/0/location")[:2] != b_location[:2]
        assert (
            b.floats("vget /camera/0/location") == b_location
            and b.floats("vget /camera/0/rotation") == b_rotation
        )
        assert b.text("vget /action/game/is_paused") == "false"
        np.testing.assert_array_equal(_rgb(b.request("vget /camera/0/lit png")), frame)
        a_location = a.floats("vget /camera/0/location")
        assert (
            b.text("vrun RestartLevel 5") == "ok" and b.text("vset /action/keyboard W 0.5") == "ok"
        )
        assert a.floats("vget /camera/0/location") == a_location
    assert (
        server.game.reset._cache_size()
        == server.game.step._cache_size()
        == server.game.view._cache_size()
        == 1
    )


def _until_taken(server, timeout_s: float = 2.0) -> None:
    """Waits until every injected fault has been taken."""
    deadline = time.monotonic() + timeout_s
    while server.faults:
        assert time.monotonic() < deadline, f"faults not taken: {list(server.faults)}"
        time.sleep(0.01)


def test_stop_closes_every_connection_promptly():
    """``stop()`` closes idle, ungreeted and delayed connections at once and joins their threads."""
    before = set(threading.enumerate())
    server = UnrealCVServer(delay_s=30.0, size=32, num_oois=8).start()
    idle, delayed = Wire(server.address), Wire(server.address)
    assert idle.frame() == GREETING and delayed.frame() == GREETING
    server.inject("no_greeting")
    ungreeted = Wire(server.address)
    _until_taken(server)
    server.inject("delay")
    delayed.sock.sendall(frame_bytes(b"0:vget /unrealcv/version"))  # its reply is held back 30 s
    _until_taken(server)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2.0
    for wire in (idle, delayed, ungreeted):
        with wire:
            assert wire.sock.recv(1) == b""  # closed, with no reply
    assert not [
        t for t in threading.enumerate() if t not in before and t.name.startswith("unrealcv")
    ]


def test_an_oversized_frame_an_idle_client_and_one_client_too_many_are_dropped(caplog):
    """The server's bounds: a header claiming 4 GiB is answered with a protocol error and closed
    before any payload is buffered, a silent connection is closed after the idle timeout, and a
    client over the limit is refused in place of its greeting; each is logged."""
    with (
        caplog.at_level(logging.WARNING, logger="envs_bridge.unrealcv_server"),
        UnrealCVServer(max_frame_bytes=1024, idle_timeout_s=1.0, max_clients=2, **GAME) as bounded,
    ):
        with Wire(bounded.address) as big:
            assert big.frame() == GREETING
            big.sock.sendall(struct.pack("<II", MAGIC, 2**32 - 1))
            assert (
                big.frame() == b"error frame of 4294967295 bytes is over the server's limit of 1024"
            )
            assert big.sock.recv(1) == b""
        with Wire(bounded.address) as idle:
            assert idle.frame() == GREETING
            started = time.monotonic()
            assert idle.sock.recv(1) == b""  # closed by the server, with no reply
            assert 0.8 < time.monotonic() - started < 2.9
        with Wire(bounded.address) as first, Wire(bounded.address) as second:
            assert first.frame() == GREETING and second.frame() == GREETING
            with Wire(bounded.address) as third:
                assert third.frame() == b"error too many clients (2)"
                assert third.sock.recv(1) == b""
            assert first.text("vget /unrealcv/version") == "v1.0.0"
    assert "a frame of 4294967295 bytes, over the limit of 1024" in caplog.text
    assert "silent for 1 s" in caplog.text and "2 clients already served" in caplog.text


NON_FINITE = [  # a command, and how its refusal names the bad value
    ("vset /camera/0/location nan inf 0", "'nan'"),
    ("vset /camera/0/location 100 -INF 0", "'-INF'"),
    ("vset /camera/0/location 100 100 NaN", "'NaN'"),
    ("vset /camera/0/moveto 1e999 0 0", "'1e999'"),
    ("vset /camera/0/location 1e41 0 0", "location 1e+41 0 is beyond float32's range"),
    ("vset /camera/0/rotation 0 nan 0", "'nan'"),
    ("vset /camera/0/rotation 0 -Infinity 0", "'-Infinity'"),
    ("vset /camera/0/rotation NAN 0 0", "'NAN'"),
    ("vset /action/keyboard W nan", "'nan'"),
    ("vset /action/keyboard W inf", "'inf'"),
    ("vrun RestartLevel nan", "'nan'"),
    ("vrun RestartLevel 4294967296", "got 4294967296"),
]


@pytest.mark.parametrize("command, named", NON_FINITE, ids=[c for c, _ in NON_FINITE])
def test_a_number_that_is_not_finite_is_refused_and_changes_nothing(server, command, named):
    with Wire(server.address) as wire:
        assert wire.frame() == GREETING
        assert (
            wire.text("vrun RestartLevel 3") == "ok"
            and wire.text("vset /action/keyboard W 0.5") == "ok"
        )
        location, rotation = (
            wire.floats("vget /camera/0/location"),
            wire.floats("vget /camera/0/rotation"),
        )
        reply = wire.text(command)
        assert reply.startswith("error") and named in reply, reply
        assert (
            wire.floats("vget /camera/0/location") == location
            and wire.floats("vget /camera/0/rotation") == rotation
        )
        assert np.isfinite(location + rotation).all()


def test_finite_numbers_are_taken(server):
    with Wire(server.address) as wire:
        assert wire.frame() == GREETING
        assert wire.text("vset /camera/0/location 1234.5 2.345e3 50") == "ok"
        assert wire.floats("vget /camera/0/location")[:2] == pytest.approx(
            [1234.5, 2345.0], abs=0.01
        )
        assert wire.text("vset /camera/0/rotation 0 -90 0") == "ok"
        assert wire.floats("vget /camera/0/rotation")[1] == pytest.approx(-90.0, abs=0.01)
        assert (
            wire.text("vset /action/keyboard W 0") == "ok"
            and wire.text("vrun RestartLevel 4294967295") == "ok"
        )


BAD_ARGV = [
    ["--port", "70000"],
    ["--port", "65536"],
    ["--port", "-1"],
    ["--port", "abc"],
    ["--host", "0.0.0.0"],
    ["--host", "192.168.1.1", "--port", "0"],
    ["--host", "not a host"],
    # loopback, but the client and server speak IPv4
    ["--host", "::1", "--port", "0", "--size", "32", "--num-oois", "8"],
    ["--unix", ""],
    ["--unix", "/no/such/dir/unrealcv.sock", "--size", "32", "--num-oois", "8"],
    ["--port", "0", "--size", "8"],
    ["--port", "0", "--size", "32", "--num-oois", "0"],
    ["--port", "0", "--size", "32", "--num-oois", "-3"],
    ["--port", "0", "--size", "32", "--num-oois", "1000"],
    ["--size", "abc"],
    ["--num-oois", "2.5"],
    ["--bogus"],
]


def _refused(argv, capsys) -> str:
    """``main(argv)``'s one-line error, after checking it exits with status 2 and no traceback."""
    with pytest.raises(SystemExit) as exit_info:
        server_module.main(argv)
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("argv", BAD_ARGV, ids=[" ".join(a) for a in BAD_ARGV])
def test_a_bad_option_is_one_line_and_status_2(argv, capsys):
    _refused(argv, capsys)


def test_out_of_range_ports_are_named(capsys):
    assert _refused(["--port", "70000"], capsys) == "error: port 70000 is out of range (0 to 65535)"
    assert _refused(["--port", "-1"], capsys) == "error: port -1 is out of range (0 to 65535)"
    assert "--allow-remote" in _refused(["--host", "0.0.0.0"], capsys)


def test_a_port_or_socket_path_in_use_is_one_line_and_status_2(tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert (
            _refused(["--port", str(port), "--size", "32", "--num-oois", "8"], capsys)
            == f"error: port {port} on 127.0.0.1 is in use"
        )
    path = tmp_path / "unrealcv.sock"
    path.touch()
    assert (
        _refused(["--unix", str(path), "--size", "32", "--num-oois", "8"], capsys)
        == f"error: {path} is in use"
    )
