"""Evolutionary search for Wuji: Pareto tools (NSGA-II) and variation operators, jitted."""

from jgtest.evo.operators import (
    AUTHORS_VARIATION,
    OURS_VARIATION,
    VariationParams,
    breed,
    gaussian_mutation,
    ravel_population,
    single_point_crossover,
)
from jgtest.evo.pareto import (
    binary_tournament,
    crowding_distance,
    dominates,
    non_dominated_rank,
    select,
)

__all__ = [
    "AUTHORS_VARIATION",
    "OURS_VARIATION",
    "VariationParams",
    "binary_tournament",
    "breed",
    "crowding_distance",
    "dominates",
    "gaussian_mutation",
    "non_dominated_rank",
    "ravel_population",
    "select",
    "single_point_crossover",
]
