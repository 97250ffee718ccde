"""The signals: what a game can report to a testing method, and which each method reads.

Every game declares the signals it provides (:data:`SIGNALS`, ``TestingEnv.signals``,
``HostEnv.signals``), every method those it reads (:data:`NEEDS`);
:mod:`jgtest.methods.compatibility` checks a pair before anything compiles.

* chosen: this module is the vocabulary only, so that games and bridges declare theirs without
  importing any method.
"""

from __future__ import annotations

#: The signals: ``cells`` (coverage cells, ``telemetry.cell`` in ``[0, num_cells)``), ``position``
#: (where the player is, ``telemetry.position``: maps, per-place analyses), ``state_features`` (a
#: fixed-length vector of the game's state, Wuji's Def. 3), ``game_reward`` (the game's own reward,
#: ``telemetry.game_reward``: Wuji's win objective), ``oracle_inputs`` (what the bug oracles read:
#: ``telemetry.bugs_fired`` and ``crashed``), ``frame_time`` (per-step ``telemetry.frame_time_ms``,
#: measured or simulated, or injected low-FPS places firing as ``low_fps`` bugs, RELINE §3.1.3),
#: ``rgb_frames`` (RGB frames as the observation), ``objects`` (the objects of interest in view,
#: with boxes or masks), ``events`` (game events per step, a switch toggled, a door opened:
#: ``info["events"]``) and ``actors`` (the level's named things a plan's nodes name).
SIGNALS = (
    "cells",
    "position",
    "state_features",
    "game_reward",
    "oracle_inputs",
    "frame_time",
    "rgb_frames",
    "objects",
    "events",
    "actors",
)

#: How a game provides each signal (the refusal's advice).
HOW = {
    "cells": "report telemetry.cell, an int in [0, num_cells), each step",
    "position": "report telemetry.position (x, y) each step",
    "state_features": (
        "define TestingEnv.state_features and state_feature_bounds (a fixed-length vector of the "
        "game's state)"
    ),
    "game_reward": "report the game's own reward as telemetry.game_reward",
    "oracle_inputs": "report telemetry.bugs_fired (injected bugs) or telemetry.crashed",
    "frame_time": (
        "report telemetry.frame_time_ms each step (a bridge can measure each step's wall time), "
        "or inject low-FPS places as low_fps bugs"
    ),
    "rgb_frames": "return RGB frames, uint8[H, W, 3], as the observation",
    "objects": "report the objects of interest in view with their boxes or masks",
    "events": "report info['events'], one boolean per game event, each step",
    "actors": "name the level's actors (switches, doors, items) and their positions",
}

#: The signals each ``jgtest run`` method reads, and why: the random campaign its coverage; Wuji its
#: state coverage and exploration score (Def. 3), the win objective (§IV-B) and its crash, stuck and
#: logical oracles (§V); RELINE the load reward (§3.1) and low-FPS places (§4.1.3); Inspector and
#: PPGTA pixels, the objects a test starts at (§V-B) and pathway coverage (§VI-A); Explicit Plans
#: the validations' events and the plan's nodes.
NEEDS = {
    "random": ("cells",),
    "wuji": ("state_features", "game_reward", "oracle_inputs"),
    "reline": ("frame_time", "position"),
    "inspector": ("rgb_frames", "objects", "position"),
    "ppgta": ("rgb_frames", "objects", "position"),
    "compare-explorers": ("rgb_frames", "objects", "position"),
    "plan": ("events", "actors"),
}

#: What every on-device twin provides unless it says otherwise (``TestingEnv.signals``).
DEVICE_DEFAULT = frozenset({"cells", "position", "state_features", "game_reward", "oracle_inputs"})
