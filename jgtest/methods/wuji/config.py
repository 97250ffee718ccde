"""Wuji's settings: the paper's six strategies (§V-A3) and :class:`WujiConfig` (Zheng et al., ASE
2019)."""

from __future__ import annotations

import dataclasses
from typing import Any

from jgtest.agents.wuji_a2c import (
    AUTHORS_A2C,
    AUTHORS_A2C_HPARAMS,
    OURS_A2C,
    OURS_A2C_HPARAMS,
    WujiA2CConfig,
    WujiA2CHyperparams,
)
from jgtest.envs.registration import hashable
from jgtest.evo import AUTHORS_VARIATION, OURS_VARIATION, VariationParams
from jgtest.methods.wuji.strategies import REGISTRY
from jgtest.seeds import check_seed

#: The paper's strategies (§V-A3), in its order.
PAPER_STRATEGIES = ("random", "ea_s", "ea_m", "drl", "ea_s+drl", "wuji")
#: Every strategy: the paper's six and ``drl_30``, DRL as 30 learners. The paper does not say how it
#: ran DRL; ``drl`` trains one learner on a population's games (one policy), ``drl_30`` trains
#: ``population`` learners side by side (a population's policies, none bred or selected).
STRATEGIES = PAPER_STRATEGIES + ("drl_30",)
#: How a policy plays its evaluation runs: ``"greedy"``, the argmax action (the authors':
#: ``NeteaseFuxiRL/wuji`` ``wuji/rl/pth/dqn/agent.py:33-34``, and their A2C's at commit 6661943,
#: ``ac/agent.py:28``), or ``"sampled"`` from the training policy with its action floor.
EVALUATIONS = ("greedy", "sampled")
#: The candidates NSGA-II selects from in a training strategy's generation: ``"authors"``, parents
#: and trained children, P∪Q (``wuji/ea/runner/__init__.py:171-178`` returns only trained
#: children, ``wuji/ea/optimizer/__init__.py:231-233`` selects from them and the parents; the
#: untrained children are never evaluated), or ``"paper"``, P∪P′∪Q (Algorithm 3's text).
SELECTION_POOLS = ("authors", "paper")


@dataclasses.dataclass(frozen=True)
class WujiConfig:
    """One Wuji run's settings (one strategy, one seed); :func:`jgtest.methods.wuji.run` runs
    them for several strategies and seeds.

    Attributes:
      game: ``"BlockMaze-v0"`` or ``"CombatArena-v0"`` (any game with ``randomize``).
      game_kwargs: options for :func:`jgtest.make` as ``(name, value)`` pairs: constructor
        options (``rows``, ``late_phases``, ...) and params the runs keep (``boss_max_hp``,
        ...); a param that ``randomize`` re-draws per run is refused (:func:`check_game_kwargs`).
      strategy: one of :data:`STRATEGIES`, or a strategy registered in
        :data:`jgtest.methods.wuji.strategies.REGISTRY`.
      population: population and offspring size (the paper's 30; at least 2 where it evolves);
        ``drl`` trains one learner on ``population`` times ``a2c.num_envs`` games at once
        (:meth:`jgtest.methods.wuji.strategies.Strategy.members`): with 1, the authors' learner
        in one game.
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
      a2c: the A2C learner's shape (default the authors',
        :data:`jgtest.agents.wuji_a2c.AUTHORS_A2C`; ours: :data:`jgtest.agents.wuji_a2c.OURS_A2C`).
      a2c_hparams: its numbers (default the authors',
        :data:`jgtest.agents.wuji_a2c.AUTHORS_A2C_HPARAMS`; ours: ``OURS_A2C_HPARAMS``).
      variation: the operators: where the cut falls, crossover and mutation rates, σ (default the
        authors', :data:`jgtest.evo.AUTHORS_VARIATION`; ours: :data:`jgtest.evo.OURS_VARIATION`).
      evaluation: one of :data:`EVALUATIONS` (default the authors', greedy).
      selection_pool: one of :data:`SELECTION_POOLS` (default the authors', P∪Q).
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
    a2c: WujiA2CConfig = AUTHORS_A2C
    a2c_hparams: WujiA2CHyperparams = AUTHORS_A2C_HPARAMS
    variation: VariationParams = AUTHORS_VARIATION
    evaluation: str = "greedy"
    selection_pool: str = "authors"

    def __post_init__(self):
        check_seed(self.seed)
        object.__setattr__(
            self,
            "game_kwargs",
            tuple(sorted((str(k), hashable(v)) for k, v in dict(self.game_kwargs).items())),
        )
        for name, allowed in (
            ("strategy", tuple(REGISTRY)),
            ("evaluation", EVALUATIONS),
            ("selection_pool", SELECTION_POOLS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.generations is None and self.budget_s is None and self.budget_steps is None:
            raise ValueError("a campaign needs generations, budget_s or budget_steps")
        for name in ("generations", "budget_steps", "runs_per_eval", "num_buckets"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.population < (2 if REGISTRY[self.strategy].evolves else 1):
            raise ValueError(
                f"population must be at least 2 for {self.strategy} (crossover needs two "
                f"parents), got {self.population}"
            )
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"budget_s must be positive, got {self.budget_s}")


#: Named settings of a run's operators, selection pool, evaluation and A2C (:func:`preset`).
PRESETS = ("authors", "ours")
#: Each preset's settings, by the part of the method they set (:data:`PARTS`): ``"authors"``, the
#: authors' code (the defaults), and ``"ours"``, where the paper is silent (a cut anywhere at 0.9
#: with 10% of the weights mutated, P∪P′∪Q as the paper's text has it, sampled evaluation, n-step
#: A2C in 8 games with an early stop).
PRESET_PARTS: dict[str, dict[str, dict[str, Any]]] = {
    "authors": {
        "evaluation": {"evaluation": "greedy"},
        "operators": {"variation": AUTHORS_VARIATION},
        "selection_pool": {"selection_pool": "authors"},
        "a2c": {"a2c": AUTHORS_A2C, "a2c_hparams": AUTHORS_A2C_HPARAMS},
    },
    "ours": {
        "evaluation": {"evaluation": "sampled"},
        "operators": {"variation": OURS_VARIATION},
        "selection_pool": {"selection_pool": "paper"},
        "a2c": {"a2c": OURS_A2C, "a2c_hparams": OURS_A2C_HPARAMS},
    },
}
#: The parts of the method a preset sets, each one or more :class:`WujiConfig` fields.
PARTS = tuple(PRESET_PARTS["authors"])


def preset(config: WujiConfig, name: str, parts: tuple[str, ...] = PARTS) -> WujiConfig:
    """``config`` with preset ``name``'s settings of ``parts`` (default all of :data:`PARTS`):
    ``preset(config, "ours", ("a2c",))`` is the authors' method with our A2C, one of the
    ablation's variants."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {name!r}")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"parts must be among {PARTS}, got {unknown}")
    fields = {k: v for part in parts for k, v in PRESET_PARTS[name][part].items()}
    return dataclasses.replace(config, **fields)
