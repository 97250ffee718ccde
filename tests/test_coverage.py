"""Cell sets against plain-Python sets: per-step streams, chunks, episodes across chunk
boundaries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.coverage import (
    BitSet,
    HashSet,
    bucket_id,
    cell_set,
    count_distinct,
    fraction_covered,
    visit_map,
)
from jgtest.envs.wrappers import EpisodeStatistics
from jgtest.methods.random_testing import make_chunk_fn

SPACE = 3_000_000  # possible cells (10^6+)
SETS = [BitSet(SPACE), HashSet(1 << 13)]


def _stream(seed, shape, space=SPACE, repeat_share=0.5):
    """Random cells in [0, space) where about ``repeat_share`` of them repeat a small pool."""
    rng = np.random.default_rng(seed)
    fresh = rng.integers(0, space, size=shape)
    pool = rng.integers(0, space, size=64)
    return np.where(
        rng.random(shape) < repeat_share, pool[rng.integers(0, 64, size=shape)], fresh
    ).astype(np.int32)


@pytest.mark.parametrize("cells", SETS, ids=["bitset", "hashset"])
def test_chunked_adds_equal_a_python_set(cells):
    chunks = _stream(0, (6, 500))
    valid = np.random.default_rng(1).random(chunks.shape) < 0.9
    add = jax.jit(cells.add)
    state, seen = cells.init(), set()
    for chunk, ok in zip(chunks, valid):
        state, num_new = add(state, chunk, ok)
        new = set(chunk[ok].tolist()) - seen
        seen |= new
        assert int(num_new) == len(new)
        assert int(state.size) == len(seen)
    assert not bool(state.overflowed)
    np.testing.assert_array_equal(cells.members(state), np.array(sorted(seen)))
    probe = np.concatenate([chunks[0, :50], _stream(2, (50,))])
    np.testing.assert_array_equal(
        np.asarray(cells.contains(state, probe)), [c in seen for c in probe.tolist()]
    )


@pytest.mark.parametrize("cells", SETS, ids=["bitset", "hashset"])
def test_per_env_episode_counts_cross_chunk_boundaries(cells):
    """One set per env, one cell a step, cleared at episode ends; the stream runs in
    jitted chunks whose boundaries fall inside episodes."""
    num_envs, steps, chunk = 3, 240, 70  # chunk does not divide the episode lengths
    stream = _stream(3, (steps, num_envs))
    done = np.random.default_rng(4).random((steps, num_envs)) < 1 / 40

    def step(state, xs):
        cell, end = xs
        state, _ = jax.vmap(cells.add)(state, cell)
        size = state.size
        return jax.vmap(cells.clear)(state, end), size

    run_chunk = jax.jit(lambda state, xs: jax.lax.scan(step, state, xs))
    state = jax.vmap(lambda _: cells.init())(jnp.arange(num_envs))
    sizes = []
    for start in range(0, steps, chunk):
        state, size = run_chunk(state, (stream[start : start + chunk], done[start : start + chunk]))
        sizes.append(np.asarray(size))
    sizes = np.concatenate(sizes)
    for env in range(num_envs):
        seen = set()
        for t in range(steps):
            seen.add(int(stream[t, env]))
            assert sizes[t, env] == len(seen), (env, t)
            if done[t, env]:
                seen = set()


def test_hash_set_is_exact_to_capacity_then_flags_overflow():
    cells = HashSet(8)
    state, num_new = cells.add(cells.init(), jnp.arange(8) * 1_000_003)
    assert int(num_new) == 8 and int(state.size) == 8 and not bool(state.overflowed)
    for present in range(8):  # one cell at a time (the per-env path): each found, none new
        again, num_new = cells.add(state, jnp.int32(present * 1_000_003))
        assert int(num_new) == 0 and not bool(again.overflowed)
    full, num_new = cells.add(state, jnp.int32(5))
    assert int(num_new) == 0 and int(full.size) == 8 and bool(full.overflowed)
    state, num_new = cells.add(state, jnp.array([5, 1_000_003]))  # one new (dropped), one present
    assert int(num_new) == 0 and int(state.size) == 8 and bool(state.overflowed)
    assert not bool(cells.clear(state).overflowed) and int(cells.clear(state).size) == 0


def test_bit_set_ignores_out_of_range_and_invalid_cells():
    cells = BitSet(40)
    state, num_new = cells.add(
        cells.init(), jnp.array([-1, 40, 39, 0, 39]), jnp.array([True, True, True, False, True])
    )
    assert int(num_new) == 1
    np.testing.assert_array_equal(cells.members(state), [39])
    np.testing.assert_array_equal(
        np.asarray(cells.contains(state, jnp.array([39, 40, -3, 0]))), [True, False, False, False]
    )


def test_count_distinct_and_fraction_covered():
    stream = _stream(5, (4, 300), space=10**9)
    counts = jax.jit(jax.vmap(count_distinct))(stream)
    np.testing.assert_array_equal(np.asarray(counts), [len(set(row.tolist())) for row in stream])
    cells = HashSet(1024)
    state, _ = cells.add(cells.init(), stream[0])
    targets = np.concatenate([stream[0, :30], stream[0, :10], stream[1, :30]])  # repeats count once
    expected = len(set(targets.tolist()) & set(stream[0].tolist())) / len(set(targets.tolist()))
    assert float(fraction_covered(cells, state, targets)) == pytest.approx(expected)


def test_cell_set_picks_the_smaller_representation():
    assert cell_set(4096, max_distinct=1000) == BitSet(4096)
    assert cell_set(40**4, max_distinct=1000) == HashSet(2048)
    assert cell_set(10**8) == BitSet(10**8)
    with pytest.raises(ValueError, match="power of two"):
        HashSet(100)
    with pytest.raises(ValueError, match="num_cells"):
        BitSet(0)
    with pytest.raises(ValueError, match="int32"):
        bucket_id(jnp.zeros(10), 0.0, 1.0, 10)


def test_visit_map_counts_each_visit():
    m = visit_map(jnp.array([0, 5, 5, 3]), (2, 3))
    np.testing.assert_array_equal(np.asarray(m), [[1, 0, 0], [1, 0, 2]])


def test_episode_statistics_on_a_huge_cell_space_uses_a_small_hash_set():
    """CartPole with 40 buckets a feature has 2.56M cells: the per-env set is a
    2,048-slot hash table, and its counts equal a Python set of the telemetry cells."""
    game, params = jgtest.make("CartPoleBugs-v0", cell_buckets=40, max_steps_in_episode=60)
    env = EpisodeStatistics(game)
    assert game.num_cells == 40**4 and env.cells == HashSet(2048)
    _, state = env.reset(jax.random.key(0), params)
    assert state.cells.table.shape == (2048, 2)

    def body(state, xs):
        k, a = xs
        _, state, _, term, trunc, info = env.step(k, state, a, params)
        return state, (
            info["telemetry"].cell,
            term | trunc,
            info["episode_cells"],
            info["returned_episode_cells"],
        )

    actions = jax.random.randint(jax.random.key(1), (150,), 0, 2)
    _, (cell, done, count, returned) = jax.jit(
        lambda s: jax.lax.scan(body, s, (jax.random.split(jax.random.key(2), 150), actions))
    )(state)
    cell, done, count, returned = map(np.asarray, (cell, done, count, returned))
    seen = set()
    for t in range(150):
        seen.add(int(cell[t]))
        assert count[t] == len(seen)
        if done[t]:
            assert returned[t] == len(seen)
            seen = set()
    assert done.sum() >= 2  # episodes ended inside the run


def test_episode_statistics_without_cells_has_no_cell_entries():
    game, params = jgtest.make("BlockMaze-v0")
    env = EpisodeStatistics(game, cells=False)
    obs, state = env.reset(jax.random.key(0), params)
    _, _, _, _, _, info = env.step(jax.random.key(1), state, 0, params)
    assert state.cells is None and "episode_cells" not in info and "episode_length" in info


@pytest.mark.parametrize("covered", [BitSet(256), HashSet(512)], ids=["bitset", "hashset"])
def test_campaign_coverage_equals_a_python_set_of_its_cells(covered):
    """The campaign's set, filled chunk by chunk on device, holds exactly the cells the chunks
    saw."""
    env, params = jgtest.make("BlockMaze-v0", max_steps_in_episode=30)
    init, chunk = make_chunk_fn(env, params, seed=0, num_envs=4, chunk_steps=25, covered=covered)
    carry, seen = init(), set()
    for _ in range(3):
        carry, out = chunk(carry)
        seen |= set(np.asarray(out[2]).ravel().tolist())
    assert int(carry[1].size) == len(seen)
    np.testing.assert_array_equal(covered.members(carry[1]), sorted(seen))


def test_count_distinct_states_counts_bucket_tuples_of_every_feature():
    from jgtest.coverage import count_distinct_states

    rng = np.random.default_rng(0)
    features = rng.uniform(0, 1, size=(300, 20)).astype(np.float32)
    features[150:] = features[:150]  # every state twice
    features[:, 5:] = 0.5  # 15 constant features: 10 buckets each, 10**20 tuples in all
    buckets = np.floor(features[:, :5] * 3).astype(int)
    expected = len({tuple(b) for b in buckets})
    assert int(count_distinct_states(jnp.asarray(features), None, 0.0, 1.0, 3)) == expected
    valid = np.arange(300) < 150
    assert (
        int(count_distinct_states(jnp.asarray(features), jnp.asarray(valid), 0.0, 1.0, 3))
        == expected
    )
    only_first = np.zeros(300, bool)
    only_first[0] = True
    assert (
        int(count_distinct_states(jnp.asarray(features), jnp.asarray(only_first), 0.0, 1.0, 3)) == 1
    )
    # an image-shaped state (Block Maze planes): one state per robot cell
    planes = np.zeros((6, 4, 4, 3), np.float32)
    for t, (r, c) in enumerate([(0, 0), (0, 1), (0, 0), (2, 3), (0, 1), (3, 3)]):
        planes[t, r, c, 1] = 1.0
    assert int(count_distinct_states(jnp.asarray(planes), None, 0.0, 1.0, 2)) == 4


def test_a_campaigns_distinct_states_are_the_set_of_their_bucket_tuples():
    from jgtest.coverage import (
        DistinctStates,
        ObservationStates,
        count_distinct_states,
        state_hashes,
    )

    rng = np.random.default_rng(1)
    tuples = rng.integers(0, 4, size=(3, 500, 6))  # three device calls' states, 4 buckets a feature
    features = (tuples + 0.5) / 4
    states, reference = DistinctStates(), set()
    for call, valid in zip(features, rng.uniform(size=(3, 500)) < 0.8):
        states.add(np.zeros((0, 2), np.uint32))  # a call that played nothing
        states.add(np.asarray(state_hashes(jnp.asarray(call), 0.0, 1.0, 4)), valid)
        reference |= {tuple(t) for t in np.floor(call[valid] * 4).astype(int)}
        assert len(states) == len(reference)
    assert np.all(np.diff(states.hashes.astype(np.float64)) > 0)  # sorted, no copies
    assert len(DistinctStates(states.hashes)) == len(reference)  # a resumed set
    # one run's count is the same states' count
    env, params = jgtest.make("CombatArena-v0")
    obs = jax.vmap(lambda k: env.reset(k, params)[0])(jax.random.split(jax.random.key(0), 3))
    observed = ObservationStates(env, params, 10)
    low, high = env.state_feature_bounds(params)
    assert (
        int(observed.count_distinct(obs))
        == int(count_distinct_states(env.state_features(obs), None, low, high, 10))
        == 1
    )
