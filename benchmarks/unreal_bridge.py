"""The Unreal bridge's throughput against the local UnrealCV protocol server, next to a bare socket
round trip, same run.

    python benchmarks/unreal_bridge.py --quick --json benchmarks/results/unreal_bridge_quick.json

Measured on this machine against :class:`envs_bridge.unrealcv_server.UnrealCVServer` (ParkWorld
64×64 behind it, loopback), after a warm-up, median of the repeats:

* ``bare socket``: one framed request and its reply (``vget /unrealcv/version``) over a raw socket,
  no client library: the wire and the server's dispatch;
* ``unrealcv.Client``: the same request through the real client (its receive thread and queues);
* ``bridge request``: the same through :class:`envs_bridge.unreal.UnrealConnection` (timeout, fault
  checks);
* ``bridge lit png``: one frame (``vget /camera/0/lit png``, encode on the server, decode here);
* ``bridge env step``: one :meth:`UnrealEnv.step` (a key, ``lit``, ``object_mask``, ``location``,
  ``rotation``: five requests).

It prints requests/s and frames/s and the bridge's overhead per request over the bare socket.
"""

from __future__ import annotations

import os
import platform
import socket
import statistics
import struct
import sys
import time
from pathlib import Path

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
).strip()

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import parse_args, write_json  # noqa: E402

from envs_bridge.unreal import UnrealConnection, UnrealEnv  # noqa: E402
from envs_bridge.unrealcv_server import MAGIC, UnrealCVServer, frame_bytes  # noqa: E402


def _timed(call, n: int, repeats: int) -> float:
    """Median seconds per call over ``repeats`` batches of ``n`` calls (after one warm-up batch)."""
    for _ in range(n):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            call()
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times)


def _bare(address):
    sock = socket.create_connection(address)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def read_frame():
        header = b""
        while len(header) < 8:
            header += sock.recv(8 - len(header))
        magic, size = struct.unpack("<II", header)
        assert magic == MAGIC
        body = b""
        while len(body) < size:
            body += sock.recv(size - len(body))
        return body

    read_frame()  # the greeting
    counter = iter(range(10**9))

    def request():
        sock.sendall(frame_bytes(b"%d:vget /unrealcv/version" % next(counter)))
        return read_frame()

    return sock, request


def main(argv=None) -> int:
    args = parse_args(__doc__, argv)
    n, repeats = (50, 3) if args.quick else (200, 5)
    rows = {}
    with UnrealCVServer(size=64, num_oois=40) as server:
        sock, bare = _bare(server.address)
        rows["bare socket"] = _timed(bare, n, repeats)
        sock.close()
        from unrealcv import Client

        client = Client(server.address)
        client.connect()
        rows["unrealcv.Client"] = _timed(
            lambda: client.request("vget /unrealcv/version", timeout=5), n, repeats
        )
        client.disconnect()
        conn = UnrealConnection(server.address)
        rows["bridge request"] = _timed(lambda: conn.request("vget /unrealcv/version"), n, repeats)
        rows["bridge lit png"] = _timed(
            lambda: conn.image("vget /camera/0/lit png"), max(10, n // 5), repeats
        )
        conn.close()
        with UnrealEnv([server.address]) as env:
            env.reset(0)
            rows["bridge env step"] = _timed(
                lambda: env.step(np.array([0])), max(10, n // 5), repeats
            )
    bare_s = rows["bare socket"]
    print(f"{'path':18s} {'per call (ms)':>14s} {'calls/s':>10s} {'overhead vs bare (ms)':>22s}")
    for name, seconds in rows.items():
        print(
            f"{name:18s} {seconds * 1000:14.3f} {1 / seconds:10.0f} "
            f"{(seconds - bare_s) * 1000:22.3f}"
        )
    result = {
        "device": f"CPU, {platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "server": "envs_bridge.unrealcv_server (ParkWorld 64x64, 40 objects), loopback",
        "seconds_per_call": rows,
        "calls_per_s": {k: 1 / v for k, v in rows.items()},
        "frames_per_s": {
            "lit png": 1 / rows["bridge lit png"],
            "env step": 1 / rows["bridge env step"],
        },
        "overhead_ms_vs_bare": {k: (v - bare_s) * 1000 for k, v in rows.items()},
        "quick": args.quick,
    }
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
