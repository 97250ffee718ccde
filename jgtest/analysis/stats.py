"""Statistics for RELINE's evaluation (Tufano et al.): episodes with at least ``n`` bugs (§3.1.4,
Table 1), the reliability of replayed render times, and Mann-Whitney tests, Holm-adjusted, with
Cliff's delta (§4.1.3, Table 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats as _sp


def _float_array(x: Any, name: str, ndim: int, kind: str, dims: str) -> np.ndarray:
    """``x`` as a float array of ``ndim`` dims, or a ``ValueError`` naming ``name``: "must be a
    ``kind`` of numbers" when ``x`` is not numbers, "must be ``dims``" when it has other dims."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a {kind} of numbers ({exc})") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {dims}, got shape {arr.shape}")
    return arr


def as_sample(x: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """1-D finite float array from ``x``; ``name`` is used in error messages (also for the
    plots)."""
    arr = _float_array(x, name, 1, "1-D sequence", "1-D")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


# --------------------------------------------------------------------------- Holm


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values.

    With ``m`` p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value of
    the ``i``-th smallest (1-based) is::

        p~_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))

    i.e. multiply by ``m - i + 1``, take the cumulative maximum (so the adjusted values
    keep the order of the raw ones) and clip to 1. The result is returned in the input
    order. Rejecting ``p~ < alpha`` controls the family-wise error rate at ``alpha``.
    RELINE §4.1.3 uses it for the pairwise Spearman tests and for the Mann-Whitney tests.

    Ties in the input get the same adjusted value whatever their order. An empty input
    gives an empty array.

    Raises:
        ValueError: if the input is not 1-D or has a value outside [0, 1] or NaN.
    """
    p = as_sample(p_values, "p_values", allow_empty=True)
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError(f"p_values must lie in [0, 1], got min {p.min()} max {p.max()}")
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    scaled = p[order] * (m - np.arange(m))  # p_(i) * (m - i + 1), i 1-based
    adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    out = np.empty(m, dtype=np.float64)
    out[order] = adjusted_sorted
    return out


# --------------------------------------------------------------------------- Mann-Whitney


def mann_whitney(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test (Conover 1998), RELINE §4.1.3 / Table 2.

    ``U_a = #{(i, j): a_i > b_j} + 0.5 * #{(i, j): a_i == b_j}`` (the statistic for ``a``;
    ``U_b = |a| * |b| - U_a``). The p-value is ``scipy.stats.mannwhitneyu(a, b,
    alternative="two-sided")`` with scipy's default method (exact for small samples
    without ties, else the tie-corrected normal approximation with continuity correction).

    Returns:
        ``(U_a, p)`` as floats.

    Raises:
        ValueError: if either sample is empty, not 1-D or has NaN / infinite values.
    """
    x = as_sample(a, "a")
    y = as_sample(b, "b")
    res = _sp.mannwhitneyu(x, y, alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


# --------------------------------------------------------------------------- Cliff's delta


def cliffs_delta(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Cliff's delta effect size (Grissom & Kim 2005), RELINE §4.1.3 / Table 2.

    ::

        d = (#{(i, j): a_i > b_j} - #{(i, j): a_i < b_j}) / (|a| * |b|)

    ``d`` is in [-1, 1]; ``+1`` when every ``a_i`` exceeds every ``b_j``. Ties count for
    neither side. Computed in ``O((n + m) log m)``: ``b`` is sorted once and, for each
    ``a_i``, ``searchsorted(b, a_i, "left")`` counts the ``b_j < a_i`` and
    ``m - searchsorted(b, a_i, "right")`` counts the ``b_j > a_i``.

    Raises:
        ValueError: if either sample is empty, not 1-D or has NaN / infinite values.
    """
    x = as_sample(a, "a")
    y = np.sort(as_sample(b, "b"))
    n, m = x.size, y.size
    below = np.searchsorted(y, x, side="left").astype(np.int64)  # b_j < a_i
    above = m - np.searchsorted(y, x, side="right").astype(np.int64)  # b_j > a_i
    return float((int(below.sum()) - int(above.sum())) / (n * m))


def cliffs_magnitude(d: float) -> str:
    """Interpretation of Cliff's delta used by RELINE §4.1.3 (Grissom & Kim 2005).

    ``"negligible"`` for ``|d| < 0.10``, ``"small"`` for ``0.10 <= |d| < 0.33``,
    ``"medium"`` for ``0.33 <= |d| < 0.474`` and ``"large"`` for ``|d| >= 0.474``.

    Raises:
        ValueError: if ``d`` is NaN or outside [-1, 1].
    """
    try:
        v = float(d)
    except (TypeError, ValueError):
        raise ValueError(f"Cliff's delta must be a number, got {d!r}") from None
    if not np.isfinite(v) or abs(v) > 1.0:
        raise ValueError(f"Cliff's delta must lie in [-1, 1], got {d!r}")
    v = abs(v)
    if v < 0.10:
        return "negligible"
    if v < 0.33:
        return "small"
    if v < 0.474:
        return "medium"
    return "large"


# --------------------------------------------------------------------------- group comparison


def compare_groups(
    groups: Mapping[str, Sequence[float] | np.ndarray], against: str | None = None
) -> list[dict[str, Any]]:
    """All pairwise comparisons of RELINE §4.1.3 / Table 2 between named samples.

    For every unordered pair ``(a, b)`` of groups, in the mapping's order (``a`` before
    ``b``), or with ``against`` only the pairs ``(against, other)`` for each other group
    (one method against each baseline, as Wuji §V-B claims its strategy ahead of each
    other one; the Holm family is then those pairs), a dict with::

        a, b             group names
        n_a, n_b         sample sizes
        U, p             two-sided Mann-Whitney U (statistic for a) and raw p-value
        p_holm           p adjusted with Holm's procedure over all the returned pairs
        cliffs_delta     d(a, b) = (#{a_i > b_j} - #{a_i < b_j}) / (n_a * n_b)
        magnitude        cliffs_magnitude(d)
        median_a, median_b

    A positive ``cliffs_delta`` means ``a`` tends to be larger (longer render times).

    Empty groups (an agent may find no low-FPS point) are skipped: no pair involving them
    is returned and they do not count in the Holm family.

    Raises:
        ValueError: if fewer than two groups are non-empty (the message names the empty
            ones), ``against`` names no non-empty group, or a group is not 1-D or has NaN /
            infinite values.
    """
    if not isinstance(groups, Mapping):
        raise ValueError(f"groups must be a mapping name -> sample, got {type(groups).__name__}")
    samples: dict[str, np.ndarray] = {}
    empty: list[str] = []
    for name, values in groups.items():
        arr = as_sample(values, f"group {name!r}", allow_empty=True)
        if arr.size == 0:
            empty.append(str(name))
        else:
            samples[name] = arr
    if len(samples) < 2:
        detail = f"; empty: {', '.join(repr(e) for e in empty)}" if empty else ""
        raise ValueError(
            f"compare_groups needs at least 2 non-empty groups, got {len(samples)} of "
            f"{len(groups)}{detail}"
        )
    names = list(samples)
    if against is None:
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    elif against in samples:
        pairs = [(against, b) for b in names if b != against]
    else:
        raise ValueError(
            f"compare_groups: against={against!r} is not a non-empty group (groups: "
            f"{', '.join(map(repr, groups))})"
        )
    rows: list[dict[str, Any]] = []
    for a, b in pairs:
        xa, xb = samples[a], samples[b]
        u, p = mann_whitney(xa, xb)
        d = cliffs_delta(xa, xb)
        rows.append(
            {
                "a": a,
                "b": b,
                "n_a": int(xa.size),
                "n_b": int(xb.size),
                "U": u,
                "p": p,
                "cliffs_delta": d,
                "magnitude": cliffs_magnitude(d),
                "median_a": float(np.median(xa)),
                "median_b": float(np.median(xb)),
            }
        )
    adjusted = holm([r["p"] for r in rows])
    for row, p_adj in zip(rows, adjusted):
        row["p_holm"] = float(p_adj)
    return rows


# --------------------------------------------------------------------------- replay reliability


def replay_reliability(
    render_ms: Sequence[Sequence[float]] | np.ndarray, alpha: float = 0.05
) -> dict[str, Any]:
    """Reliability of the time measurements, RELINE §4.1.3.

    ``render_ms`` is ``[R, T]``: ``R`` replays of the same constant-action episode, ``T``
    steps, entry = milliseconds to render the frames after that step's action. For every
    pair of replays ``r < s`` the Spearman rank correlation ``rho_rs`` (Pearson
    correlation of the ranks, ties given average ranks) and its two-sided p-value
    (``scipy.stats.spearmanr``, t-distribution with ``T - 2`` degrees of freedom) are
    computed; the ``R (R - 1) / 2`` p-values are adjusted with :func:`holm`.

    The paper replays 300 episodes and finds every correlation significant (adjusted
    p < 0.05), minimum rho 0.77, median 0.91.

    Returns:
        ``{"replays": R, "steps": T, "pairs": R(R-1)/2, "rho_min", "rho_median",
        "rho_max", "p_holm_max", "all_significant": p_holm_max < alpha}``.

    Raises:
        ValueError: if the array is not 2-D, ``R < 2``, ``T < 3``, a value is NaN or
            infinite, a replay is constant (rho undefined), or ``alpha`` is not in (0, 1).
    """
    x = _float_array(render_ms, "render_ms", 2, "[replays, steps] array", "2-D [replays, steps]")
    r, t = x.shape
    if r < 2:
        raise ValueError(f"replay_reliability needs at least 2 replays, got {r}")
    if t < 3:
        raise ValueError(f"replay_reliability needs at least 3 steps per replay, got {t}")
    if not np.all(np.isfinite(x)):
        raise ValueError("render_ms contains NaN or infinite values")
    if not (0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    constant = np.flatnonzero(np.all(x == x[:, :1], axis=1))
    if constant.size:
        raise ValueError(f"replay(s) {constant.tolist()} are constant; Spearman's rho is undefined")
    res = _sp.spearmanr(x.T)  # columns are replays
    rho_m = np.atleast_2d(np.asarray(res.statistic, dtype=np.float64))
    p_m = np.atleast_2d(np.asarray(res.pvalue, dtype=np.float64))
    if r == 2:  # spearmanr returns scalars for two variables
        rho = rho_m.reshape(-1)
        p = p_m.reshape(-1)
    else:
        iu = np.triu_indices(r, k=1)
        rho, p = rho_m[iu], p_m[iu]
    p = np.clip(p, 0.0, 1.0)
    p_holm = holm(p)
    p_holm_max = float(p_holm.max())
    return {
        "replays": int(r),
        "steps": int(t),
        "pairs": int(r * (r - 1) // 2),
        "rho_min": float(rho.min()),
        "rho_median": float(np.median(rho)),
        "rho_max": float(rho.max()),
        "p_holm_max": p_holm_max,
        "all_significant": bool(p_holm_max < alpha),
    }


# --------------------------------------------------------------------------- Table 1


def at_least_n_table(
    bugs_per_episode: Sequence[Sequence[int]] | np.ndarray, num_bugs: int
) -> dict[int, dict[str, Any]]:
    """RELINE Table 1 (§3.1.4): episodes in which at least ``n`` injected bugs were found.

    ``bugs_per_episode`` is ``int[M, E]``: ``M`` models / runs (the paper: 10), ``E``
    evaluation episodes each (the paper: 1,000), entry = number of distinct injected bugs
    found in that episode (``0 .. k``, ``k = num_bugs``). For ``n = 1 .. k``::

        c_m(n) = #{e : bugs_per_episode[m, e] >= n}      (per model m)

    and the mean, median and sample standard deviation (``ddof = 1``) of
    ``c_1(n) .. c_M(n)``. With a single model (``M == 1``) the standard deviation is
    reported as 0.0 (the sample sd is undefined).

    Returns:
        ``{n: {"counts": [c_1(n), ..., c_M(n)], "mean": float, "median": float,
        "sd": float}}`` with int keys ``1 .. num_bugs``.

    Raises:
        ValueError: if ``num_bugs < 1``; the array is not 2-D or is empty; an entry is not
            an integer, is negative, or exceeds ``num_bugs`` (an episode found more bugs
            than the game has).
    """
    if isinstance(num_bugs, bool) or not isinstance(num_bugs, (int, np.integer)):
        raise ValueError(f"num_bugs must be an integer, got {num_bugs!r}")
    k = int(num_bugs)
    if k < 1:
        raise ValueError(f"num_bugs must be >= 1, got {k}")
    try:
        raw = np.asarray(bugs_per_episode)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"bugs_per_episode must be an int[models, episodes] array ({exc})"
        ) from None
    if raw.ndim != 2:
        raise ValueError(f"bugs_per_episode must be 2-D [models, episodes], got shape {raw.shape}")
    if raw.size == 0:
        raise ValueError(f"bugs_per_episode is empty (shape {raw.shape})")
    if raw.dtype == bool or not (
        np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)
    ):
        raise ValueError(f"bugs_per_episode must hold integers, got dtype {raw.dtype}")
    if np.issubdtype(raw.dtype, np.floating):
        if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
            raise ValueError(
                "bugs_per_episode must hold integers (found a non-integral or non-finite value)"
            )
    counts_arr = raw.astype(np.int64)
    if counts_arr.min() < 0:
        m, e = np.unravel_index(int(np.argmin(counts_arr)), counts_arr.shape)
        raise ValueError(f"bugs_per_episode[{m}, {e}] = {counts_arr[m, e]} is negative")
    if counts_arr.max() > k:
        m, e = np.unravel_index(int(np.argmax(counts_arr)), counts_arr.shape)
        raise ValueError(
            f"bugs_per_episode[{m}, {e}] = {counts_arr[m, e]} > num_bugs = {k}: "
            "an episode found more bugs than the game has"
        )
    num_models = counts_arr.shape[0]
    table: dict[int, dict[str, Any]] = {}
    for n in range(1, k + 1):
        c = (counts_arr >= n).sum(axis=1)
        table[n] = {
            "counts": [int(v) for v in c],
            "mean": float(c.mean()),
            "median": float(np.median(c)),
            "sd": float(c.std(ddof=1)) if num_models > 1 else 0.0,
        }
    return table
