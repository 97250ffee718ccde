"""Bug oracles (Wuji §III-B; RELINE §4.1.3): pure predicates over telemetry and states.

* crash: the game died or flagged a crash (Wuji: "monitoring whether the game
  process is terminated");
* stuck: the current state is closer than a threshold to the moving average of
  the previous ``n`` states (Wuji: ``s̄ = Σ_{i=t−n}^{t−1} s_i / n``, bug if
  ``‖s_t − s̄‖ < T_s``);
* logical: user assertions over states (Wuji: "it requires specific assertions");
* balance: a player's performance beyond a threshold (Wuji: "one player
  achieves unexpected performance, e.g. too strong or weak");
* low-FPS: a step's render time above RELINE's threshold ``t``, and RELINE's
  low-FPS points (cells above ``t`` in more than 50% of their visits);
* texture (:mod:`jgtest.oracles.texture`, beyond PPGTA): a learned classifier of an
  object's crops over its 360° walk, flagging low-resolution and stretched textures.
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
