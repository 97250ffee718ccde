"""PPGTA's exploration metrics: pathway coverage over episodes, tests over episodes, outcomes."""

import numpy as np
import pytest

from jgtest.analysis import ooi_outcomes, ooi_tested_curve, pathway_coverage_curve


def test_pathway_coverage_accumulates_over_episodes():
    path = np.zeros((4, 4), bool)
    path[1, :] = True  # 4 pathway cells
    visited = np.zeros((3, 4, 4), bool)
    visited[0, 1, 0] = visited[0, 0, 0] = True  # one pathway cell (and grass)
    visited[1, 1, 0] = True  # the same one again
    visited[2, 1, 2:] = True  # two more
    np.testing.assert_allclose(pathway_coverage_curve(visited, path), [0.25, 0.25, 0.75])
    with pytest.raises(ValueError, match="visited must be"):
        pathway_coverage_curve(visited[0], path)
    with pytest.raises(ValueError, match="no pathway"):
        pathway_coverage_curve(visited, np.zeros((4, 4), bool))


def test_tests_over_episodes_and_outcomes():
    np.testing.assert_array_equal(ooi_tested_curve(np.array([-1, 0, 2, 2, -1]), 4), [1, 1, 3, 3])
    with pytest.raises(ValueError, match="beyond"):
        ooi_tested_curve(np.array([5]), 4)
    out = ooi_outcomes(
        np.array([1, 0, 0, 0], bool), np.array([1, 1, 0, 0], bool), np.array([1, 1, 1, 0], bool)
    )
    assert out["outcome"].tolist() == ["success", "failed", "missed", "missed"]
    assert (
        out["success"],
        out["failed"],
        out["missed"],
        out["missed_unreachable"],
        out["unreachable"],
    ) == (1, 1, 2, 1, 1)
