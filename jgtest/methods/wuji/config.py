"""Wuji's settings: the paper's six strategies (§V-A3) and :class:`WujiConfig` (Zheng et al., ASE
2019)."""

from __future__ import annotations

import dataclasses
from typing import Any

from jgtest.agents.wuji_a2c import WujiA2CConfig
from jgtest.envs.registration import hashable
from jgtest.evo import VariationParams
from jgtest.seeds import check_seed

#: The paper's strategies (§V-A3), in its order.
PAPER_STRATEGIES = ("random", "ea_s", "ea_m", "drl", "ea_s+drl", "wuji")
#: Every strategy: the paper's six and ``drl_30``, DRL as 30 learners. The paper does not say how it
#: ran DRL; ``drl`` trains one learner on a population's games (one policy), ``drl_30`` trains
#: ``population`` learners side by side (a population's policies, none bred or selected).
STRATEGIES = PAPER_STRATEGIES + ("drl_30",)
EVOLVES = {"ea_s", "ea_m", "ea_s+drl", "wuji"}
TRAINS = {"drl", "drl_30", "ea_s+drl", "wuji"}
MULTI = {"ea_m", "wuji"}


@dataclasses.dataclass(frozen=True)
class WujiConfig:
    """One Wuji run's settings (one strategy, one seed); :func:`jgtest.methods.wuji.run` runs
    them for several strategies and seeds.

    Attributes:
      game: ``"BlockMaze-v0"`` or ``"CombatArena-v0"`` (any game with ``randomize``).
      game_kwargs: options for :func:`jgtest.make` as ``(name, value)`` pairs: constructor
        options (``rows``, ``late_phases``, ...) and params the runs keep (``boss_max_hp``,
        ...); a param that ``randomize`` re-draws per run is refused (:func:`check_game_kwargs`).
      strategy: one of :data:`STRATEGIES`.
      population: population and offspring size (the paper's 30); ``drl`` trains one learner on
        ``population`` times ``a2c.num_envs`` games at once
        (:func:`jgtest.methods.wuji.bookkeeping.members`).
      generations: generations to run (a budget may stop it sooner); ``None``: until
        a budget runs out.
      budget_s: wall-clock budget in seconds, checked between device calls.
      budget_steps: env-step budget: game steps played (every evaluation run, A2C rollout and
        random game; ``env_steps``), checked between device calls; a run's results are cut at
        it (of the call that crosses it, only the rows within it count). Equal step budgets
        compare strategies as the paper's did: its budgets were hours of a game server's time
        (§V-A4), each step costing the game, not the policy; on device the learner's compute sets
        the pace instead, and an equal wall-clock budget gives random many more steps than the
        learners. Machine-independent, unlike ``budget_s``.
      runs_per_eval: ``m``, runs behind each policy's ES and RS (paper: not given; 3, the authors'
        code's: ``NeteaseFuxiRL/wuji`` ``config.ini`` ``[sample] eval = 3``).
      num_buckets: intervals per state feature for ES (paper: lost; 10).
      seed: the run's seed (its bug and gold placement, its keys).
      a2c: the A2C learner's settings.
      variation: crossover/mutation rates and σ.
    """

    game: str = "BlockMaze-v0"
    game_kwargs: tuple[tuple[str, Any], ...] = ()
    strategy: str = "wuji"
    population: int = 30
    generations: int | None = 10
    budget_s: float | None = None
    budget_steps: int | None = None
    runs_per_eval: int = 3
    num_buckets: int = 10
    seed: int = 0
    a2c: WujiA2CConfig = WujiA2CConfig()
    variation: VariationParams = VariationParams()

    def __post_init__(self):
        check_seed(self.seed)
        object.__setattr__(
            self,
            "game_kwargs",
            tuple(sorted((str(k), hashable(v)) for k, v in dict(self.game_kwargs).items())),
        )
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.generations is None and self.budget_s is None and self.budget_steps is None:
            raise ValueError("a campaign needs generations, budget_s or budget_steps")
        for name in ("generations", "budget_steps", "runs_per_eval", "num_buckets"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.population < 2:
            raise ValueError(
                "population must be at least 2 (crossover needs two parents), got "
                f"{self.population}"
            )
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"budget_s must be positive, got {self.budget_s}")
