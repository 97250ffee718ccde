"""BlockMaze-v0: movement, gold, bugs where they are placed, Wuji's per-run re-draw."""

from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs.grid import UNREACHABLE, grid_distances

ENV, PARAMS = jgtest.make("BlockMaze-v0")
STEP = jax.jit(ENV.step)
N, S, E, W = 0, 1, 2, 3


def _at(row, col, seen=None):
    _, state = ENV.reset(jax.random.key(0), PARAMS)
    state = state.replace(pos=jnp.array([row, col], jnp.int32))
    return state if seen is None else state.replace(bugs_seen=jnp.asarray(seen))


def test_blocks_stop_movement_and_floor_allows_it():
    _, state, *_ = STEP(jax.random.key(0), _at(1, 1), N, PARAMS)  # wall above the start
    np.testing.assert_array_equal(np.asarray(state.pos), [1, 1])
    _, state, *_ = STEP(jax.random.key(0), _at(1, 1), E, PARAMS)
    np.testing.assert_array_equal(np.asarray(state.pos), [1, 2])


def test_reaching_the_gold_terminates_with_the_gold_reward():
    gold = np.asarray(PARAMS.gold)
    _, state, reward, term, _, info = STEP(jax.random.key(0), _at(gold[0], gold[1] + 1), W, PARAMS)
    assert bool(term) and float(reward) == 1.0 and float(info["telemetry"].game_reward) == 1.0
    _, _, reward, term, _, _ = STEP(jax.random.key(0), _at(1, 1), E, PARAMS)
    assert not bool(term) and float(reward) == pytest.approx(-0.01)


@pytest.mark.parametrize("bug", range(10))
def test_each_bug_fires_exactly_at_its_cell_first_time_only(bug):
    row, col = (int(v) for v in PARAMS.bug_pos[bug])
    walls = np.asarray(PARAMS.walls)
    # Step onto the bug cell from a free neighbour.
    moves = zip((S, N, W, E), ((-1, 0), (1, 0), (0, 1), (0, -1)))
    action, (dr, dc) = next((a, (dr, dc)) for a, (dr, dc) in moves if not walls[row + dr, col + dc])
    _, state, _, _, _, info = STEP(jax.random.key(0), _at(row + dr, col + dc), action, PARAMS)
    fired = np.asarray(info["telemetry"].bugs_fired)
    assert fired[bug] and fired.sum() == 1
    # Leave and come back in the same episode: no second firing.
    back = {S: N, N: S, E: W, W: E}[action]
    _, state, *_ = STEP(jax.random.key(1), state, back, PARAMS)
    _, state, _, _, _, info = STEP(jax.random.key(2), state, action, PARAMS)
    assert not np.asarray(info["telemetry"].bugs_fired).any()


def test_randomize_draws_bugs_uniformly_over_reachable_cells_including_the_mission_path():
    """Wuji §V-A: bugs "randomly distributed within the environment", on the way to the gold too."""
    keys = jax.random.split(jax.random.key(3), 200)
    drawn = jax.jit(jax.vmap(ENV.randomize, in_axes=(0, None)))(keys, PARAMS)
    d_start = np.asarray(grid_distances(PARAMS.walls, PARAMS.start))
    # one call, not 200
    d_golds = np.asarray(
        jax.jit(jax.vmap(grid_distances, in_axes=(None, 0)))(PARAMS.walls, drawn.gold)
    )
    counts = np.zeros(PARAMS.walls.shape)
    on_path_far = 0
    for i in range(200):
        p = jax.tree.map(itemgetter(i), drawn)
        bugs = [tuple(int(v) for v in b) for b in np.asarray(p.bug_pos)]
        gold = tuple(int(v) for v in np.asarray(p.gold))
        assert len(set(bugs)) == 10 and gold not in bugs and (1, 1) not in bugs
        assert all(d_start[b] < UNREACHABLE for b in bugs)
        d_gold = d_golds[i]
        on_path_far += sum(
            d_start[b] + d_gold[b] == d_start[gold] and d_start[b] > ENV.near_radius for b in bugs
        )
        for b in bugs:
            counts[b] += 1
    free = (d_start < UNREACHABLE) & (d_start > 0)
    assert on_path_far > 50, (
        "bugs must also lie on the shortest path to the gold, far from the start"
    )
    # every free cell drawn, each about 200 · 10 / (free cells − 1) times (the gold takes one)
    expected = 200 * 10 / (free.sum() - 1)
    assert counts[free].min() > 0 and 0.5 * expected < np.median(counts[free]) < 1.5 * expected


def test_near_far_placement_puts_bugs_near_the_start_and_off_the_path():
    env, _ = jgtest.make("BlockMaze-v0", placement="near_far")
    keys = jax.random.split(jax.random.key(7), 16)
    drawn = jax.jit(jax.vmap(env.randomize, in_axes=(0, None)))(keys, PARAMS)
    walls = PARAMS.walls
    d_start = np.asarray(grid_distances(walls, PARAMS.start))
    golds = set()
    for i in range(16):
        p = jax.tree.map(itemgetter(i), drawn)
        ENV.validate_params(p)
        bugs = [tuple(int(v) for v in b) for b in np.asarray(p.bug_pos)]
        gold = tuple(int(v) for v in np.asarray(p.gold))
        golds.add(gold)
        assert len(set(bugs)) == 10 and gold not in bugs and (1, 1) not in bugs
        d_gold = np.asarray(grid_distances(walls, p.gold))
        shortest = d_start[gold]
        near = [b for b in bugs if d_start[b] <= env.near_radius]
        far = [b for b in bugs if d_start[b] > env.near_radius]
        assert len(near) == env.num_near and len(far) == 10 - env.num_near
        assert all(d_start[b] + d_gold[b] - shortest >= env.min_detour for b in far)
        assert all(d_start[b] < UNREACHABLE for b in bugs)
    assert len(golds) > 4, "gold should move between runs"


def test_bad_bug_placements_are_refused():
    with pytest.raises(ValueError, match="bug 3 at \\(20, 4\\) is outside the 16x16 map"):
        jgtest.make("BlockMaze-v0", bug_pos=[[1, 3]] * 3 + [[20, 4]] + [[1, 3]] * 6)
    with pytest.raises(ValueError, match="bug 0 at \\(0, 0\\) is on a block"):
        jgtest.make("BlockMaze-v0", bug_pos=[[0, 0]] + [[1, 3]] * 9)
    with pytest.raises(ValueError, match="bug_pos must have shape \\(10, 2\\)"):
        jgtest.make("BlockMaze-v0", bug_pos=[[1, 3]])
    with pytest.raises(
        ValueError, match="placement must be one of \\('uniform', 'near_far'\\), got 'ring'"
    ):
        jgtest.make("BlockMaze-v0", placement="ring")
    with pytest.raises(ValueError, match="exactly one 'G'"):
        jgtest.make("BlockMaze-v0", layout="#####\n#S..#\n#####")


def test_custom_bug_count_draws_a_valid_default_placement():
    env, params = jgtest.make("BlockMaze-v0", num_bugs=16)
    assert env.num_bugs == 16 and params.bug_pos.shape == (16, 2)
    env.validate_params(params)
