"""Wuji: evolutionary multi-objective search plus A2C for game testing (Zheng et al., ASE 2019).

Policies evolve for two objectives (§IV-B): ES(π) = (1/m) Σ_i size(‖G(a_i)‖_S), distinct states
(Def. 3), and RS(π) = (1/m) Σ_i Σ_t γ^t r_t (Def. 1). A generation (Algorithms 1–4) breeds
children, fine-tunes them with A2C and selects with NSGA-II; every game played goes through the
oracles.

* chosen: a policy is scored once, on m = 3 runs, because the authors' code does;
* chosen: budgets in env steps, because the paper gave equal hours of game servers (§V-A4);
* chosen: ``drl`` is one learner, ``drl_30`` thirty, because the paper does not say which it ran.

Usage (one run per strategy and seed: :mod:`~jgtest.methods.wuji.device`,
:mod:`~jgtest.methods.wuji.host`)::

    from jgtest.methods import wuji

    config = wuji.WujiConfig(game="CombatArena-v0", generations=None, budget_steps=1_500_000)
    summary = wuji.run(config, "runs/wuji", strategies=wuji.PAPER_STRATEGIES, seeds=10)
"""

from jgtest.methods.wuji.campaign import run
from jgtest.methods.wuji.config import (
    PAPER_STRATEGIES,
    PARTS,
    PRESETS,
    STRATEGIES,
    WujiConfig,
    preset,
)
from jgtest.methods.wuji.placements import check_game_kwargs, run_params

__all__ = [
    "PAPER_STRATEGIES",
    "PARTS",
    "PRESETS",
    "STRATEGIES",
    "WujiConfig",
    "check_game_kwargs",
    "preset",
    "run",
    "run_params",
]
