"""Statistical analysis of test-campaign results: RELINE's (§3.1.4, §4.1.3) in
:mod:`jgtest.analysis.stats`, PPGTA's exploration metrics (§VI-A) in
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
