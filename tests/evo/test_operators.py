"""Wuji's variation operators (Algorithm 1) on flattened policy weights."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.evo import (
    AUTHORS_VARIATION,
    VariationParams,
    breed,
    gaussian_mutation,
    ravel_population,
    single_point_crossover,
)


def test_ravel_population_round_trips_a_stacked_pytree():
    population = {"dense": {"kernel": jnp.arange(24.0).reshape(4, 3, 2), "bias": jnp.ones((4, 2))}}
    flat, unravel = ravel_population(population)
    assert flat.shape == (4, 8)
    back = unravel(flat)
    jax.tree.map(np.testing.assert_array_equal, back, population)


def test_single_point_crossover_takes_a_prefix_of_one_parent_and_the_rest_of_the_other():
    a, b = jnp.zeros(10), jnp.ones(10)
    cuts = set()
    for k in jax.random.split(jax.random.key(0), 200):
        child = np.asarray(single_point_crossover(k, a, b))
        cut = int(np.argmax(child == 1))
        np.testing.assert_array_equal(child, (np.arange(10) >= cut).astype(float))
        cuts.add(cut)
    assert cuts == set(range(1, 10))  # every cut, and both parents always contribute


def test_gaussian_mutation_touches_about_the_rate_with_sigma():
    x = jnp.zeros(20_000)
    y = np.asarray(gaussian_mutation(jax.random.key(1), x, 0.1, 0.5))
    changed = y != 0
    assert 0.09 < changed.mean() < 0.11
    assert abs(y[changed].std() - 0.5) < 0.03


def test_breed_children_come_from_tournament_winners():
    flat = jnp.stack([jnp.full(6, float(i)) for i in range(4)])
    # member 0 dominates all
    objectives = jnp.array([[3.0, 3.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    no_change = VariationParams(crossover_rate=0.0, mutation_rate=0.0, sigma=0.1)
    children, first = breed(jax.random.key(2), flat, objectives, 400, no_change)
    np.testing.assert_array_equal(children[:, 0], first.astype(float))
    # member 0 wins every tournament it enters: P(enter) = 1 − (3/4)² = 7/16
    assert 0.37 < float(jnp.mean(first == 0)) < 0.51
    crossed, _ = breed(jax.random.key(3), flat, objectives, 64, VariationParams(1.0, 0.0, 0.1))
    assert bool(jnp.all(crossed[:, :1] <= 3)) and bool(jnp.all(jnp.diff(crossed, axis=1) != 0.5))


def test_breed_refuses_bad_input_before_compiling():
    flat = jnp.zeros((3, 5))
    with pytest.raises(ValueError, match="population of at least 2, got 1"):
        breed(jax.random.key(0), jnp.zeros((1, 5)), jnp.zeros((1, 2)), 2)
    with pytest.raises(ValueError, match="objectives have 2 rows for a population of 3"):
        breed(jax.random.key(0), flat, jnp.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="NaN"):
        breed(jax.random.key(0), flat, jnp.array([[0.0, 1], [np.nan, 0], [1, 1]]), 2)
    with pytest.raises(ValueError, match="must be \\(N, M\\)"):
        breed(jax.random.key(0), flat, jnp.zeros(3), 2)
    with pytest.raises(ValueError, match="mutable must be bool\\[5\\].*got float32\\[5\\]"):
        breed(jax.random.key(0), flat, jnp.zeros((3, 2)), 2, mutable=jnp.ones(5))
    with pytest.raises(ValueError, match="between layers needs the layers' starts"):
        breed(jax.random.key(0), flat, jnp.zeros((3, 2)), 2, AUTHORS_VARIATION)
    with pytest.raises(ValueError, match="crossover must be one of"):
        VariationParams(crossover="uniform")


def test_the_authors_crossover_cuts_between_layers_and_may_copy_either_parent():
    # two parents of three layers (sizes 2, 3, 1): a child is whole layers of one, then the other
    flat = jnp.stack([jnp.zeros(6), jnp.ones(6)])
    children, first = breed(
        jax.random.key(5), flat, jnp.zeros((2, 1)), 400, AUTHORS_VARIATION, layer_starts=(0, 2, 5)
    )
    second = {tuple(np.asarray(c) == np.asarray(flat[f])) for c, f in zip(children, first)}
    # the cut at 0 gives the other parent, at 2 or 5 a mix, at 6 a copy; never inside a layer
    assert second == {
        (False,) * 6,
        (True, True, False, False, False, False),
        (True,) * 5 + (False,),
        (True,) * 6,
    }
    assert bool(jnp.all((children == 0) | (children == 1)))  # no mutation


def test_breed_mutates_only_the_entries_marked_mutable():
    flat = jnp.zeros((3, 8))
    mutable = jnp.arange(8) < 5
    children, _ = breed(
        jax.random.key(4),
        flat,
        jnp.zeros((3, 1)),
        50,
        VariationParams(0.0, 1.0, 0.5),
        mutable=mutable,
    )
    assert bool(jnp.all(children[:, :5] != 0)) and bool(jnp.all(children[:, 5:] == 0))
