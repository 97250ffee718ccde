"""Pareto tools (NSGA-II; Deb et al., 2002) for Wuji's selection on exploration and winning
(§IV-B): dominance, ranks, crowding distance, survival and tournaments, under ``jit`` and ``vmap``.

* chosen: ranks by one ``lax.scan`` over a lexicographic sort, in ``O(N M)`` memory, no peeling.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["binary_tournament", "crowding_distance", "dominates", "non_dominated_rank", "select"]


def check_objectives(objectives, name: str = "objectives") -> jax.Array:
    """``objectives`` as a float array ``(N, M)``, N ≥ 1, M ≥ 1, checked (NaN only when
    concrete)."""
    if jnp.ndim(objectives) != 2:
        raise ValueError(
            f"{name} must be (N, M): points × objectives, got shape {jnp.shape(objectives)}"
        )
    if jnp.shape(objectives)[0] < 1 or jnp.shape(objectives)[1] < 1:
        raise ValueError(
            f"{name} needs at least one point and one objective, got shape {jnp.shape(objectives)}"
        )
    if (
        not isinstance(objectives, jax.core.Tracer)
        and np.isnan(np.asarray(objectives, dtype=np.float64)).any()
    ):
        rows = np.flatnonzero(np.isnan(np.asarray(objectives, dtype=np.float64)).any(axis=1))
        raise ValueError(
            f"{name} has NaN at point(s) {rows[:10].tolist()}: an objective must be a number"
        )
    objectives = jnp.asarray(objectives)
    return (
        objectives
        if jnp.issubdtype(objectives.dtype, jnp.floating)
        else objectives.astype(jnp.float32)
    )


def _oriented(objectives: jax.Array, maximize: bool) -> jax.Array:
    return objectives if maximize else -objectives


def dominates(a: jax.Array, b: jax.Array, maximize: bool = True) -> jax.Array:
    """``a ≻ b`` (Pareto dominance) over the last axis: ``all(a ≥ b) and any(a > b)`` when
    maximising (``≤``/``<`` when minimising); broadcasts over leading axes."""
    a, b = _oriented(a, maximize), _oriented(b, maximize)
    return jnp.all(a >= b, axis=-1) & jnp.any(a > b, axis=-1)


def non_dominated_rank(objectives, maximize: bool = True) -> jax.Array:
    """``int32[N]``: each point's non-dominated front (0 = first front), NSGA-II's sorting.

    Args:
      objectives: ``(N, M)`` objective values, one row per point.
      maximize: ``True`` when larger is better in every objective.

    Returns:
      ``rank`` with ``rank_i = 0`` when no point dominates ``i``, else
      ``1 + max {rank_j : j ≻ i}``. Equal points share a front; they never
      dominate each other.

    Ranks are computed without NSGA-II's front-by-front peeling, whose cost
    grows with the number of fronts: a point's front is the length of the
    longest chain of points dominating it, and after a lexicographic sort (best
    first) every dominator of a point comes before it, so one ``lax.scan`` over
    the sorted points assigns the ranks in ``O(N² M)`` time and ``O(N M)``
    memory (no ``N × N`` matrix).

    Example:
      >>> non_dominated_rank(jnp.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])).tolist()
      [0, 0, 1]
    """
    return front_ranks(check_objectives(objectives), maximize)


@functools.partial(jax.jit, static_argnames="maximize")
def front_ranks(objectives: jax.Array, maximize: bool) -> jax.Array:
    """:func:`non_dominated_rank` without the input checks (``objectives`` already checked: callers
    inside ``jit``)."""
    values = _oriented(objectives, maximize)
    # Best first lexicographically: every dominator of a point sorts before it.
    order = jnp.lexsort(tuple(-values[:, m] for m in reversed(range(values.shape[1]))))

    def assign(ranks, i):
        dominators = dominates(values, values[i])  # unassigned points (rank −1) cannot dominate i
        return ranks.at[i].set(jnp.max(jnp.where(dominators, ranks + 1, 0))), None

    ranks, _ = jax.lax.scan(assign, jnp.full(values.shape[0], -1, jnp.int32), order)
    return ranks


def crowding_distance(objectives, ranks) -> jax.Array:
    """``float[N]``: NSGA-II's crowding distance of each point within its front.

    Per objective ``m``, the front's points sorted by ``f_m``: the two boundary
    points get ``inf``; an interior point adds ``(f_m[next] − f_m[prev]) /
    (max_front f_m − min_front f_m)``; an objective with zero range over the
    front adds 0 for interior points. A front of one or two points is all
    ``inf``. Ties in ``f_m`` are ordered by index. The distance does not depend
    on whether objectives are maximised.

    This is Deb et al.'s (2002) definition. Wuji's Algorithm 4 differs: only
    the best point of each objective gets the largest distance, and the gaps
    are not normalised by the front's range (on Wuji's two objectives, states
    counted in tens and returns near 1, the unnormalised sum would rank by
    exploration alone); we keep NSGA-II's.

    Args:
      objectives: ``(N, M)`` objective values.
      ranks: ``int[N]`` fronts, as :func:`non_dominated_rank` gives.
    """
    objectives = check_objectives(objectives)
    if jnp.shape(ranks) != objectives.shape[:1]:
        raise ValueError(
            f"ranks must be ({objectives.shape[0]},) like the objectives' points, got "
            f"{jnp.shape(ranks)}"
        )
    return front_crowding(objectives, jnp.asarray(ranks, jnp.int32))


@jax.jit
def front_crowding(objectives: jax.Array, ranks: jax.Array) -> jax.Array:
    """:func:`crowding_distance` without the input checks."""
    n = objectives.shape[0]

    def one_objective(f):
        order = jnp.lexsort((f, ranks))  # by front, then by f within the front
        f_sorted, r_sorted = f[order], ranks[order]
        low = jax.ops.segment_min(f, ranks, num_segments=n)[r_sorted]
        high = jax.ops.segment_max(f, ranks, num_segments=n)[r_sorted]
        prev_f, next_f = (
            jnp.concatenate([f_sorted[:1], f_sorted[:-1]]),
            jnp.concatenate([f_sorted[1:], f_sorted[-1:]]),
        )
        prev_r = jnp.concatenate([jnp.array([-1], ranks.dtype), r_sorted[:-1]])
        next_r = jnp.concatenate([r_sorted[1:], jnp.array([-1], ranks.dtype)])
        boundary = (prev_r != r_sorted) | (next_r != r_sorted)
        span = high - low
        gap = jnp.where(span > 0, (next_f - prev_f) / jnp.where(span > 0, span, 1.0), 0.0)
        return jnp.zeros(n, f.dtype).at[order].set(jnp.where(boundary, jnp.inf, gap))

    return jnp.sum(jax.vmap(one_objective, in_axes=1)(objectives), axis=0)


def select(objectives, k: int, maximize: bool = True) -> jax.Array:
    """``int32[k]``: the indices NSGA-II's survival keeps: whole fronts in order, then the last
    front's points by decreasing crowding distance (ties by index).

    Raises:
      ValueError: ``k`` not in ``1 … N``.
    """
    objectives = check_objectives(objectives)
    if not 1 <= int(k) <= objectives.shape[0]:
        raise ValueError(
            f"k must be between 1 and the population size {objectives.shape[0]}, got {k}"
        )
    return _select(objectives, int(k), maximize)


@functools.partial(jax.jit, static_argnames=("k", "maximize"))
def _select(objectives: jax.Array, k: int, maximize: bool) -> jax.Array:
    ranks = front_ranks(objectives, maximize)
    crowding = front_crowding(objectives, ranks)
    return jnp.lexsort((-crowding, ranks))[:k].astype(jnp.int32)


def binary_tournament(key: jax.Array, objectives, num: int, maximize: bool = True) -> jax.Array:
    """``int32[num]``: parents chosen by Pareto-dominance binary tournaments (Wuji §IV-B).

    Each tournament draws two points uniformly (with replacement); the one that
    dominates the other wins, and when neither dominates (equal points included)
    a fair coin picks: Wuji's Algorithm 1 ("if they do not dominate each other we
    randomly select one of them"). Not NSGA-II's crowded comparison, under which
    a first-front point beats a second-front point it does not dominate and a
    front's end points (infinite crowding distance) win every draw in their front.

    Raises:
      ValueError: ``num`` < 1.
    """
    objectives = check_objectives(objectives)
    if int(num) < 1:
        raise ValueError(f"num must be at least 1, got {num}")
    return dominance_tournament(key, objectives, int(num), maximize)


@functools.partial(jax.jit, static_argnames=("num", "maximize"))
def dominance_tournament(
    key: jax.Array, objectives: jax.Array, num: int, maximize: bool
) -> jax.Array:
    """:func:`binary_tournament` without the input checks."""
    pick_key, coin_key = jax.random.split(key)
    a, b = jax.random.randint(pick_key, (2, num), 0, objectives.shape[0])
    coin = jax.random.bernoulli(coin_key, 0.5, (num,))
    a_beats_b, b_beats_a = (
        dominates(objectives[a], objectives[b], maximize),
        dominates(objectives[b], objectives[a], maximize),
    )
    a_wins = a_beats_b | (~b_beats_a & coin)
    return jnp.where(a_wins, a, b).astype(jnp.int32)
