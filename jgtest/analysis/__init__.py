"""Statistical analysis of test-campaign results.

RELINE (Tufano et al.) §3.1.4 Table 1 and §4.1.3 "Data Analysis" / "Reliability of Time
Measurements": episodes with at least ``n`` bugs found, Mann-Whitney tests with Holm's
correction and Cliff's delta, and the pairwise Spearman reliability check of replayed
render times. Plots live in :mod:`jgtest.report.plots`. PPGTA's exploration and
object-testing metrics (pathway coverage, objects tested over episodes, outcomes) are in
:mod:`jgtest.analysis.exploration`.
"""

from jgtest.analysis.exploration import ooi_outcomes, ooi_tested_curve, pathway_coverage_curve
from jgtest.analysis.stats import (
    at_least_n_table,
    cliffs_delta,
    cliffs_magnitude,
    compare_groups,
    holm,
    mann_whitney,
    replay_reliability,
)

__all__ = [
    "at_least_n_table",
    "cliffs_delta",
    "cliffs_magnitude",
    "compare_groups",
    "holm",
    "mann_whitney",
    "ooi_outcomes",
    "pathway_coverage_curve",
    "replay_reliability",
    "ooi_tested_curve",
]
