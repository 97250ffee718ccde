"""Bug oracles (Wuji §III-B; RELINE §4.1.3): pure predicates over telemetry and states: crash,
stuck (``‖s_t − s̄‖ < T_s``), logical, balance, low FPS, and a learned texture oracle.
"""

from jgtest.oracles.low_fps import low_fps, low_fps_points, reline_threshold
from jgtest.oracles.predicates import balance, crash, logical, stuck
from jgtest.oracles.stuck_monitor import StuckMonitor, stuck_init, stuck_update

__all__ = [
    "StuckMonitor",
    "balance",
    "crash",
    "logical",
    "low_fps",
    "low_fps_points",
    "reline_threshold",
    "stuck",
    "stuck_init",
    "stuck_update",
]
