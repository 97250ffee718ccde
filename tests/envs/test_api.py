"""The game API contract, for every registered game."""

from operator import itemgetter

import jax
import numpy as np
import pytest

import jgtest
from jgtest.envs.base import BUG_KINDS
from tests.envs.api_checks import check_env_api

GAMES = jgtest.registered_games()


# DungeonNav: the Dungeon's engine
@pytest.mark.parametrize(
    "name", [pytest.param(g, marks=pytest.mark.slow) if g == "DungeonNav-v0" else g for g in GAMES]
)
def test_api_contract(name):
    env, params = jgtest.make(name)
    check_env_api(env, params)
    assert set(env.bug_kinds) <= set(BUG_KINDS)


@pytest.mark.parametrize("name", GAMES)
def test_out_of_range_action_is_refused(name):
    env, params = jgtest.make(name)
    _, state = env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match="out of range|outside"):
        env.step(jax.random.key(1), state, np.int32(env.action_space(params).n + 3), params)


def test_unknown_game_is_refused_with_suggestion():
    with pytest.raises(ValueError, match="unknown game 'BlockMaz-v0'.*Did you mean BlockMaze-v0"):
        jgtest.make("BlockMaz-v0")


def test_unknown_option_is_refused():
    with pytest.raises(ValueError, match="unknown option.*bogus"):
        jgtest.make("BlockMaze-v0", bogus=3)


def test_register_refuses_duplicates():
    with pytest.raises(ValueError, match="already registered"):
        jgtest.register("BlockMaze-v0", lambda: None)


@pytest.mark.parametrize("name", GAMES)
def test_randomize_is_jittable_and_valid(name):
    env, params = jgtest.make(name)
    keys = jax.random.split(jax.random.key(0), 3)
    batch = jax.jit(jax.vmap(env.randomize, in_axes=(0, None)))(keys, params)
    for i in range(3):
        env.validate_params(jax.tree.map(itemgetter(i), batch))
