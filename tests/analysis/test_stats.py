"""RELINE statistics: Holm, Mann-Whitney, Cliff's delta, group comparison, replay reliability, Table
1."""

import numpy as np
import pytest
from scipy import stats

from jgtest.analysis import (
    at_least_n_table,
    cliffs_delta,
    cliffs_magnitude,
    compare_groups,
    holm,
    mann_whitney,
    replay_reliability,
)


def _brute_delta(a, b):
    gt = sum(1 for x in a for y in b if x > y)
    lt = sum(1 for x in a for y in b if x < y)
    return (gt - lt) / (len(a) * len(b))


# ------------------------------------------------------------------ Holm


def test_holm_hand_computed():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> cummax 0.06
    got = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, 0.02], rtol=0, atol=1e-12)


def test_holm_clips_to_one_and_edge_cases():
    np.testing.assert_allclose(holm([0.5, 0.6, 0.001]), [1.0, 1.0, 0.003])
    np.testing.assert_allclose(holm(np.array([0.2])), [0.2])
    assert holm([]).shape == (0,)
    for bad in ([0.1, 1.5], [-0.1], [np.nan], [[0.1, 0.2]]):
        with pytest.raises(ValueError):
            holm(bad)


def test_holm_monotone_and_not_below_raw():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 0.2, size=40)
    adj = holm(p)
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= -1e-15)
    assert np.all(adj >= p - 1e-15)
    assert np.all(adj <= 1.0)
    # Bonferroni bound: Holm is never larger than m * p.
    assert np.all(adj <= np.minimum(1.0, p * p.size) + 1e-15)


# ------------------------------------------------------------------ Mann-Whitney


def test_mann_whitney_matches_scipy():
    rng = np.random.default_rng(1)
    for n, m in ((5, 7), (30, 40), (200, 150)):
        a = rng.normal(0.3, 1.0, n)
        b = rng.integers(-2, 3, m).astype(float)  # ties
        u, p = mann_whitney(list(a), b)
        ref = stats.mannwhitneyu(a, b, alternative="two-sided")
        assert u == pytest.approx(float(ref.statistic))
        assert p == pytest.approx(float(ref.pvalue))
        assert isinstance(u, float) and isinstance(p, float)


def test_mann_whitney_u_is_for_a_and_rejects_bad_input():
    u, p = mann_whitney([10, 11, 12], [1, 2])
    assert u == 6.0  # all 3*2 pairs have a > b
    u, _ = mann_whitney([1, 2], [10, 11, 12])
    assert u == 0.0
    with pytest.raises(ValueError, match="empty"):
        mann_whitney([], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        mann_whitney([1.0, np.nan], [1.0])


# ------------------------------------------------------------------ Cliff's delta


def test_cliffs_delta_matches_brute_force_with_ties():
    rng = np.random.default_rng(2)
    for n, m in ((1, 1), (3, 8), (25, 17), (60, 60)):
        a = rng.integers(0, 6, n)
        b = rng.integers(0, 6, m)
        assert cliffs_delta(a, b) == pytest.approx(_brute_delta(a.tolist(), b.tolist()), abs=1e-12)
        assert cliffs_delta(b, a) == pytest.approx(-cliffs_delta(a, b), abs=1e-12)


def test_cliffs_delta_extremes():
    assert cliffs_delta([5, 6, 7], [1, 2]) == 1.0
    assert cliffs_delta([1, 2], [5, 6, 7]) == -1.0
    assert cliffs_delta([3, 3], [3, 3, 3]) == 0.0
    assert cliffs_delta([1, 2, 3], [2]) == 0.0
    with pytest.raises(ValueError):
        cliffs_delta([], [1])


@pytest.mark.parametrize(
    "d, expected",
    [
        (0.0, "negligible"),
        (0.0999, "negligible"),
        (-0.0999, "negligible"),
        (0.10, "small"),
        (-0.10, "small"),
        (0.3299, "small"),
        (0.33, "medium"),
        (-0.4739, "medium"),
        (0.474, "large"),
        (-0.474, "large"),
        (1.0, "large"),
    ],
)
def test_cliffs_magnitude_boundaries(d, expected):
    assert cliffs_magnitude(d) == expected


def test_cliffs_magnitude_rejects_out_of_range():
    for bad in (1.01, -2.0, np.nan):
        with pytest.raises(ValueError):
            cliffs_magnitude(bad)


# ------------------------------------------------------------------ compare_groups


def test_compare_groups_pairs_and_holm():
    rng = np.random.default_rng(3)
    groups = {
        "Regular FPS": rng.normal(12.0, 1.0, 80),
        "RELINE": rng.normal(24.0, 4.0, 60),
        "rl-baseline": rng.normal(21.0, 3.0, 30),
        "random": list(rng.normal(19.0, 2.0, 50)),
    }
    rows = compare_groups(groups)
    names = list(groups)
    expected_pairs = [(names[i], names[j]) for i in range(4) for j in range(i + 1, 4)]
    assert [(r["a"], r["b"]) for r in rows] == expected_pairs
    raw = [r["p"] for r in rows]
    np.testing.assert_allclose([r["p_holm"] for r in rows], holm(raw))
    for r in rows:
        a, b = np.asarray(groups[r["a"]]), np.asarray(groups[r["b"]])
        ref = stats.mannwhitneyu(a, b, alternative="two-sided")
        assert r["U"] == pytest.approx(float(ref.statistic))
        assert r["p"] == pytest.approx(float(ref.pvalue))
        assert r["n_a"] == a.size and r["n_b"] == b.size
        assert r["cliffs_delta"] == pytest.approx(_brute_delta(a.tolist(), b.tolist()))
        assert r["magnitude"] == cliffs_magnitude(r["cliffs_delta"])
        assert r["median_a"] == pytest.approx(np.median(a))
        assert r["median_b"] == pytest.approx(np.median(b))
    first = rows[0]  # Regular FPS vs RELINE: almost completely separated
    assert (
        first["cliffs_delta"] < -0.99 and first["magnitude"] == "large" and first["p_holm"] < 1e-10
    )


def test_compare_groups_skips_empty_and_errors():
    rows = compare_groups({"a": [1, 2, 3], "none": [], "b": [4, 5, 6]})
    assert [(r["a"], r["b"]) for r in rows] == [("a", "b")]
    assert rows[0]["p_holm"] == pytest.approx(rows[0]["p"])
    with pytest.raises(ValueError, match="'none'"):
        compare_groups({"a": [1, 2, 3], "none": []})
    with pytest.raises(ValueError, match="at least 2"):
        compare_groups({"a": [1, 2, 3]})
    with pytest.raises(ValueError):
        compare_groups({})


# ------------------------------------------------------------------ replay reliability


def test_replay_reliability_trend_plus_noise_is_significant():
    rng = np.random.default_rng(4)
    t = np.arange(200)
    trend = 15.0 + 5.0 * np.sin(t / 9.0) + 0.02 * t
    x = trend[None, :] + rng.normal(0.0, 0.4, size=(30, t.size))
    out = replay_reliability(x)
    assert out["replays"] == 30 and out["steps"] == 200 and out["pairs"] == 435
    assert out["all_significant"] is True
    assert out["p_holm_max"] < 0.05
    assert out["rho_min"] > 0.8
    assert out["rho_min"] <= out["rho_median"] <= out["rho_max"] <= 1.0


def test_replay_reliability_pure_noise_is_not_all_significant():
    rng = np.random.default_rng(5)
    out = replay_reliability(rng.normal(size=(20, 50)))
    assert out["all_significant"] is False
    assert out["p_holm_max"] == pytest.approx(1.0)
    assert abs(out["rho_median"]) < 0.2


def test_replay_reliability_two_replays_equals_scipy():
    rng = np.random.default_rng(6)
    a = rng.normal(size=40)
    b = a + rng.normal(0, 0.7, size=40)
    ref = stats.spearmanr(a, b)
    out = replay_reliability([a.tolist(), b.tolist()])
    assert out["pairs"] == 1
    assert out["rho_min"] == pytest.approx(float(ref.statistic))
    assert out["rho_max"] == pytest.approx(float(ref.statistic))
    assert out["p_holm_max"] == pytest.approx(float(ref.pvalue))  # one test: Holm = raw


def test_replay_reliability_one_pair_of_many_equals_scipy():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 25))
    x[1] = x[0] + rng.normal(0, 0.1, 25)  # the highest-rho pair
    ref = stats.spearmanr(x[0], x[1])
    out = replay_reliability(x)
    assert out["rho_max"] == pytest.approx(float(ref.statistic))


def test_replay_reliability_errors():
    with pytest.raises(ValueError, match="2 replays"):
        replay_reliability(np.ones((1, 10)))
    with pytest.raises(ValueError, match="3 steps"):
        replay_reliability(np.arange(4.0).reshape(2, 2))
    with pytest.raises(ValueError, match="2-D"):
        replay_reliability(np.arange(10.0))
    with pytest.raises(ValueError, match="constant"):
        replay_reliability([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    with pytest.raises(ValueError, match="NaN"):
        replay_reliability([[1.0, 2.0, np.nan], [1.0, 2.0, 3.0]])


# ------------------------------------------------------------------ Table 1


def test_at_least_n_table_matches_brute_force():
    rng = np.random.default_rng(8)
    k = 4
    bugs = rng.integers(0, k + 1, size=(10, 300))
    table = at_least_n_table(bugs, k)
    assert list(table) == [1, 2, 3, 4]
    for n in range(1, k + 1):
        counts = [sum(1 for v in row if v >= n) for row in bugs.tolist()]
        row = table[n]
        assert row["counts"] == counts
        assert row["mean"] == pytest.approx(np.mean(counts))
        assert row["median"] == pytest.approx(np.median(counts))
        assert row["sd"] == pytest.approx(np.std(counts, ddof=1))
    # "at least n" is non-increasing in n.
    means = [table[n]["mean"] for n in range(1, k + 1)]
    assert means == sorted(means, reverse=True)


def test_at_least_n_table_small_hand_example_and_single_model():
    table = at_least_n_table([[0, 1, 2, 2], [1, 1, 0, 0]], 2)
    assert table[1]["counts"] == [3, 2] and table[2]["counts"] == [2, 0]
    assert table[1]["mean"] == 2.5 and table[2]["median"] == 1.0
    assert table[2]["sd"] == pytest.approx(np.sqrt(2.0))
    single = at_least_n_table([[2, 0, 1]], 2)
    assert single[1] == {"counts": [2], "mean": 2.0, "median": 2.0, "sd": 0.0}


def test_at_least_n_table_errors():
    with pytest.raises(ValueError, match="more bugs than the game has"):
        at_least_n_table([[0, 3]], 2)
    with pytest.raises(ValueError, match="negative"):
        at_least_n_table([[0, -1]], 2)
    with pytest.raises(ValueError, match="num_bugs"):
        at_least_n_table([[0, 1]], 0)
    with pytest.raises(ValueError, match="2-D"):
        at_least_n_table([0, 1], 2)
    with pytest.raises(ValueError, match="empty"):
        at_least_n_table(np.zeros((0, 5), dtype=int), 2)
    with pytest.raises(ValueError, match="integers"):
        at_least_n_table([[0.5, 1.0]], 2)


def test_compare_groups_against_one_group_tests_it_against_each_other():
    """Wuji's claim (§V-B), one strategy ahead of each other: the pairs ``(against, other)`` only,
    Holm over those, the statistics as in the all-pairs table."""
    groups = {
        "random": [4, 5, 5, 6],
        "drl": [7, 8, 6, 9],
        "wuji": [8, 9, 9, 7],
        "ea_s+drl": [8, 8, 9, 7],
    }
    rows = compare_groups(groups, against="wuji")
    assert [(r["a"], r["b"]) for r in rows] == [
        ("wuji", "random"),
        ("wuji", "drl"),
        ("wuji", "ea_s+drl"),
    ]
    np.testing.assert_allclose([r["p_holm"] for r in rows], holm([r["p"] for r in rows]))
    everything = {(r["a"], r["b"]): r for r in compare_groups({"wuji": groups["wuji"], **groups})}
    for r in rows:
        assert r["cliffs_delta"] == pytest.approx(
            everything[("wuji", r["b"])]["cliffs_delta"]
        ) and r["p"] == pytest.approx(everything[("wuji", r["b"])]["p"])
    # every wuji seed above every random one
    assert rows[0]["cliffs_delta"] == 1.0 and rows[0]["magnitude"] == "large"
    with pytest.raises(ValueError, match="against='ea_m' is not a non-empty group"):
        compare_groups(groups, against="ea_m")
