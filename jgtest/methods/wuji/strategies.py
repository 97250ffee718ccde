"""Wuji's strategies (§V-A3) as ``ask / tell`` over a typed state, evosax's shape, and the one
generation loop (:func:`run_generations`) that serves the device and the host runs.

A strategy asks for what a generation plays (:class:`Ask`: policies to evaluate and/or to train
first, or the random games), a :class:`Player` plays it (:func:`play`: the device's jitted calls or
a bridged game's steps, every step through the run's bug records and budget), and the strategy is
told the scores (:class:`Played`). A new strategy is a :class:`Strategy` and a line in
:data:`REGISTRY`::

    class HillClimb(Strategy):
        def ask(self, state, player, config):
            key, k = jax.random.split(state.key)
            return Ask(player.breed(k, state.population, state.objectives)), state.replace(key=key)

        def tell(self, state, ask, played, player, config):
            candidates = (state.population, ask.policies)
            scores = (state.objectives, played.scores)
            population, objectives, _ = player.select(candidates, scores, True)
            return state.replace(population=population, objectives=objectives)

    REGISTRY["hill_climb"] = HillClimb()
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any, Protocol

import jax
import jax.numpy as jnp
from flax import struct

#: Where a member of the population came from in the last selection (:attr:`SearchState.origin`):
#: the first population, a parent kept, an untrained child (P′) or a trained child (Q).
ORIGINS = ("initial", "parent", "child", "trained")


@struct.dataclass
class SearchState:
    """What a strategy carries from one generation to the next.

    Attributes:
      population: the stacked policies' variables, or the ``random`` strategy's slot games.
      objectives: ``float32[P, 2]``, each member's (ES, RS) as last evaluated.
      key: the strategy's PRNG key.
      origin: ``int32[P]``, each member's :data:`ORIGINS` index.
    """

    population: Any
    objectives: jax.Array
    key: jax.Array
    origin: jax.Array

    @classmethod
    def create(cls, population, objectives: jax.Array, key: jax.Array) -> SearchState:
        """A first population (every member ``"initial"``)."""
        return cls(population, objectives, key, jnp.zeros(objectives.shape[0], jnp.int32))


@dataclasses.dataclass(frozen=True)
class Ask:
    """What a generation plays: ``policies`` evaluated (``evaluate``) and trained, then the trained
    ones evaluated (``train``); or, with ``random``, ``policies`` are slot games played with uniform
    actions."""

    policies: Any
    evaluate: bool = True
    train: bool = False
    random: bool = False


@dataclasses.dataclass(frozen=True)
class Played:
    """What :func:`play` returns for an :class:`Ask`: the asked policies' ``scores`` (``None``
    when not evaluated), the ``trained`` policies and their ``trained_scores`` (``None`` when not
    trained, or when the budget ended first), or the random games after their play (``games``)."""

    scores: jax.Array | None = None
    trained: Any = None
    trained_scores: jax.Array | None = None
    games: Any = None


class Player(Protocol):
    """Plays a run's games: a device run's jitted calls or a bridged game's engines. Every step
    goes through the run's bug records and budget."""

    def evaluate(self, policies) -> jax.Array: ...  # (ES, RS) per policy, float32[P, 2]

    def fine_tune(self, policies) -> Any: ...  # A2C until each stops or the budget ends

    def play_random(self, games) -> Any: ...  # a generation of uniform play

    def breed(self, key, population, fitness) -> Any: ...  # Algorithm 1

    # NSGA-II: the survivors, their scores and their indices in the candidates' union
    def select(self, candidates, scores, multi: bool) -> tuple: ...

    def spent(self) -> bool: ...  # the budget is spent


class Strategy:
    """A strategy's ``ask`` and ``tell``; the flags say what else a run does for it. ``config`` is
    the run's :class:`jgtest.methods.wuji.WujiConfig`."""

    #: a generation plays uniform random games, not policies
    random = False
    #: the population is scored before the first generation
    evaluates_initial = True
    #: NSGA-II ranks its scores (which must not be NaN)
    evolves = False
    #: with ``multi``: NSGA-II ranks both objectives, not RS alone
    multi = False
    #: a generation trains policies with A2C
    trains = False

    def members(self, config) -> int:
        """The policies (or groups of random games) the population holds."""
        return config.population

    def learner_games(self, config) -> int:
        """Games per A2C learner, as a multiple of ``config.a2c.num_envs``."""
        return 1

    def ask(self, state: SearchState, player: Player, config):
        """``(Ask, state)``: what this generation plays."""
        raise NotImplementedError

    def tell(self, state: SearchState, ask: Ask, played: Played, player: Player, config):
        """The state after the generation played ``ask``."""
        raise NotImplementedError


class RandomPlay(Strategy):
    """``random``: uniform actions on the population's slot games."""

    random = True
    evaluates_initial = False

    def ask(self, state, player, config):
        return Ask(state.population, evaluate=False, random=True), state

    def tell(self, state, ask, played, player, config):
        return state.replace(population=played.games)


@dataclasses.dataclass(frozen=True)
class Training(Strategy):
    """``drl`` (one learner on a population's games) and ``drl_30`` (a population of learners):
    A2C on the population, which the trained policies replace."""

    one_learner: bool = False
    trains = True

    def members(self, config):
        return 1 if self.one_learner else config.population

    def learner_games(self, config):
        return config.population if self.one_learner else 1

    def ask(self, state, player, config):
        return Ask(state.population, evaluate=False, train=True), state

    def tell(self, state, ask, played, player, config):
        if played.trained_scores is None:  # the budget ended in training
            return state
        return state.replace(
            population=played.trained,
            objectives=played.trained_scores,
            origin=jnp.full_like(state.origin, ORIGINS.index("trained")),
        )


@dataclasses.dataclass(frozen=True)
class Evolution(Strategy):
    """``ea_s``, ``ea_m``, ``ea_s+drl`` and ``wuji`` (Algorithms 1–4): children bred on one
    objective (RS) or both, trained with A2C when ``train``, and NSGA-II over the selection pool:
    P∪P′ without training; with it P∪Q (the authors') or P∪P′∪Q (the paper's,
    ``config.selection_pool``)."""

    multi: bool = True
    train: bool = False
    evolves = True

    @property
    def trains(self) -> bool:
        return self.train

    def fitness(self, objectives):
        return objectives if self.multi else objectives[:, 1:]

    def ask(self, state, player, config):
        key, k_breed = jax.random.split(state.key)
        children = player.breed(k_breed, state.population, self.fitness(state.objectives))
        evaluate = not self.train or config.selection_pool == "paper"
        return Ask(children, evaluate=evaluate, train=self.train), state.replace(key=key)

    def tell(self, state, ask, played, player, config):
        candidates, scores, origins = [state.population], [state.objectives], ["parent"]
        for policies, played_scores, origin in (
            (ask.policies, played.scores, "child"),
            (played.trained, played.trained_scores, "trained"),
        ):
            if played_scores is not None:
                candidates.append(policies)
                scores.append(played_scores)
                origins.append(origin)
        if len(candidates) == 1 or (self.train and played.trained_scores is None):
            return state  # the budget ended before the children were all played
        population, objectives, kept = player.select(tuple(candidates), tuple(scores), self.multi)
        group = jnp.asarray([ORIGINS.index(o) for o in origins])
        members = state.objectives.shape[0]
        return state.replace(
            population=population, objectives=objectives, origin=group[kept // members]
        )


#: Every strategy by name: the paper's six (§V-A3) and ``drl_30``.
REGISTRY: dict[str, Strategy] = {
    "random": RandomPlay(),
    "ea_s": Evolution(multi=False),
    "ea_m": Evolution(multi=True),
    "drl": Training(one_learner=True),
    "ea_s+drl": Evolution(multi=False, train=True),
    "wuji": Evolution(multi=True, train=True),
    "drl_30": Training(),
}


def play(ask: Ask, player: Player) -> Played:
    """Plays ``ask`` on ``player``: the random games; or the evaluation, then the training and the
    trained policies' evaluation while the budget lasts."""
    if ask.random:
        return Played(games=player.play_random(ask.policies))
    scores = player.evaluate(ask.policies) if ask.evaluate else None
    if not ask.train or player.spent():
        return Played(scores)
    trained = player.fine_tune(ask.policies)
    if player.spent():  # the budget ended in training: nothing more is played
        return Played(scores, trained)
    return Played(scores, trained, player.evaluate(trained))


def run_generations(
    config,
    state: SearchState,
    player: Player,
    done: int,
    after_generation: Callable[[int, SearchState], None],
) -> tuple[SearchState, int]:
    """Generations ``done + 1, …`` of ``config.strategy`` until ``config.generations`` or the
    budget ends, ``after_generation(generation, state)`` after each: ``(state, generations
    done)``."""
    strategy = REGISTRY[config.strategy]
    for generation in itertools.count(done + 1):
        if (config.generations is not None and generation > config.generations) or player.spent():
            break
        ask, state = strategy.ask(state, player, config)
        state = strategy.tell(state, ask, play(ask, player), player, config)
        done = generation
        after_generation(generation, state)
    return state, done
