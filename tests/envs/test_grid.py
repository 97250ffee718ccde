"""Grid distances: the bit-board search against Bellman-Ford relaxation on random maps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.envs.grid import UNREACHABLE, _bitboard_distances, _relaxed_distances, grid_distances


@pytest.mark.parametrize("shape", [(9, 17), (16, 16), (3, 32), (1, 1)])
def test_bitboard_search_gives_the_relaxations_distances(shape):
    rng = np.random.default_rng(sum(shape))
    walls = rng.random((24, *shape)) < rng.uniform(0.0, 0.6, (24, 1, 1))
    sources = np.stack([rng.integers(0, n, 24) for n in shape], -1).astype(np.int32)
    walls[0, sources[0, 0], sources[0, 1]] = True  # a wall source spreads, is unreachable itself
    both = [
        np.asarray(jax.jit(jax.vmap(f))(jnp.asarray(walls), jnp.asarray(sources)))
        for f in (_bitboard_distances, _relaxed_distances)
    ]
    np.testing.assert_array_equal(*both)
    assert (both[0][walls] == UNREACHABLE).all()


def test_grid_distances_on_a_corridor():
    walls = jnp.asarray(np.array([[0, 0, 0, 1, 0]], bool))
    np.testing.assert_array_equal(
        np.asarray(grid_distances(walls, jnp.array([0, 0]))), [[0, 1, 2, UNREACHABLE, UNREACHABLE]]
    )
    wide = jnp.zeros((2, 40), bool)  # wider than a word: the relaxation
    assert int(grid_distances(wide, jnp.array([1, 0]))[0, 39]) == 40
