"""Pareto tools against a plain-Python NSGA-II (Deb et al., 2002) on random and tie-heavy points."""

import jax
import numpy as np
import pytest

from jgtest.evo.pareto import (
    binary_tournament,
    crowding_distance,
    dominates,
    non_dominated_rank,
    select,
)


def reference_fronts(points, maximize=True):
    """NSGA-II's fast non-dominated sort, in plain Python."""
    sign = 1 if maximize else -1
    p = [[sign * v for v in row] for row in points]
    dom = lambda a, b: all(x >= y for x, y in zip(a, b)) and any(x > y for x, y in zip(a, b))
    n = len(p)
    dominated_by = [sum(dom(p[j], p[i]) for j in range(n)) for i in range(n)]
    ranks, front, k = [None] * n, [i for i in range(n) if dominated_by[i] == 0], 0
    while front:
        nxt = []
        for i in front:
            ranks[i] = k
            for j in range(n):
                if dom(p[i], p[j]):
                    dominated_by[j] -= 1
                    if dominated_by[j] == 0:
                        nxt.append(j)
        front, k = nxt, k + 1
    return ranks


def reference_crowding(points, ranks):
    """NSGA-II's crowding distance per front, ties by index, zero range adds 0."""
    n, m = len(points), len(points[0])
    dist = [0.0] * n
    for front in set(ranks):
        members = [i for i in range(n) if ranks[i] == front]
        for j in range(m):
            order = sorted(members, key=lambda i: (points[i][j], i))
            lo, hi = points[order[0]][j], points[order[-1]][j]
            dist[order[0]] = dist[order[-1]] = float("inf")
            for a, i, b in zip(order, order[1:], order[2:]):
                if hi > lo:
                    dist[i] += (points[b][j] - points[a][j]) / (hi - lo)
    return dist


def point_sets():
    rng = np.random.default_rng(7)
    yield "random", rng.normal(size=(60, 2))
    yield "random-3", rng.normal(size=(50, 3))
    yield "ties", rng.integers(0, 4, size=(80, 2)).astype(np.float32)
    yield "ties-3", rng.integers(0, 3, size=(70, 3)).astype(np.float32)
    yield "duplicates", np.repeat(rng.integers(0, 5, size=(10, 2)), 4, axis=0).astype(np.float32)
    yield "one front", np.stack([np.arange(9.0), -np.arange(9.0)], 1)
    yield "one point", np.array([[1.0, 2.0]])
    yield "all equal", np.ones((6, 2))


@pytest.mark.parametrize("name,points", list(point_sets()), ids=[n for n, _ in point_sets()])
@pytest.mark.parametrize("maximize", [True, False])
def test_ranks_and_crowding_equal_the_reference(name, points, maximize):
    ranks = np.asarray(non_dominated_rank(points, maximize=maximize))
    np.testing.assert_array_equal(ranks, reference_fronts(points.tolist(), maximize))
    crowding = np.asarray(crowding_distance(points, ranks))
    np.testing.assert_allclose(
        crowding, reference_crowding(points.tolist(), ranks.tolist()), rtol=1e-5
    )


@pytest.mark.parametrize("name,points", list(point_sets()), ids=[n for n, _ in point_sets()])
def test_front_properties(name, points):
    """Front k: dominated by a point of a front < k, by none of its own front; boundary points
    inf."""
    ranks = np.asarray(non_dominated_rank(points))
    dom = np.asarray(dominates(points[:, None, :], points[None, :, :]))  # dom[j, i]: j ≻ i
    for i, k in enumerate(ranks):
        assert not dom[ranks == k, i].any()
        if k > 0:
            assert dom[ranks < k, i].any() and dom[ranks == k - 1, i].any()
    crowding = np.asarray(crowding_distance(points, ranks))
    for k in np.unique(ranks):
        members = np.flatnonzero(ranks == k)
        for j in range(points.shape[1]):
            order = members[np.lexsort((members, points[members, j]))]
            assert np.isinf(crowding[order[0]]) and np.isinf(crowding[order[-1]])


def test_select_keeps_whole_fronts_then_the_most_crowded():
    points = np.array(
        [[4, 0], [0, 4], [3, 3], [2, 2], [1, 1], [2, 1.5], [1.5, 2], [0, 0]], np.float32
    )
    # fronts: {0,1,2}, {3}, {4,5,6}? (5 and 6 are dominated by 3, dominate 4)
    # -> ranks 0,0,0,1,3,2,2,4
    np.testing.assert_array_equal(non_dominated_rank(points), [0, 0, 0, 1, 3, 2, 2, 4])
    for k in range(1, 9):
        kept = np.asarray(select(points, k))
        assert kept.shape == (k,) and len(set(kept.tolist())) == k
    np.testing.assert_array_equal(np.sort(np.asarray(select(points, 4))), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.sort(np.asarray(select(points, 6))), [0, 1, 2, 3, 5, 6])


def test_select_breaks_the_last_front_by_crowding():
    front = np.stack([np.array([0, 1, 1.1, 5, 10.0]), -np.array([0, 1, 1.1, 5, 10.0])], 1)
    # boundaries (0, 4) first, then 3 (gap 9/10 + 9/10) before 2 (4/10 · 2) before 1 (1.1/10 · 2)
    np.testing.assert_array_equal(np.asarray(select(front, 3)), [0, 4, 3])


def test_jit_and_vmap_agree_with_the_eager_calls():
    points = jax.random.normal(jax.random.key(0), (4, 30, 2))
    eager = np.stack([np.asarray(non_dominated_rank(p)) for p in points])
    np.testing.assert_array_equal(jax.vmap(non_dominated_rank)(points), eager)
    np.testing.assert_array_equal(jax.jit(non_dominated_rank)(points[0]), eager[0])
    crowd = np.stack([np.asarray(crowding_distance(p, r)) for p, r in zip(points, eager)])
    np.testing.assert_allclose(jax.vmap(crowding_distance)(points, eager), crowd)
    kept = np.stack([np.asarray(select(p, 10)) for p in points])
    np.testing.assert_array_equal(jax.vmap(lambda p: select(p, 10))(points), kept)


def test_binary_tournament_prefers_the_dominating_point():
    points = np.array([[5.0, 5.0], [0.0, 0.0]])
    winners = np.asarray(binary_tournament(jax.random.key(1), points, 400))
    # a tournament is lost by point 0 only when both draws are point 1 (probability 1/4)
    assert winners.shape == (400,) and 0.65 < (winners == 0).mean() < 0.85
    assert set(np.asarray(binary_tournament(jax.random.key(2), np.ones((3, 2)), 300)).tolist()) == {
        0,
        1,
        2,
    }


def test_binary_tournament_flips_a_coin_when_neither_point_dominates():
    """Wuji's Algorithm 1, not NSGA-II's crowded comparison: point 2 is on the second front (point 0
    dominates it) but not dominated by point 1, so it wins half its draws against point 1."""
    points = np.array([[3.0, 0.0], [0.0, 3.0], [2.0, -1.0]])
    winners = np.asarray(binary_tournament(jax.random.key(3), points, 6000))
    # point 2 wins (2, 2) draws (1/9) and half of those against point 1 (2/9 · 1/2): 2/9 in all;
    # under the crowded comparison it would win only (2, 2), 1/9
    assert abs((winners == 2).mean() - 2 / 9) < 0.02


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: non_dominated_rank(np.zeros(5)), "must be \\(N, M\\)"),
        (lambda: non_dominated_rank(np.zeros((0, 2))), "at least one point"),
        (
            lambda: non_dominated_rank(np.array([[1.0, np.nan], [0.0, 0.0]])),
            "NaN at point\\(s\\) \\[0\\]",
        ),
        (lambda: select(np.zeros((4, 2)), 5), "k must be between 1 and the population size 4"),
        (lambda: select(np.zeros((4, 2)), 0), "k must be between"),
        (lambda: crowding_distance(np.zeros((4, 2)), np.zeros(3)), "ranks must be \\(4,\\)"),
        (
            lambda: binary_tournament(jax.random.key(0), np.zeros((4, 2)), 0),
            "num must be at least 1",
        ),
    ],
)
def test_bad_input_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()
