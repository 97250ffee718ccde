"""Where a compiled call's time goes, op by op: XLA's own trace of the call (``jax.profiler``),
each op's self time summed and attributed to the JAX code that made it.

    compiled = jax.jit(f).lower(*args).compile()
    ops = op_profile(lambda: compiled(*args), compiled.as_text())

Each entry names an HLO instruction of the compiled program (``fusion.12``, ``while.3``,
``scatter.1``), its opcode, its share of the traced time, and the JAX name stack that XLA's metadata
gives for it (``jit(advance)/while/body/vmap(play)/…/move_ghosts/reduce``: the functions and the
primitive that made it). A fusion carries the metadata of its root, so its stack is where its
result is made.

* chosen: self time (an op's own time, less the ops traced inside it, such as a while loop's
  body), so that a loop and its body are not counted twice.
"""

from __future__ import annotations

import collections
import gzip
import json
import re
import tempfile
from pathlib import Path

import jax

#: An HLO instruction line: its name, then after its shape its opcode and operands.
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+) = .*? (?P<opcode>[a-z][\w\-]*)\(")
_OP_NAME = re.compile(r'op_name="([^"]*)"')


def instructions(hlo_text: str) -> dict[str, dict]:
    """Each instruction of an optimised HLO module's text: ``name → {opcode, scope}``."""
    found = {}
    for line in hlo_text.splitlines():
        match = _INSTRUCTION.match(line)
        if match is None:
            continue
        op_name = _OP_NAME.search(line)
        found[match["name"]] = {"opcode": match["opcode"], "scope": op_name[1] if op_name else ""}
    return found


def self_times(events: list[dict]) -> collections.Counter:
    """Microseconds of each event name's own time: its duration less that of the events nested in
    it on the same thread."""
    own: collections.Counter = collections.Counter()
    by_thread = collections.defaultdict(list)
    for event in events:
        if event.get("ph") == "X" and "dur" in event:
            by_thread[(event.get("pid"), event.get("tid"))].append(event)
    for thread in by_thread.values():
        thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for event in thread:
            while stack and event["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
                stack.pop()
            own[event["name"]] += event["dur"]
            if stack:
                own[stack[-1]["name"]] -= event["dur"]
            stack.append(event)
    return own


def traced_events(call, calls: int) -> list[dict]:
    """The trace events of ``calls`` runs of ``call()``."""
    with tempfile.TemporaryDirectory() as log_dir:
        with jax.profiler.trace(log_dir):
            for _ in range(calls):
                jax.block_until_ready(call())
        (trace,) = Path(log_dir).glob("plugins/profile/*/*.trace.json.gz")
        with gzip.open(trace) as f:
            return json.load(f)["traceEvents"]


def op_profile(call, hlo_text: str, calls: int = 3, top: int = 8) -> list[dict]:
    """The ``top`` ops of the program ``hlo_text`` (its optimised HLO) by self time over ``calls``
    traced runs of ``call()`` (compiled and warmed up): each with its ``share`` of the time traced
    in the program's ops, ``us_per_call``, ``opcode`` and ``scope`` (module
    docstring). A trace that names none of the program's ops gives an empty list."""
    known = instructions(hlo_text)
    times = self_times(traced_events(call, calls))
    ours = {name.lstrip("%"): us for name, us in times.items() if name.lstrip("%") in known}
    total = sum(ours.values())
    if not total:
        return []
    ranked = sorted(ours.items(), key=lambda item: -item[1])[:top]
    return [
        {
            "op": name,
            "share": us / total,
            "us_per_call": us / calls,
            **known[name],
        }
        for name, us in ranked
    ]
