"""Statistical analysis of test-campaign results.

RELINE (Tufano et al.) §3.1.4 Table 1 and §4.1.3 "Data Analysis" / "Reliability of Time
Measurements": episodes with at least ``n`` bugs found, Mann-Whitney tests with Holm's
correction and Cliff's delta, and the pairwise Spearman reliability check of replayed
render times. Plots live in :mod:`jgtest.report.plots`.
"""

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
    "replay_reliability",
]
