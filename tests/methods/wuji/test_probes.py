"""NSHArena-v0's probes (:mod:`jgtest.methods.wuji.probes`): the retreating fighter, and the reach
classes the probe table gives."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jgtest
from jgtest.envs.nsh_arena import DROP, HEAL, LEAP, REACH_CLASSES
from jgtest.methods.wuji.probes import make_retreating_fighter, reach_classes

TABLE = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "nsh_probes.json"


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


def test_the_games_reach_classes_are_the_probe_tables():
    """``REACH_CLASSES`` are what the committed probe table (``benchmarks/nsh_probes.py``, plain
    A2C among its probes) gives: a class is never set by hand."""
    table = json.loads(TABLE.read_text())
    assert not table["quick"] and any(name.startswith("a2c") for name in table["probes"])
    found = {name: [s >= 0 for s in row["first_found"]] for name, row in table["probes"].items()}
    assert reach_classes(found) == REACH_CLASSES == tuple(table["derived_reach_classes"])
