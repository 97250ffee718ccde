"""Variation operators on flattened policy weights (Wuji, Zheng et al., 2019, §IV-B, Algorithm 1):
single-point crossover of two parents' weight vectors, then additive Gaussian mutation.

* chosen: crossover 0.9 (NSGA-II's), each weight mutated with probability 0.1 by ``N(0, 0.1²)``,
  because the paper lost its rates (§V-A4).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from evosax.algorithms.base import get_ravel_fn
from evosax.algorithms.population_based.simple_ga import mutation as evosax_mutation
from flax import struct

from jgtest.evo.pareto import check_objectives, dominance_tournament

__all__ = [
    "VariationParams",
    "breed",
    "gaussian_mutation",
    "ravel_population",
    "single_point_crossover",
]


@struct.dataclass
class VariationParams:
    """Numbers of Algorithm 1 (a pytree: ``vmap`` sweeps them).

    Attributes:
      crossover_rate: probability a child is the single-point crossover of its
        two parents (else a copy of the first).
      mutation_rate: probability each weight of a child is mutated.
      sigma: standard deviation of the additive Gaussian mutation.
    """

    crossover_rate: float = 0.9
    mutation_rate: float = 0.1
    sigma: float = 0.1


def ravel_population(population):
    """``(flat [P, D], unravel)``: each member's parameters as one weight vector; ``unravel(flat)``
    gives the stacked pytree back (evosax's ``get_ravel_fn``, vmapped). A single cut depends on the
    order of the vector, which follows the pytree's: a caller that wants a network's layers in the
    order they compute passes them as a list (:func:`jgtest.methods.wuji.search.offspring`)."""
    ravel, unravel = get_ravel_fn(jax.tree.map(lambda x: x[0], population))
    return jax.vmap(ravel)(population), jax.vmap(unravel)


def single_point_crossover(key: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    """SPX: ``a[:c] ++ b[c:]`` for a cut ``c`` drawn uniformly in ``[1, D)`` (both parents
    contribute); ``D = 1`` returns ``a``."""
    size = a.shape[-1]
    cut = jax.random.randint(key, (), 1, max(size, 2))
    return jnp.where(jnp.arange(size) < cut, a, b)


def gaussian_mutation(key: jax.Array, x: jax.Array, mutation_rate, sigma) -> jax.Array:
    """Each weight, with probability ``mutation_rate``, plus ``σ·N(0, 1)`` (evosax's mutation)."""
    k_mask, k_noise = jax.random.split(key)
    mutated = evosax_mutation(k_noise, x, jnp.asarray(sigma, x.dtype))
    return jnp.where(jax.random.bernoulli(k_mask, mutation_rate, x.shape), mutated, x)


def breed(
    key: jax.Array,
    flat: jax.Array,
    objectives,
    num_children: int,
    params: VariationParams = VariationParams(),
    maximize: bool = True,
    mutable: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Algorithm 1: ``num_children`` children of the population ``flat [P, D]``.

    For each child: two parents by Pareto-dominance binary tournaments on
    ``objectives [P, M]``; with probability ``crossover_rate`` their
    single-point crossover, else the first parent; then per-weight Gaussian
    mutation of the entries ``mutable`` marks (``bool[D]``; all by default: a
    vector may also carry state that crosses over with its weights but is not
    a weight, e.g. batch-norm running statistics). Returns ``(children
    [num_children, D], first parents int32[num_children])``.

    Raises:
      ValueError: fewer than 2 members, objectives not ``(P, M)``, or ``mutable`` not ``[D]``.
    """
    if flat.ndim != 2:
        raise ValueError(f"the population must be [P, D] weight vectors, got shape {flat.shape}")
    if flat.shape[0] < 2:
        raise ValueError(f"crossover needs a population of at least 2, got {flat.shape[0]}")
    objectives = check_objectives(objectives)
    if objectives.shape[0] != flat.shape[0]:
        raise ValueError(
            f"objectives have {objectives.shape[0]} rows for a population of {flat.shape[0]}"
        )
    if int(num_children) < 1:
        raise ValueError(f"num_children must be at least 1, got {num_children}")
    mutable = jnp.ones(flat.shape[1], bool) if mutable is None else jnp.asarray(mutable)
    if mutable.shape != flat.shape[1:] or mutable.dtype != jnp.bool_:
        raise ValueError(
            f"mutable must be bool[{flat.shape[1]}], one flag per entry of a member; got "
            f"{mutable.dtype}{list(mutable.shape)}"
        )
    return _breed(key, flat, objectives, int(num_children), params, maximize, mutable)


@functools.partial(jax.jit, static_argnames=("num_children", "maximize"))
def _breed(key, flat, objectives, num_children, params, maximize, mutable):
    k_first, k_second, k_children = jax.random.split(key, 3)
    first = dominance_tournament(k_first, objectives, num_children, maximize)
    second = dominance_tournament(k_second, objectives, num_children, maximize)

    def child(k, a, b):
        k_cross, k_apply, k_mutate = jax.random.split(k, 3)
        crossed = jnp.where(
            jax.random.bernoulli(k_apply, params.crossover_rate),
            single_point_crossover(k_cross, a, b),
            a,
        )
        return jnp.where(
            mutable,
            gaussian_mutation(k_mutate, crossed, params.mutation_rate, params.sigma),
            crossed,
        )

    children = jax.vmap(child)(
        jax.random.split(k_children, num_children), flat[first], flat[second]
    )
    return children, first
