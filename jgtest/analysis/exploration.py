"""Exploration and object-testing metrics of PPGTA's evaluation (§VI-A, Fig. 7–9): pathway coverage,
objects tested over episodes, and each object's outcome (tested, failed, missed, unreachable).
"""

from __future__ import annotations

import numpy as np

OUTCOMES = ("success", "failed", "missed")


def pathway_coverage_curve(visited: np.ndarray, path: np.ndarray) -> np.ndarray:
    """``float[E]``: the share of ``path`` cells (``bool[H, W]``) visited by episodes ``0..e``,
    from each episode's visited cells ``visited [E, H, W]``.

    Raises:
      ValueError: shapes that do not match, or a map without pathway.
    """
    visited, path = np.asarray(visited, bool), np.asarray(path, bool)
    if visited.ndim != 3 or visited.shape[1:] != path.shape:
        raise ValueError(
            f"visited must be [episodes, {path.shape[0]}, {path.shape[1]}], got {visited.shape}"
        )
    if not path.any():
        raise ValueError("the map has no pathway cell")
    seen = np.logical_or.accumulate(visited, axis=0)
    return (seen & path).sum(axis=(1, 2)) / path.sum()


def ooi_tested_curve(tested_in: np.ndarray, episodes: int) -> np.ndarray:
    """``int[episodes]``: objects whose test ended by the end of each episode; ``tested_in[k]`` is
    the episode object ``k``'s test ended in (−1: never)."""
    tested_in = np.asarray(tested_in)
    ends = tested_in[tested_in >= 0]
    if ends.size and ends.max() >= episodes:
        raise ValueError(
            f"an object was tested in episode {int(ends.max())}, beyond the {episodes} episodes"
        )
    return np.searchsorted(np.sort(ends), np.arange(episodes), side="right")


def ooi_outcomes(success: np.ndarray, tested: np.ndarray, reachable: np.ndarray) -> dict:
    """Per object ``"success"``, ``"failed"`` or ``"missed"``, and the counts, with the missed ones
    that are unreachable."""
    success, tested, reachable = (np.asarray(a, bool) for a in (success, tested, reachable))
    outcome = np.where(tested & success, "success", np.where(tested, "failed", "missed"))
    counts = {o: int((outcome == o).sum()) for o in OUTCOMES}
    return {
        "outcome": outcome,
        **counts,
        "missed_unreachable": int(((outcome == "missed") & ~reachable).sum()),
        "unreachable": int((~reachable).sum()),
    }
