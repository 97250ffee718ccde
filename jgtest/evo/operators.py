"""Variation operators on flattened policy weights (Wuji, Zheng et al., 2019, §IV-B, Algorithm 1):
single-point crossover of two parents' weight vectors, then additive Gaussian mutation.

The cut may fall anywhere (``crossover="weights"``) or only between layers (``"layers"``, the
authors' ``single_point.Split``, ``NeteaseFuxiRL/wuji`` ``wuji/ea/crossover/blob/pth/
single_point.py:41-53``: a cut among the layer boundaries, both ends included, so a child may also
be a copy of either parent).

* chosen: :class:`VariationParams`'s defaults, crossover 0.9 at any weight (NSGA-II's), each
  weight mutated with probability 0.1 by ``N(0, 0.1²)``, because the paper lost its rates (§V-A4);
  Wuji's runs default to the authors' operators (:data:`AUTHORS_VARIATION`).
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
    "AUTHORS_VARIATION",
    "OURS_VARIATION",
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
      crossover: where the cut may fall: ``"weights"`` (anywhere) or ``"layers"`` (between
        layers; :func:`breed`'s ``layer_starts``). Static.
    """

    crossover_rate: float = 0.9
    mutation_rate: float = 0.1
    sigma: float = 0.1
    crossover: str = struct.field(pytree_node=False, default="weights")

    def __post_init__(self):
        if self.crossover not in CROSSOVERS:
            raise ValueError(f"crossover must be one of {CROSSOVERS}, got {self.crossover!r}")


#: Where a single-point cut may fall.
CROSSOVERS = ("weights", "layers")
#: The authors' shipped operators (``NeteaseFuxiRL/wuji`` ``config.ini:43,48,53,73-74``): a cut
#: between layers with probability 1 and no mutation (``mutation.Useless``; the σ = 0.005 it
#: defines is used only when a Gaussian mutation is switched on).
AUTHORS_VARIATION = VariationParams(
    crossover_rate=1.0, mutation_rate=0.0, sigma=0.005, crossover="layers"
)
#: Ours where the paper is silent (§V-A4 lost the rates): a cut anywhere with probability 0.9,
#: 10% of the weights mutated by ``N(0, 0.1²)``.
OURS_VARIATION = VariationParams()


def ravel_population(population):
    """``(flat [P, D], unravel)``: each member's parameters as one weight vector; ``unravel(flat)``
    gives the stacked pytree back (evosax's ``get_ravel_fn``, vmapped). A single cut depends on the
    order of the vector, which follows the pytree's: a caller that wants a network's layers in the
    order they compute passes them as a list (:func:`jgtest.methods.wuji.search.offspring`)."""
    ravel, unravel = get_ravel_fn(jax.tree.map(lambda x: x[0], population))
    return jax.vmap(ravel)(population), jax.vmap(unravel)


def single_point_crossover(
    key: jax.Array, a: jax.Array, b: jax.Array, cuts: jax.Array | None = None
) -> jax.Array:
    """SPX: ``a[:c] ++ b[c:]`` for a cut ``c`` drawn uniformly in ``[1, D)`` (both parents
    contribute; ``D = 1`` returns ``a``), or uniformly among ``cuts`` (``int32[K]``, e.g. the layer
    boundaries ``0, …, D``)."""
    size = a.shape[-1]
    if cuts is None:
        cut = jax.random.randint(key, (), 1, max(size, 2))
    else:
        cut = jax.random.choice(key, jnp.asarray(cuts))
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
    layer_starts: tuple[int, ...] | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Algorithm 1: ``num_children`` children of the population ``flat [P, D]``.

    For each child: two parents by Pareto-dominance binary tournaments on
    ``objectives [P, M]``; with probability ``crossover_rate`` their
    single-point crossover, else the first parent; then per-weight Gaussian
    mutation of the entries ``mutable`` marks (``bool[D]``; all by default: a
    vector may also carry state that crosses over with its weights but is not
    a weight, e.g. batch-norm running statistics). With ``params.crossover ==
    "layers"`` the cut falls at one of ``layer_starts`` (each layer's first entry) or at ``D``.
    Returns ``(children [num_children, D], first parents int32[num_children])``.

    Raises:
      ValueError: fewer than 2 members, objectives not ``(P, M)``, ``mutable`` not ``[D]``, or
        layer crossover without ``layer_starts``.
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
    cuts = None
    if params.crossover == "layers":
        if not layer_starts:
            raise ValueError("crossover between layers needs the layers' starts (layer_starts)")
        cuts = jnp.asarray(sorted({*layer_starts, flat.shape[1]}), jnp.int32)
    return _breed(key, flat, objectives, int(num_children), params, maximize, mutable, cuts)


@functools.partial(jax.jit, static_argnames=("num_children", "maximize"))
def _breed(key, flat, objectives, num_children, params, maximize, mutable, cuts):
    k_first, k_second, k_children = jax.random.split(key, 3)
    first = dominance_tournament(k_first, objectives, num_children, maximize)
    second = dominance_tournament(k_second, objectives, num_children, maximize)

    def child(k, a, b):
        k_cross, k_apply, k_mutate = jax.random.split(k, 3)
        crossed = jnp.where(
            jax.random.bernoulli(k_apply, params.crossover_rate),
            single_point_crossover(k_cross, a, b, cuts),
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
