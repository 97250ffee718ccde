"""Agents: tiny-config runs of every algorithm, vmap over seeds and hyperparameters,
no recompilation, bad configs refused before compiling, host-loop (step-wise) use."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.agents import ActOutput, Agent, a2c, algorithm, cem, dqn, make_config, ppo, random_agent
from jgtest.agents.common import make_game

TINY = {
    "ppo": ppo.PPOConfig(
        num_envs=2,
        num_steps=16,
        total_timesteps=2 * 16 * 2 * 2,
        num_evals=2,
        eval_episodes=2,
        num_minibatches=2,
        update_epochs=2,
    ),
    "a2c": a2c.A2CConfig(
        num_envs=2, num_steps=5, total_timesteps=2 * 5 * 3 * 2, num_evals=2, eval_episodes=2
    ),
    "dqn": dqn.DQNConfig(
        num_envs=2,
        total_timesteps=2 * 40 * 2,
        buffer_size=64,
        batch_size=8,
        learning_starts=16,
        train_interval=2,
        target_update_interval=20,
        num_evals=2,
        eval_episodes=2,
    ),
    "cem": cem.CEMConfig(episodes_per_iter=4, num_iterations=2, num_evals=2, eval_episodes=2),
    "random": random_agent.RandomConfig(num_evals=2, eval_episodes=2),
}


@functools.cache
def _agent(name):
    module, _, _ = algorithm(name)
    return module.make_agent(TINY[name])


@functools.cache
def _train_fn(name):
    return jax.jit(jax.vmap(_agent(name).train))


@functools.cache
def _trained(name):
    """Two seeds vmapped, with the algorithm's default hyperparameters."""
    return jax.device_get(_train_fn(name)(jax.random.split(jax.random.key(0), 2)))


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_run_reports_finite_metrics_for_each_seed(name):
    _, metrics = _trained(name)
    assert metrics["eval_return_mean"].shape == (2, 2)  # seeds x evaluations
    for value in metrics.values():
        assert np.isfinite(np.asarray(value, float)).all()
    assert (metrics["eval_return_mean"] > 0).all()  # CartPole pays 1 per step
    steps = metrics["env_steps"]
    assert (np.diff(steps, axis=1) > 0).all()
    if hasattr(TINY[name], "env_steps"):
        assert steps[0, -1] == TINY[name].env_steps


@pytest.mark.parametrize("name", ["ppo", "dqn", "cem"])
def test_seeds_differ_and_same_seed_repeats(name):
    _, metrics = _trained(name)
    _, again = jax.device_get(_train_fn(name)(jax.random.split(jax.random.key(0), 2)))
    np.testing.assert_array_equal(metrics["eval_return_mean"], again["eval_return_mean"])
    first = _trained(name)[0].params
    leaves = jax.tree.leaves(first)
    assert any(not np.array_equal(leaf[0], leaf[1]) for leaf in leaves), (
        "two seeds gave identical networks"
    )


@pytest.mark.slow
def test_vmap_over_hyperparameters_sweeps_learning_rates():
    agent = _agent("ppo")
    hparams = jax.tree.map(lambda x: jnp.full((3,), x), ppo.PPOHyperparams())
    hparams = hparams.replace(learning_rate=jnp.array([0.0, 1e-3, 3e-3]))
    state, _ = jax.jit(jax.vmap(agent.train, in_axes=(None, 0)))(jax.random.key(1), hparams)
    init = agent.init(jax.random.key(1))
    moved = [
        max(
            float(jnp.max(jnp.abs(a[i] - b)))
            for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(init.params))
        )
        for i in range(3)
    ]
    assert moved[0] == 0.0 and 0.0 < moved[1] < moved[2]


def test_period_does_not_recompile():
    agent = _agent("ppo")

    @jax.jit
    @chex.assert_max_traces(n=1)
    def period(state):
        return agent.period(state)

    # compiled: eager initialisation dispatches op by op
    state = jax.jit(agent.init)(jax.random.key(0))
    for _ in range(3):
        state, _ = period(state)
    chex.clear_trace_counter()


def test_act_and_update_do_not_recompile_in_a_host_loop():
    """The step-wise form: a host loop collects with ``act`` and learns with ``update``."""
    agent = _agent("ppo")
    state = agent.init(jax.random.key(0))
    learner = agent.init_learner(jax.random.key(1), state.obs)
    assert learner.env_state is None and learner.update == 0
    obs = np.asarray(state.obs)
    from jgtest.types import Transition

    for it in range(2):
        steps = []
        for t in range(TINY["ppo"].num_steps):
            action, log_prob, value = agent.act(learner.params, obs, jax.random.key(100 * it + t))
            next_obs = obs + 0.01  # a stand-in for a bridged game's batch
            steps.append(
                Transition(
                    obs,
                    action,
                    np.ones(2, np.float32),
                    np.zeros(2, bool),
                    np.zeros(2, bool),
                    next_obs,
                    value,
                    log_prob,
                )
            )
            obs = next_obs
        traj = jax.tree.map(lambda *x: jnp.stack(x), *steps)
        before = learner.params
        learner, metrics = agent.update(learner, traj, jax.random.key(it), ppo.PPOHyperparams())
        assert np.isfinite(float(metrics["loss"])) and int(learner.update) == it + 1
        assert not all(
            np.array_equal(a, b)
            for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(learner.params))
        )
    assert agent.act._cache_size() == 1 and agent.update._cache_size() == 1


def _batch_for(name, obs):
    """A batch of three of ``name``'s kind for ``update`` (on-policy rollouts are covered above)."""
    n = obs.shape[0]
    if name == "dqn":
        return {
            "obs": obs,
            "action": jnp.zeros(n, jnp.int32),
            "reward": jnp.ones(n),
            "terminated": jnp.zeros(n, bool),
            "next_obs": obs,
        }
    if name == "cem":
        return cem.Episodes(
            obs[:, None],
            jnp.zeros((n, 1), jnp.int32),
            jnp.ones((n, 1)),
            jnp.arange(n, dtype=jnp.float32),
        )
    return None


@pytest.mark.parametrize("name", sorted(TINY))
def test_every_agent_has_the_one_interface(name):
    """Every algorithm returns an :class:`jgtest.agents.Agent`: ``act`` gives each observation an
    action, its log-probability and a value; ``init_learner`` makes a learner without a game, which
    ``update`` advances by the batch's steps."""
    agent = _agent(name)
    assert isinstance(agent, Agent)
    env, env_params, _ = make_game(agent.config)
    obs = jnp.zeros((3, *env.observation_space(env_params).shape))
    learner = agent.init_learner(jax.random.key(0), obs)
    out = agent.act(getattr(learner, "params", None), obs, jax.random.key(1))
    assert isinstance(
        out, ActOutput
    ) and out.action.shape == out.log_prob.shape == out.value.shape == (3,)
    assert np.all(
        (np.asarray(out.action) >= 0) & (np.asarray(out.action) < env.action_space(env_params).n)
    )
    assert np.all(np.asarray(out.log_prob) <= 0) and np.all(np.isfinite(np.asarray(out.log_prob)))
    if name in ("dqn", "cem", "random"):
        after, _ = agent.update(learner, _batch_for(name, obs), jax.random.key(2))
        assert jax.tree.structure(after) == jax.tree.structure(learner)
        steps = {
            "dqn": lambda s: s.timesteps,
            "cem": lambda s: s.env_steps,
            "random": lambda s: s.env_steps,
        }[name]
        assert int(steps(after)) == {"dqn": 3, "cem": 3, "random": 0}[name]


@pytest.mark.parametrize(
    "name, fields, message",
    [
        ("ppo", {"total_timesteps": -5}, "total_timesteps must be a positive integer"),
        ("ppo", {"num_minibatches": 3}, "num_minibatches=3 does not divide the batch"),
        ("dqn", {"batch_size": 512, "buffer_size": 100}, "larger than buffer_size"),
        ("cem", {"num_iterations": 7, "num_evals": 2}, "does not divide num_iterations"),
        ("a2c", {"total_timesteps": 10}, "too small"),
    ],
)
def test_bad_configs_are_refused_before_compiling(name, fields, message):
    with pytest.raises(ValueError, match=message):
        make_config(name, **fields)


def test_unknown_algorithm_game_or_field_is_refused():
    with pytest.raises(ValueError, match="unknown algorithm 'ppp'. Did you mean ppo"):
        algorithm("ppp")
    with pytest.raises(ValueError, match="unknown game"):
        ppo.make_agent(ppo.PPOConfig(game="NoSuchGame-v0"))
    with pytest.raises(ValueError, match="unknown config field"):
        make_config("ppo", learning_rat=0.1)
