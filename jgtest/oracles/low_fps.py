"""RELINE's low-FPS oracle (Tufano et al., 2022, §4.1.3): the threshold ``t = t_b + δ``, five
standard deviations above the game-only agent's mean render time plus the cost of training load,
and the low-FPS points, cells above ``t`` in more than 50% of their visits (§4.1.3).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.coverage import visit_counts


def low_fps(frame_time_ms: jax.Array, threshold_ms: float) -> jax.Array:
    """Per-step low-FPS oracle: ``frame_time > t``."""
    return frame_time_ms > threshold_ms


def reline_threshold(baseline_ms, warmup_ms=None) -> float:
    """RELINE's ``t = mean + 5·sd`` of ``baseline_ms`` plus ``δ`` from ``warmup_ms``.

    Args:
      baseline_ms: render times from the trained rl-baseline agent (RELINE: 300
        episodes, 48,825 points).
      warmup_ms: render times from the warm-up episodes under training load
        (RELINE: 100 episodes); ``None`` means ``δ = 0``.
    """
    base = np.asarray(baseline_ms, np.float64).ravel()
    if base.size < 2:
        raise ValueError("reline_threshold needs at least two baseline render times")
    t_b = base.mean() + 5.0 * base.std(ddof=1)
    if warmup_ms is None:
        return float(t_b)
    warm = np.asarray(warmup_ms, np.float64).ravel()
    if warm.size < 2:
        raise ValueError("reline_threshold needs at least two warm-up render times")
    q1, q3 = np.percentile(base, [25, 75])
    q1_tr, q3_tr = np.percentile(warm, [25, 75])
    return float(t_b + max(q1_tr - q1, q3_tr - q3))


def low_fps_points(
    cells: jax.Array, frame_time_ms: jax.Array, threshold_ms: float, num_cells: int, mask=None
):
    """RELINE's low-FPS points over a batch of visits.

    Args:
      cells: integer cell ids of the visits (any shape).
      frame_time_ms: render times of the same visits.
      threshold_ms: ``t``.
      num_cells: number of cells.
      mask: optional bool, which visits count (e.g. not past an episode's end).

    Returns:
      ``(is_low_fps bool[num_cells], visits int32[num_cells], confidence float32[num_cells])``
      where confidence is the share of visits above ``t`` (0 for unvisited cells).
    """
    visits = visit_counts(cells, num_cells, mask)
    slow = low_fps(frame_time_ms, threshold_ms)
    slow = slow if mask is None else slow & mask
    exceed = visit_counts(cells, num_cells, slow)
    confidence = jnp.where(visits > 0, exceed / jnp.maximum(visits, 1), 0.0).astype(jnp.float32)
    return (visits > 0) & (2 * exceed > visits), visits, confidence
