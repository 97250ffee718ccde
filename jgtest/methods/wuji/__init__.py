"""Wuji: evolutionary multi-objective search plus A2C for game testing (Zheng et al., ASE 2019).

A population of policies evolves for two objectives (§IV-B): the
**exploration score** ES(π) = (1/m) Σ_i size(‖G(a_i)‖_S), the distinct states
of each of ``m`` runs averaged (states: the game's state features, by default its observation,
each cut into ``num_buckets`` equal intervals, Def. 3 and §V-C;
:class:`jgtest.coverage.ObservationStates`),
and the **winning score** RS(π) = (1/m) Σ_i Σ_t γ^t r_t, the discounted return
(Def. 1) averaged over the same runs. A generation (Algorithms 1–3):

1. children by Pareto-dominance binary tournaments, single-point crossover
   and Gaussian mutation of the weights (:func:`jgtest.evo.breed`), a network's
   layers in the order they compute, as PyTorch lists them;
2. with DRL, every child fine-tuned by A2C at once (vmap), each until it stops
   improving or its rounds run out (:mod:`jgtest.agents.wuji_a2c`);
3. NSGA-II over parents ∪ children ∪ trained children keeps the population
   size (:func:`jgtest.evo.select`).

Every game played — the ``m`` evaluation runs of every policy, every A2C
rollout and the random strategy's games — goes through the games' oracles (``telemetry.bugs_fired``), and the
first firing of each bug is written as a :class:`jgtest.report.BugRecord`
with its action trace the moment the host sees it (after each device call);
bug and gold positions are re-drawn per run (§V-A) and written with the
record, so ``jgtest replay`` reproduces it on the bare game. A run's **state
coverage** (Table V) counts the same states over every step it played, evaluation
runs, A2C rollouts and random games alike (their 64-bit hashes merged on the host,
:class:`jgtest.coverage.DistinctStates`); ``cells_covered`` counts the game's
coarser coverage cells (``telemetry.cell``, the bird's-eye maps' cells). A campaign may play
a variant of its game (:attr:`WujiConfig.game_kwargs`, e.g. a stronger boss);
the records carry those options too.

The paper's six strategies (§V-A3), :data:`PAPER_STRATEGIES`: ``random`` (uniform
actions, in slot games whose episodes go on from round to round, as a learner's do, so no
step is spent on a finished episode; a generation is as many rounds as a DRL generation
trains at most), ``ea_s`` (evolution on the winning score alone), ``ea_m`` (both
objectives), ``drl`` (A2C alone, "the DRL algorithm improves the searching speed in a particular
direction", §V-B: **one** learner, trained round after round, whose rollouts play as many games at
once as a population's learners do together, so that its rounds play the same env steps),
``ea_s+drl`` and ``wuji`` (``ea_m`` + DRL). :data:`STRATEGIES` adds ``drl_30``: DRL as
``population`` learners side by side, each trained as ``wuji``'s children are, none bred or
selected; the paper does not say which form it ran.

Budgets: generations, wall-clock seconds or env steps (:class:`WujiConfig`); the paper
gave each strategy equal hours of its game servers (§V-A4), where each step cost the game, so
equal env steps are its regime on device. Every game played counts (evaluations, A2C rollouts and
random games), a run's results are cut at the budget (a generation that crosses it counts its
steps up to it; :class:`~jgtest.methods.wuji.device._Bookkeeper`), and each bug's record and the
summary carry the env step at which it was first found (``env_step``, ``first_found_step``).

Evaluation: every strategy that evolves scores each new policy once, on ``m`` runs
(``runs_per_eval``, 3), and a parent keeps the scores of its own evaluation; nothing is
re-evaluated. This is the authors' rule: their code (``NeteaseFuxiRL/wuji``,
``wuji/ea/optimizer/__init__.py``) selects over the population and its offspring on the scores
already stored, evaluating only the offspring, each on ``[sample] eval = 3`` runs
(``config.ini``). Re-evaluating the survivors would also spend ``m`` runs a parent a generation on
policies already scored.

Numbers: population and offspring 30 (§V-A4). ``m``, the buckets, the rates
and σ are lost or absent in the paper (see :mod:`jgtest.evo.operators` and
:class:`WujiConfig` for our choices).

The package: :mod:`~jgtest.methods.wuji.config` (the strategies, :class:`WujiConfig`),
:mod:`~jgtest.methods.wuji.search` (the jitted pieces), :mod:`~jgtest.methods.wuji.placements` (each
run's bugs), :mod:`~jgtest.methods.wuji.device` (one run, :func:`run`), :mod:`~jgtest.methods.wuji.host` (one run on a bridged game),
:mod:`~jgtest.methods.wuji.bookkeeping` (what both kinds of run keep),
:mod:`~jgtest.methods.wuji.campaign` (strategies × seeds, :func:`campaign`) and
:mod:`~jgtest.methods.wuji.tables` (the console table).
"""

from jgtest.methods.wuji.campaign import campaign
from jgtest.methods.wuji.config import PAPER_STRATEGIES, STRATEGIES, WujiConfig
from jgtest.methods.wuji.device import run
from jgtest.methods.wuji.placements import check_game_kwargs, run_params

__all__ = ["PAPER_STRATEGIES", "STRATEGIES", "WujiConfig", "campaign", "check_game_kwargs", "run", "run_params"]
