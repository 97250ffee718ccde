"""Run by tests/scale/test_sharding.py in a process with 4 CPU devices: each batch axis (training
seeds, a campaign's games, Wuji's population) sharded over the 4 devices, then committed to one
device; prints JSON."""

import contextlib
import json
import sys
import tempfile
from pathlib import Path
from unittest import mock

import jax
import numpy as np

from jgtest import sharding
from jgtest.agents import ppo
from jgtest.agents.runner import run_training
from jgtest.agents.wuji_a2c import WujiA2CConfig
from jgtest.methods import random_testing, wuji


def _runs(one_device: bool) -> dict:
    """The three runs; with ``one_device`` every batch stays on device 0."""
    patch = mock.patch.object(
        sharding,
        "batch_mesh",
        lambda devices=None: sharding.Mesh(np.asarray(jax.devices()[:1]), (sharding.BATCH_AXIS,)),
    )
    out = Path(tempfile.mkdtemp())
    for part in ("train", "random", "wuji"):
        (out / part).mkdir()
    with patch if one_device else contextlib.nullcontext():
        config = ppo.PPOConfig(
            game="CartPoleBugs-v0",
            num_envs=4,
            num_steps=8,
            total_timesteps=4 * 8 * 4,
            hidden_sizes=(8,),
            num_evals=2,
            eval_episodes=2,
        )
        trained = run_training("ppo", config, out / "train", num_seeds=4)
        campaign = random_testing.run(
            random_testing.RandomCampaignConfig(
                game="BlockMaze-v0", num_envs=8, steps_per_env=40, chunk_steps=20
            ),
            out / "random",
        )
        tiny = WujiA2CConfig(hidden_sizes=(8, 8, 8), num_envs=4, updates_per_round=2, max_rounds=1)
        searched = wuji.device.run_on_device(
            wuji.WujiConfig(game="BlockMaze-v0", population=4, generations=1, a2c=tiny),
            out / "wuji",
        )
        plans = _plan_outcomes()
    shards = {len(leaf.sharding.device_set) for leaf in jax.tree.leaves(trained["state"].params)}
    return {
        "devices_used_by_training": sorted(shards),
        "params": [np.asarray(leaf).tolist() for leaf in jax.tree.leaves(trained["state"].params)],
        "random": {k: campaign[k] for k in ("bugs_found", "state_coverage", "env_steps")},
        "wuji": {k: searched[k] for k in ("bugs_found", "state_coverage", "env_steps")},
        "wuji_population": json.loads((out / "wuji" / "population.json").read_text()),
        "plans": plans,
    }


def _plan_outcomes() -> dict:
    """Two example plans under 4 seeds on random Dungeon levels (the seeds spread over the devices
    by ``run_plans``): each run's outcome, steps and path, and how many devices held them."""
    import jgtest
    from jgtest.plans import dungeon as game
    from jgtest.plans.agent import RunSettings, run_plans
    from jgtest.plans.compiled import stack_plans
    from jgtest.plans.model import load_plan

    env, params = jgtest.make("Dungeon-v0", variant="random_layout")
    examples = sorted((Path(__file__).parents[2] / "examples" / "plans" / "dungeon").glob("*.json"))
    plans = stack_plans([load_plan(p) for p in examples[:2]], env)
    keys = jax.vmap(jax.random.key)(np.arange(4))
    agent, trace = run_plans(env, game, params, plans, keys, RunSettings(max_steps=40))
    return {
        "devices": len(agent.outcome.sharding.device_set),
        "outcome": np.asarray(agent.outcome).tolist(),
        "steps": np.asarray(agent.steps).tolist(),
        "pos": np.asarray(trace["pos"]).tolist(),
    }


if __name__ == "__main__":
    assert jax.device_count() == 4, jax.devices()
    print(json.dumps({"sharded": _runs(False), "one_device": _runs(True)}), file=sys.stdout)
