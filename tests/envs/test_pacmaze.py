"""PacMaze: RELINE's Ms. Pac-Man twin (the real first maze, gates, speeds, dots, energizers, ghosts,
lives, tunnels, pixels)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.envs.grid import UNREACHABLE, grid_distances
from jgtest.envs.pacmaze import (
    DOT_RGB,
    ENERGIZER_RGB,
    FLOOR_RGB,
    FRIGHTENED_RGB,
    GHOST_RGB,
    MOVES,
    PLAYER_RGB,
    WALL_RGB,
    PacMaze,
    pack_cells,
    unpack_cells,
)
from jgtest.envs.wrappers import DrawFrames
from jgtest.frames import grayscale

UP, RIGHT, DOWN, LEFT, NOOP = range(5)

ENV = PacMaze()
NEVER = 1 << 30
#: Ghosts kept where they start and no frame-time noise: every step is exact.
QUIET = ENV.default_params.replace(
    release_steps=jnp.full((4,), NEVER, jnp.int32), frame_noise_ms=0.0
)
#: Each gate's cells (upper-left, upper-right, lower-left, lower-right).
GATES = [[(13, 0), (13, 1)], [(13, 39), (13, 40)], [(25, 0), (25, 1)], [(25, 39), (25, 40)]]
START = (25, 20)
KEY = jax.random.key(0)


@pytest.fixture(scope="module")
def state0():
    return ENV.reset(KEY, QUIET)[1]


def at(row, col):
    return jnp.array([row, col], jnp.int32)


_STEP = jax.jit(ENV.step)


def play(state, actions, params=QUIET):
    """Steps ``actions`` (checked by ``env.step`` first, then compiled once and reused)."""
    out = []
    for i, a in enumerate(actions):
        obs, state, reward, term, trunc, info = _STEP(jax.random.key(i + 1), state, a, params)
        out.append((obs, state, float(reward), bool(term), info["telemetry"]))
    return out


def has_dot(state, row, col):
    return bool(unpack_cells(state.dots, 41)[row, col])


def cells(steps):
    return [tuple(int(v) for v in s.pos) for _, s, *_ in steps]


def test_layout_is_the_real_first_maze():
    p = ENV.default_params
    assert ENV.map_shape == (42, 41) and ENV.num_cells == 42 * 41
    assert ENV.bug_kinds == ("low_fps",) * 4 and ENV.num_ghosts == 4
    gate_id = np.asarray(p.gate_id)
    for g, gate in enumerate(GATES):
        assert sorted(map(tuple, np.argwhere(gate_id == g))) == gate
    assert tuple(np.asarray(p.start)) == START
    # 150 dots and 4 energizers, as the Atari maze (JAXAtari's 154 pellets)
    assert int(unpack_cells(p.dots, 41).sum()) == 154 and int(p.energizers.sum()) == 4
    walls = np.asarray(p.walls)
    np.testing.assert_array_equal(walls, walls[:, ::-1])  # left-right symmetric
    # the tunnel rows are RAM y 50 and 98 (y = 4 row - 2), the start on the lower one
    assert [4 * r - 2 for r in (13, 25)] == [50, 98]
    # both mouths of a side are walled off from the centre: from the start the nearest gate is
    # 31 moves away (around by the outer corridor), and the two mouths of a side 18 apart
    blocked = p.walls | p.door
    from_start = np.asarray(grid_distances(blocked, at(*START)))
    assert min(from_start[c] for gate in GATES for c in gate) == 31
    assert np.asarray(grid_distances(blocked, at(25, 1)))[13, 1] == 18
    assert ENV.action_space(p).n == 5
    space = ENV.observation_space(p)  # the frame's contents: 42 x 2 dot words, 5 cells, 4 flags
    assert space.shape == (42 * 2 + 3 * 4 + 2,) and space.dtype == jnp.int32
    assert ENV.obs_shape == (42, 42)
    assert DrawFrames(ENV).observation_space(p).shape == (84, 84, 3)
    np.testing.assert_array_equal(MOVES, [[-1, 0], [0, 1], [1, 0], [0, -1], [0, 0]])


def test_the_dots_are_kept_a_bit_a_cell():
    cells_ = np.random.default_rng(0).random((5, 70)) < 0.5
    words = pack_cells(cells_)
    assert words.shape == (5, 3) and words.dtype == jnp.uint32
    np.testing.assert_array_equal(np.asarray(unpack_cells(words, 70)), cells_)


def test_the_pen_lets_ghosts_out_by_the_door_and_keeps_the_player_out():
    p = ENV.default_params
    pen, door, exits = (np.asarray(x) for x in (p.pen, p.door, p.pen_exit))
    assert sorted(map(tuple, np.argwhere(door))) == [(r, 20) for r in range(14, 19)]
    assert pen.sum() == 10  # the door and the pen's floor
    for cell in map(tuple, np.argwhere(pen)):  # following the exit moves leads out in 8 moves
        for _ in range(8):
            if not pen[cell]:
                break
            cell = tuple(np.asarray(cell) + MOVES[exits[cell]])
        assert not pen[cell] and cell == (13, 20)
    assert int(grid_distances(p.walls | p.door, at(*START))[19, 20]) == UNREACHABLE
    np.testing.assert_array_equal(np.asarray(p.release_steps), [0, 15, 75, 105])


def test_ghosts_leave_the_pen_when_released_and_scatter_to_the_top_corners():
    params = ENV.default_params.replace(player_speed=jnp.array([1e-3, 1e-3]), frame_noise_ms=0.0)
    _, state = ENV.reset(KEY, params)
    steps = play(state, [NOOP] * 40, params)
    ghosts = np.array([np.asarray(s.ghosts) for _, s, *_ in steps])
    assert (ghosts[:14, 1] == (19, 18)).all()  # released after 15 steps
    assert ghosts[27, 1, 0] == 13  # out by the door
    # while scattering, the first ghost heads for the top-left corner, the others the top-right
    np.testing.assert_array_equal(np.asarray(params.scatter_corner)[:2], [(1, 2), (1, 38)])
    assert ghosts[29, 0, 0] < 13 and ghosts[29, 0, 1] < 20


def test_she_moves_at_her_speed_by_axis_and_keeps_her_heading(state0):
    # 0.71 of a cell a step across: 7 cells in 10 steps, heading left from the start
    steps = play(state0, [NOOP] * 10)
    assert cells(steps)[-1] == (25, 13)
    assert [c[1] for c in cells(steps)] == [20, 19, 18, 18, 17, 16, 16, 15, 14, 13]
    # 0.94 up or down: 9 cells in 10 steps up the outer corridor
    steps = play(
        state0.replace(pos=at(31, 4), heading=jnp.int32(UP), wanted=jnp.int32(UP)), [NOOP] * 10
    )
    assert cells(steps)[-1] == (22, 4)


def test_a_direction_asked_for_is_taken_where_it_opens(state0):
    # up asked once on the start row: she goes on left and turns up at the first opening
    steps = play(state0, [UP] + [NOOP] * 12)
    path = cells(steps)
    assert (24, 14) in path and all(c[1] >= 14 for c in path)
    assert int(steps[-1][1].heading) == UP
    # a wall ahead stops her; her stride waits, so she moves on the step she turns
    corner = state0.replace(pos=at(1, 2), heading=jnp.int32(UP), wanted=jnp.int32(UP))
    (_, s, *_), (_, s2, *_) = play(corner, [NOOP, NOOP])
    assert tuple(np.asarray(s2.pos)) == (1, 2) and float(s2.stride) == 1.0
    ((_, s3, *_),) = play(s2, [RIGHT])
    assert tuple(np.asarray(s3.pos)) == (1, 3) and int(s3.heading) == RIGHT


def test_she_turns_back_at_once(state0):
    steps = play(state0, [NOOP, NOOP, NOOP, RIGHT, NOOP])
    assert cells(steps) == [(25, 20), (25, 19), (25, 18), (25, 18), (25, 19)]
    assert int(steps[3][1].heading) == RIGHT


def test_a_gate_fires_on_its_first_cell_and_a_tunnel_pass_fires_both_of_its_row(state0):
    state = state0.replace(pos=at(25, 3), stride=jnp.float32(0.99))
    steps = play(state, [NOOP] * 5)
    assert cells(steps) == [(25, 2), (25, 1), (25, 0), (25, 0), (25, 40)]
    fired = np.array([np.asarray(t.bugs_fired) for *_, t in steps])
    expected = np.zeros((5, 4), bool)
    expected[1, 2] = expected[4, 3] = True
    np.testing.assert_array_equal(fired, expected)
    frame = [float(t.frame_time_ms) for *_, t in steps]
    np.testing.assert_allclose(frame, [16.7, 56.7, 16.7, 16.7, 56.7], rtol=1e-6)
    assert tuple(np.asarray(steps[1][4].position)) == (25, 1)
    assert int(steps[1][4].cell) == 25 * 41 + 1


def test_eating_a_dot_gives_one_and_removes_it(state0):
    assert has_dot(state0, 25, 18) and not has_dot(state0, 25, 19)
    steps = play(state0, [NOOP, NOOP, NOOP, RIGHT, NOOP, NOOP, LEFT, NOOP, NOOP])
    rewards = [r for _, _, r, *_ in steps]
    assert rewards[2] == 1.0 and sum(rewards) == 1.0  # back over the eaten cell: nothing
    assert not has_dot(steps[-1][1], 25, 18)
    assert float(steps[2][4].game_reward) == 1.0


def test_eating_the_last_dot_terminates(state0):
    only = pack_cells(np.arange(42 * 41).reshape(42, 41) == 25 * 41 + 18)
    steps = play(state0.replace(dots=only), [NOOP] * 3)
    assert [r for _, _, r, *_ in steps] == [0.0, 0.0, 1.0] and steps[2][3]


def test_an_energizer_frightens_the_ghosts_and_a_frightened_ghost_is_eaten(state0):
    state = state0.replace(
        pos=at(5, 2), heading=jnp.int32(UP), wanted=jnp.int32(UP), stride=jnp.float32(0.99)
    )
    ((obs, s, reward, _, _),) = play(state, [NOOP])
    assert tuple(np.asarray(s.pos)) == (4, 2) and reward == 1.0
    np.testing.assert_array_equal(np.asarray(s.frightened), [True, False, False, False])
    assert int(s.fright_left) == 90 and int(ENV.cells(obs)[13, 20]) == 4  # drawn frightened
    s = s.replace(ghosts=s.ghosts.at[0].set(at(3, 2)), stride=jnp.float32(0.99))
    ((_, s2, reward, _, _),) = play(s, [NOOP])
    assert reward == 1.0 and int(s2.lives) == 3
    assert tuple(np.asarray(s2.ghosts[0])) == (19, 20) and not bool(s2.frightened[0])
    # the fright runs out
    steps = play(s.replace(fright_left=jnp.int32(2)), [DOWN, NOOP])
    assert not np.asarray(steps[-1][1].frightened).any()


def test_a_ghost_catches_her_she_dies_then_the_next_life_waits_at_the_starts(state0):
    state = state0.replace(
        pos=at(25, 19), stride=jnp.float32(0.5), ghosts=state0.ghosts.at[0].set(at(25, 18))
    )
    steps = play(state, [NOOP] * 49)
    assert tuple(np.asarray(steps[0][4].position)) == (25, 18)  # where she was caught
    lives = [int(s.lives) for _, s, *_ in steps]
    assert lives[:19] == [3] * 19 and lives[19:] == [2] * 30  # 19 steps dying, then the life goes
    path = cells(steps)
    assert path[:19] == [(25, 18)] * 19 and path[19:48] == [START] * 29  # then 28 at the start
    assert float(steps[47][1].stride) == 0 and float(steps[48][1].stride) > 0  # she moves again
    np.testing.assert_array_equal(np.asarray(steps[19][1].ghosts), np.asarray(QUIET.ghost_start))


def test_swapping_cells_with_a_ghost_is_a_collision(state0):
    params = QUIET.replace(release_steps=jnp.zeros((4,), jnp.int32))
    state = state0.replace(
        pos=at(25, 18),
        stride=jnp.float32(0.99),
        ghosts=state0.ghosts.at[0].set(at(25, 17)),
        ghost_dir=state0.ghost_dir.at[0].set(RIGHT),
        ghost_stride=state0.ghost_stride.at[0].set(0.99),
    )
    ((_, s, *_),) = play(state, [NOOP], params)
    assert int(s.dying) == 19


def test_episode_terminates_when_the_last_life_has_died(state0):
    state = state0.replace(lives=jnp.int32(1), dying=jnp.int32(1))
    ((_, s, _, term, _),) = play(state, [NOOP])
    assert term
    assert int(s.lives) == 3 and int(s.time) == 0  # gymnax auto-reset


def test_pixels_show_player_ghosts_dots_and_walls():
    obs, state = ENV.reset(KEY, QUIET)
    cells_ = ENV.cells(obs)
    assert cells_.dtype == jnp.uint8 and cells_.shape == (42, 42)
    assert int(cells_[0, 41]) == 0  # the floor column padding the maze's 41
    obs = np.asarray(ENV.draw(obs))
    assert obs.dtype == np.uint8 and obs.shape == (84, 84, 3)

    def cell(o, r, c):
        return o[2 * r : 2 * r + 2, 2 * c : 2 * c + 2].reshape(-1, 3)

    assert (cell(obs, *START) == PLAYER_RGB).all()
    assert (cell(obs, 0, 0) == WALL_RGB).all()
    assert (cell(obs, 25, 18) == DOT_RGB).all() and (cell(obs, 25, 19) == FLOOR_RGB).all()
    assert (cell(obs, 4, 2) == ENERGIZER_RGB).all()
    for g, (r, c) in enumerate(np.asarray(QUIET.ghost_start)):
        assert (cell(obs, r, c) == GHOST_RGB[g % 4]).all()
    four = np.asarray(DrawFrames(PacMaze(cell_px=4)).reset(KEY, QUIET)[0])
    dot = four[4 * 25 : 4 * 26, 4 * 18 : 4 * 19]  # at 4 pixels a cell, a dot is its centre
    assert (dot[1:3, 1:3] == DOT_RGB).all() and (dot[0] == FLOOR_RGB).all()


def test_grayscale_keeps_the_classes_apart():
    # RELINE's agents see grayscale frames at one pixel a cell: only brightness tells
    # floor < wall < frightened < dot < energizer < ghosts < player apart, each class at least 20
    # levels from the next.
    luma = lambda rgb: int(grayscale(jnp.asarray([rgb], jnp.uint8))[0])
    ghosts = sorted(map(luma, GHOST_RGB))
    levels = [
        luma(FLOOR_RGB),
        luma(WALL_RGB),
        luma(FRIGHTENED_RGB),
        luma(DOT_RGB),
        luma(ENERGIZER_RGB),
        ghosts[0],
        ghosts[-1],
        luma(PLAYER_RGB),
    ]
    assert levels == sorted(levels)
    gaps = np.diff(levels)
    assert min(np.delete(gaps, 5)) >= 20, levels  # (the ghosts are one class)


def test_validate_params_refuses_bad_gates_and_speeds():
    p = ENV.default_params
    ENV.validate_params(p)
    with pytest.raises(ValueError, match=r"gate 2 cell \(0, 0\) is on a wall"):
        ENV.validate_params(p.replace(gate_id=p.gate_id.at[0, 0].set(2)))
    with pytest.raises(ValueError, match=r"gate_id must mark gates 0..3, got \[0, 1, 2\]"):
        ENV.validate_params(p.replace(gate_id=jnp.where(p.gate_id == 3, -1, p.gate_id)))
    with pytest.raises(ValueError, match=r"player_speed must be two speeds in \(0, 1\]"):
        ENV.validate_params(p.replace(player_speed=jnp.array([1.5, 0.7])))
    with pytest.raises(ValueError, match="ghost_chase_prob must be in"):
        ENV.validate_params(p.replace(ghost_chase_prob=1.2))


@pytest.mark.parametrize(
    "layout, message",
    [
        ("#####\n#1PG#\n#T..#\n#####", "mixes digit gates and 'T' gates"),
        ("#####\n#1PG#\n#3..#\n#####", r"must run 1..n without gaps, got \[1, 3\]"),
        ("#####\n#.PG#\n#...#\n#####", "at least one gate"),
        ("#####\n#TPG#\n#.x.#\n#####", r"unknown cell marks \['x'\]"),
    ],
)
def test_bad_layouts_are_refused(layout, message):
    with pytest.raises(ValueError, match=message):
        PacMaze(layout)


def test_moved_gate_fires_at_its_new_cell(state0):
    params = QUIET.replace(gate_id=QUIET.gate_id.at[25, 19].set(3))
    ((_, _, _, _, tel),) = play(state0.replace(stride=jnp.float32(0.5)), [NOOP], params)
    np.testing.assert_array_equal(np.asarray(tel.bugs_fired), [False, False, False, True])
    assert float(tel.frame_time_ms) == pytest.approx(56.7)


def test_traced_out_of_range_action_is_clipped_to_noop(state0):
    step = jax.jit(ENV.step_env)
    state = state0.replace(stride=jnp.float32(0.5))
    _, s, *_ = step(KEY, state, jnp.int32(9), QUIET)  # noop: on ahead (left)
    assert tuple(np.asarray(s.pos)) == (25, 19)
    _, s, *_ = step(KEY, state, jnp.int32(-3), QUIET)  # up (0): a wall here, on ahead
    assert tuple(np.asarray(s.pos)) == (25, 19) and int(s.wanted) == UP
    with pytest.raises(ValueError, match="out of range"):
        ENV.step(KEY, state0, 5, QUIET)
