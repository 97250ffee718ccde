"""Wuji's jitted pieces, shared by every run of a game: evaluating a population on both objectives,
A2C rounds, random play, breeding (Algorithm 1) and NSGA-II survival (Algorithm 4)."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np

from jgtest.agents.wuji_a2c import (
    AUTHORS_A2C_HPARAMS,
    WujiA2C,
    WujiA2CConfig,
    WujiA2CHyperparams,
)
from jgtest.coverage import ObservationStates
from jgtest.envs.registration import make
from jgtest.evo import breed, ravel_population, select
from jgtest.methods.wuji.config import WujiConfig
from jgtest.methods.wuji.strategies import REGISTRY, Strategy
from jgtest.rollout import play_episodes


@functools.lru_cache(maxsize=8)
def shared_search(
    game: str,
    game_kwargs: tuple,
    runs_per_eval: int,
    num_buckets: int,
    a2c: WujiA2CConfig,
    evaluation: str = "greedy",
    hparams: WujiA2CHyperparams = AUTHORS_A2C_HPARAMS,
) -> Search:
    """The search's jitted functions for a game, shared by every run (strategy, seed) that uses
    the same settings: a run's game params and seeds are arguments, so nothing recompiles."""
    env, params = make(game, **dict(game_kwargs))
    return Search(env, params, runs_per_eval, num_buckets, a2c, evaluation, hparams)


def search_for(config: WujiConfig) -> Search:
    """:func:`shared_search` for a run's settings."""
    return shared_search(
        config.game,
        config.game_kwargs,
        config.runs_per_eval,
        config.num_buckets,
        learner_config(config),
        config.evaluation,
        config.a2c_hparams,
    )


def learner_config(config: WujiConfig) -> WujiA2CConfig:
    """The A2C learner's settings: ``config.a2c``, but for ``drl``, whose one learner stands in for
    a population, ``population`` times the games and the steps per child (a round and a
    generation play the steps of a population's, :meth:`jgtest.methods.wuji.strategies.Strategy.
    learner_games`)."""
    games = REGISTRY[config.strategy].learner_games(config)
    per_child = config.a2c.steps_per_child
    return dataclasses.replace(
        config.a2c,
        num_envs=config.a2c.num_envs * games,
        steps_per_child=None if per_child is None else per_child * games,
    )


class Search:
    """The jitted pieces of one game's search: evaluation of a population (its policies acting by
    ``evaluation``, :data:`jgtest.methods.wuji.config.EVALUATIONS`), A2C rounds, random play,
    breeding and NSGA-II survival."""

    def __init__(
        self,
        env,
        params,
        runs_per_eval: int,
        num_buckets: int,
        a2c: WujiA2CConfig,
        evaluation: str = "greedy",
        hparams: WujiA2CHyperparams = AUTHORS_A2C_HPARAMS,
    ):
        # the game as configured, before a run re-draws its bugs
        self.env, self.params = (env, params)
        self.max_steps = int(np.asarray(params.max_steps_in_episode))
        self.a2c = WujiA2C(env, a2c, self.max_steps, num_buckets)
        self.hparams = hparams
        states = ObservationStates(env, params, num_buckets)
        m = runs_per_eval
        discount = self.hparams.gamma ** jnp.arange(self.max_steps)

        def trace_out(out: dict) -> dict:
            """What the host needs from played episodes to write bug records and coverage."""
            tel = out["telemetry"]
            return {
                "actions": out["actions"],
                "valid": out["valid"],
                "fired": tel.bugs_fired,
                "cell": tel.cell,
                "position": tel.position,
                "states": states.hashes(out["final_observation"]),
            }

        def evaluate_one(variables, params, seed):
            if evaluation == "greedy":
                policy = self.a2c.greedy_policy
            else:
                policy = lambda v, obs, key: self.a2c.policy(v, obs, key, self.hparams)
            out = play_episodes(
                env,
                params,
                policy,
                variables,
                seed,
                m,
                self.max_steps,
                info_keys=("final_observation",),
            )
            distinct = jax.vmap(states.count_distinct)(out["final_observation"], out["valid"])
            rs = jnp.sum(
                jnp.where(out["valid"], out["telemetry"].game_reward, 0.0) * discount, axis=1
            )
            scores = jnp.stack([jnp.mean(distinct.astype(jnp.float32)), jnp.mean(rs)])
            return scores, trace_out(out)

        self.evaluate = jax.jit(jax.vmap(evaluate_one, in_axes=(0, None, 0)))
        self.init_variables = jax.jit(jax.vmap(self.a2c.init_variables))
        self.init_training = jax.jit(
            lambda variables, params, seeds: (
                jax.vmap(self.a2c.init_learner)(variables),
                jax.vmap(self.a2c.init_slots, in_axes=(None, 0))(params, seeds),
            )
        )
        self.train_round = jax.jit(
            jax.vmap(
                lambda l, s, p, seed: self.a2c.round(l, s, p, seed, self.hparams),
                in_axes=(0, 0, None, 0),
            )
        )
        self.offspring = jax.jit(
            functools.partial(offspring, layers=self.a2c.network.layer_names())
        )
        self.survivors = jax.jit(survivors, static_argnames="multi")
        self.init_random = jax.jit(jax.vmap(self.a2c.init_slots, in_axes=(None, 0)))
        self.random_round = jax.jit(jax.vmap(self.a2c.random_round, in_axes=(0, None, 0)))
        self._warm: set[tuple[Strategy, int, str]] = set()

    def warm_up(self, strategy: Strategy, population: int, params, config: WujiConfig) -> None:
        """Compiles the functions ``strategy`` calls with a population of ``population`` by calling
        each once on throwaway seeds (results dropped; everything is pure), so that the campaign's
        wall-clock budget is spent searching, not compiling: without it the first run of each
        strategy lost seconds of a short budget to XLA."""
        pool = config.selection_pool
        if (strategy, population, pool) in self._warm:
            return
        seeds = jnp.full((population,), -1, jnp.int32)
        if strategy.random:
            jax.block_until_ready(self.random_round(self.init_random(params, seeds), params, seeds))
        else:
            variables = self.init_variables(jax.random.split(jax.random.key(0), population))
            scores, _ = jax.block_until_ready(self.evaluate(variables, params, seeds))
            if strategy.trains:
                learners, slots = self.init_training(variables, params, seeds)
                jax.block_until_ready(self.train_round(learners, slots, params, seeds))
            if strategy.evolves:
                fitness = scores if strategy.multi else scores[:, 1:]
                children = self.offspring(jax.random.key(0), variables, fitness, config.variation)
                candidates = 3 if strategy.trains and pool == "paper" else 2
                jax.block_until_ready(
                    self.survivors(
                        (variables, children, variables)[:candidates],
                        (scores,) * candidates,
                        strategy.multi,
                    )
                )
        self._warm.add((strategy, population, pool))


def offspring(key, population, fitness, variation, layers):
    """Algorithm 1 on a stacked population: the children bred from ``fitness [P, M]``
    (:func:`jgtest.evo.breed`). A member's vector lists its ``layers`` in the order they compute,
    as a PyTorch network's ``parameters()`` does (the paper's, §V-A4), each batch-norm layer's
    running statistics beside its weights: a single cut gives a child one parent's first layers
    and the other's last ones, statistics included (a cut between layers keeps each layer whole,
    as the authors' groups of a ``state_dict`` by module do), and mutation changes weights only.
    Jitted by :class:`Search`: a generation's glue runs as one compiled call, not op by op."""
    parts = ("params", "batch_stats")
    genome = [
        {part: population[part][name] for part in parts if name in population[part]}
        for name in layers
    ]
    weights = [
        {part: member_filled(tree, part == "params") for part, tree in layer.items()}
        for layer in genome
    ]
    flat, unravel = ravel_population(genome)
    sizes = [sum(x[0].size for x in jax.tree.leaves(layer)) for layer in genome]
    children, _ = breed(
        key,
        flat,
        fitness,
        flat.shape[0],
        variation,
        mutable=jax.flatten_util.ravel_pytree(weights)[0],
        layer_starts=tuple(int(v) for v in np.cumsum([0, *sizes[:-1]])),
    )
    bred = unravel(children)
    return {
        part: {name: layer[part] for name, layer in zip(layers, bred) if part in layer}
        for part in parts
    }


def member_filled(stacked, value: bool):
    """One member's shapes of the stacked pytree ``stacked``, every entry ``value``."""
    return jax.tree.map(lambda x: jnp.full(x.shape[1:], value), stacked)


def survivors(candidates, scores, multi):
    """Algorithm 4: NSGA-II over the union of ``candidates`` (parents, children, trained children)
    on their ``scores`` (both objectives when ``multi``, else the winning score), keeping the
    parents' number; ``(population, objectives, the survivors' indices in the union)``."""
    union = jax.tree.map(lambda *xs: jnp.concatenate(xs), *candidates)
    union_scores = jnp.concatenate(scores)
    keep = select(union_scores if multi else union_scores[:, 1:], scores[0].shape[0])
    return jax.tree.map(lambda x: x[keep], union), union_scores[keep], keep
