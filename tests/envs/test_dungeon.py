"""Dungeon-v0, the Explicit Plans article's level: its mechanics, events, variants and random
levels."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs import dungeon as d

N, S, E, W = 0, 1, 2, 3


def _play(variant: str, actions, seed: int = 0):
    env, params = jgtest.make("Dungeon-v0", variant=variant)
    # still enemies: the mechanics alone
    params = params.replace(enemy_move_prob=0.0, enemy_hit_prob=0.0)
    _, state = env.reset(jax.random.key(seed), params)
    step = jax.jit(env.step_env)
    events = []
    for t, a in enumerate(actions):
        _, state, reward, done, info = step(jax.random.key(t), state, a, params)
        events.append({k for k, v in info["events"].items() if v})
    return state, events, float(reward), bool(done)


# start (2, 2): down to beside the switch (4, 3), toggle it, round to the door (4, 8), on to the
# pit's edge, jump it, interact with the shrine
THROUGH = [S, S, d.INTERACT, N, E, E, E, E, E, S, E, E, E, E, d.JUMP, E, d.INTERACT]


def test_the_level_is_completed_by_switch_jump_and_shrine():
    state, events, reward, done = _play("normal", THROUGH)
    assert (
        events[2] == {"switch_toggled", "door_opened"}
        and events[14] == set()
        and events[-1] == {"shrine_activated"}
    )
    assert state.pos.tolist() == [4, 14] and bool(state.shrine_active) and reward == 1.0 and done


def test_the_variants_break_what_the_article_breaks():
    state, events, _, _ = _play("switch_out_of_reach", THROUGH[:3])
    assert events[2] == set() and not bool(state.switch_on)  # too high to reach: nothing happens
    state, events, _, _ = _play("door_stuck", THROUGH[:11])
    # the door holds
    assert (
        events[2] == {"switch_toggled"}
        and not bool(state.door_open)
        and state.pos.tolist() == [4, 7]
    )
    # two bugs in one build
    state, events, reward, done = _play("shrine_out_of_reach+door_stuck", THROUGH[:3])
    assert events[2] == {"switch_toggled"} and not bool(state.door_open)
    _, events, reward, done = _play("shrine_out_of_reach", THROUGH)
    # the shrine is too high: the level cannot be completed
    assert events[-1] == set() and reward == 0.0 and not done
    with pytest.raises(
        ValueError, match="or several of .* joined by '\\+', got 'door_stuck\\+random_layout'"
    ):
        # a constructor variant does not combine
        jgtest.make("Dungeon-v0", variant="door_stuck+random_layout")


def test_walls_ledges_and_lava():
    state, _, _, _ = _play("normal", [W, W, W])
    assert state.pos.tolist() == [2, 1]  # a wall stops the player
    walk_to_ledge = THROUGH[:14]
    state, _, _, _ = _play("normal", walk_to_ledge + [E, E])
    assert state.pos.tolist() == [4, 11] and not bool(state.dead)  # the lava's edge stops a walk
    # facing east from (4, 10): lands in the lava
    state, events, _, done = _play("normal", walk_to_ledge[:-1] + [d.JUMP])
    assert bool(state.dead) and "player_died" in events[-1] and done


def test_attack_kills_an_adjacent_enemy_and_collecting_counts():
    env, params = jgtest.make("Dungeon-v0")
    enemy = env.actor_ids(d.ENEMY)[0]
    step = jax.jit(env.step_env)
    _, state = env.reset(jax.random.key(0), params)
    state = state.replace(pos=state.actor_pos[enemy] + jnp.array([0, -1]))
    _, state, _, _, info = step(
        jax.random.key(1), state, d.ATTACK, params.replace(enemy_move_prob=0.0, enemy_hit_prob=0.0)
    )
    assert (
        bool(info["events"]["enemy_killed"])
        and int(info["event_actor"]) == enemy
        and int(state.kills) == 1
        and not bool(state.alive[enemy])
    )
    item = env.actor_ids(d.COLLECTABLE)[0]
    state = state.replace(pos=state.actor_pos[item] + jnp.array([-1, 0]))
    _, state, _, _, info = step(jax.random.key(2), state, S, params)
    assert (
        bool(info["events"]["item_collected"])
        and int(state.items) == 1
        and int(info["event_actor"]) == item
    )
    _, immortal = jgtest.make("Dungeon-v0", variant="enemies_immortal")
    _, state = env.reset(jax.random.key(0), immortal)
    state = state.replace(pos=state.actor_pos[enemy] + jnp.array([0, -1]))
    _, state, _, _, info = step(
        jax.random.key(1),
        state,
        d.ATTACK,
        immortal.replace(enemy_move_prob=0.0, enemy_hit_prob=0.0),
    )
    # the attack kills nothing
    assert (
        not bool(info["events"]["enemy_killed"])
        and int(state.kills) == 0
        and bool(state.alive[enemy])
    )


def test_the_grid_sensor_sees_around_the_player():
    env, params = jgtest.make("Dungeon-v0")
    obs, state = env.reset(jax.random.key(0), params)
    assert obs.shape == (17, 17, 7) and env.observation_space(params).contains(obs)
    centre = 8
    switch = state.actor_pos[env.actor_ids(d.SWITCH)[0]] - state.pos  # (2, 1) from the start
    assert obs[centre + switch[0], centre + switch[1], 3] == 1.0
    assert obs[0, :, 0].all()  # beyond the map's top edge: wall


def test_the_sensor_window_is_the_padded_grid_sliced_around_any_cell():
    """``_window`` (compares on each axis) equals slicing the grid padded with ``outside``, for
    every centre, corners and edges included."""
    grid = np.random.default_rng(0).integers(0, 128, (9, 17)).astype(np.uint8)
    radius = 8
    padded = np.pad(grid, radius, constant_values=1)
    window = jax.jit(jax.vmap(lambda c: d._window(jnp.asarray(grid), c, radius, outside=1)))
    centres = np.stack(np.meshgrid(np.arange(9), np.arange(17), indexing="ij"), -1).reshape(-1, 2)
    got = np.asarray(window(jnp.asarray(centres)))
    for (r, c), cut in zip(centres, got):
        np.testing.assert_array_equal(cut, padded[r : r + 2 * radius + 1, c : c + 2 * radius + 1])


def test_random_levels_differ_and_keep_their_cast():
    env, params = jgtest.make("Dungeon-v0", variant="random_layout")
    _, states = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))(
        jax.random.split(jax.random.key(0), 16), params
    )
    walls = np.asarray(states.walls)
    assert len({w.tobytes() for w in walls}) > 10
    assert np.asarray(states.lava).any(axis=(1, 2)).all()
    types = env.actor_types
    for i in range(16):  # every actor on a free cell; the start free too
        cells = np.asarray(states.actor_pos[i])
        assert (
            not walls[i][cells[:, 0], cells[:, 1]].any()
            and not walls[i][tuple(np.asarray(states.start[i]))]
        )
        assert not np.asarray(states.lava[i])[
            cells[types != d.LAVA, 0], cells[types != d.LAVA, 1]
        ].any()
    with pytest.raises(ValueError, match="variant must be one of"):
        jgtest.make("Dungeon-v0", variant="hard")
