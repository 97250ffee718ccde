"""NSHArena-v0's probes (:mod:`jgtest.methods.wuji.probes`): the retreating fighter, and the reach
classes the probe table gives."""

import jax
import jax.numpy as jnp
import pytest

import jgtest
from jgtest.envs.nsh_arena import DROP, HEAL, LEAP
from jgtest.methods.wuji.probes import make_retreating_fighter, reach_classes


@pytest.mark.parametrize(
    "floor, hp, heal_cooldown, action",
    [
        (0.0, 0.2, 0.0, LEAP),  # hurt in the arena: up to a ledge
        (0.5, 0.5, 0.0, HEAL),  # on the ledge, not yet healed
        (0.5, 0.5, 1.0, 0),  # the heal cooling down: wait on the ledge
        (0.5, 0.95, 0.0, DROP),  # healed: back down to the fight
    ],
)
def test_the_retreating_fighter_heals_on_a_ledge_and_comes_back(floor, hp, heal_cooldown, action):
    env, _ = jgtest.make("NSHArena-v0")
    obs = jnp.zeros(36).at[0].set(floor).at[5].set(hp).at[17].set(heal_cooldown)
    # phase 1, the boss on another cell: a drop does not land on it
    obs = obs.at[29].set(1.0).at[3].set(0.5)
    chosen = make_retreating_fighter(env)(None, obs, jax.random.key(0))
    assert int(chosen) == action


def test_reach_classes_sort_the_bugs_by_the_probes_that_found_them():
    found = {
        "random": [True, False, False],
        "fighter": [True, True, False],
        "a2c_seed0": [False, False, False],
    }
    assert reach_classes(found) == ("start", "path", "off")
