"""The learned navigator: DungeonNav's targets, the policy as the plan agent's navigator, and (slow)
PPO reaching 90% of the held-out plan suite on random levels."""

import jax
import numpy as np
import pytest

import jgtest
from jgtest.envs.grid import UNREACHABLE
from jgtest.errors import BadFile
from jgtest.plans import dungeon as game
from jgtest.plans.agent import run_plans
from jgtest.plans.compiled import stack_plans
from jgtest.plans.model import parse_plan
from jgtest.plans.navigation import (
    SUITE,
    NavigatorConfig,
    learned_navigator,
    load_navigator,
    plan_completion,
    train_navigator,
)


def test_navigation_targets_are_reachable_and_arrival_is_rewarded():
    env, params = jgtest.make("DungeonNav-v0")
    obs, states = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))(
        jax.random.split(jax.random.key(0), 8), params
    )
    assert obs.shape == (8, 17 * 17 * 8 + 3)
    fields = np.asarray(states.field)
    start = np.asarray(states.level.pos)
    # every target reachable from the start
    assert (fields[np.arange(8), start[:, 0], start[:, 1]] < UNREACHABLE).all()
    # steps down the walking-distance field: each shaped +0.05 - 0.01, until arrival ends the
    # episode with +1
    state = jax.tree.map(lambda x: x[0], states)
    step = jax.jit(env.step_env)
    for t in range(40):
        pos = np.asarray(state.level.pos)
        around = [
            fields[0][tuple(np.clip(pos + move, 0, [8, 16]))]
            for move in ((-1, 0), (1, 0), (0, 1), (0, -1))
        ]
        _, state, reward, done, _ = step(jax.random.key(t), state, int(np.argmin(around)), params)
        if bool(done):
            assert float(reward) == pytest.approx(1.0 + 0.05)
            break
        assert float(reward) == pytest.approx(-0.01 + 0.05)
    assert bool(done)
    # a door the episode opened stays open while the navigator walks (the switch holding it is on)
    stepped = jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, None, None)))(
        jax.random.split(jax.random.key(1), 8), states, 0, params
    )[1]
    assert np.asarray(states.level.door_open).any()
    np.testing.assert_array_equal(stepped.level.door_open, states.level.door_open)


def test_a_policy_drives_the_plan_agent():
    from jgtest.agents import ppo

    config = NavigatorConfig(hidden_sizes=(16,))
    network = ppo.make_agent(config.ppo_config()).network
    params = jax.jit(network.init)(
        jax.random.key(0),
        np.zeros(jgtest.make("DungeonNav-v0")[0].observation_space(None).shape, np.float32),
    )
    # an untrained policy drives the plan agent: the wiring, not the skill
    env, level = jgtest.make("Dungeon-v0")
    agent, trace = run_plans(
        env,
        game,
        level,
        stack_plans([parse_plan(SUITE[0])], env),
        jax.vmap(jax.random.key)(np.arange(2)),
        navigator=learned_navigator(network, params, greedy=True),
    )
    played = np.asarray(trace["action"][0])
    played = played[played >= 0]  # while the runs ran
    # the policy's moves (and waits): it never got to act
    assert played.size and ((played < 4) | (played == 7)).all()
    # the untrained policy reaches nothing: node 0 unreachable
    assert (np.asarray(agent.outcome[0]) == 3).all()
    with pytest.raises(BadFile, match="nowhere: no trained navigator"):
        load_navigator("nowhere")


@pytest.mark.slow
@pytest.mark.timeout(3600)  # 5.7 M PPO steps: about 28 minutes on 2 cores
def test_the_learned_navigator_completes_90_percent_of_held_out_plans(tmp_path):
    network, trained, metrics = train_navigator(NavigatorConfig(), tmp_path)
    _, params = load_navigator(tmp_path)
    jax.tree.map(np.testing.assert_array_equal, params, jax.device_get(trained))
    result = plan_completion(learned_navigator(network, params), seeds=100)
    assert result["learned"] >= 0.9, result
