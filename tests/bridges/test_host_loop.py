"""The host loop over a toy host game: training that keeps the episodes it played."""

import jax
import numpy as np

from jgtest import host_loop
from jgtest.agents import dqn
from jgtest.envs.wrappers import ObservationPipeline
from tests.bridges.toy_game import EPISODE, ToyGame

PIPELINE = ObservationPipeline(size=(8, 8), num_frames=4)


def test_train_dqn_records_the_episodes_it_trains_on():
    """``record`` keeps every finished episode as ``play`` returns them (RELINE's kart evaluates
    while training)."""
    game = ToyGame()
    config = dqn.lapan_config(
        "toy",
        torso="mlp",
        hidden_sizes=(16,),
        learning_starts=10,
        batch_size=4,
        buffer_size=64,
        track_coverage=False,
    )
    agent = dqn.make_agent(config, host_loop.spec_game(game, PIPELINE))
    state, stats = host_loop.train_dqn(
        agent,
        game,
        PIPELINE,
        dqn.LAPAN_HYPERPARAMS,
        jax.random.key(0),
        10_000,
        seed=7,
        max_episodes=2,
        record=(),
    )
    out = stats["episodes"]
    assert out["valid"].shape == (2, EPISODE) and out["valid"].all()
    # the autoreset step between them is not learned from
    assert int(state.timesteps) == 2 * EPISODE
    tel = out["telemetry"]
    # the toy's cell is its step
    np.testing.assert_array_equal(tel.cell, np.tile(np.arange(1, EPISODE + 1), (2, 1)))
    # its total of actions
    np.testing.assert_array_equal(tel.position[..., 1], np.cumsum(out["actions"], axis=1))
    np.testing.assert_array_equal(out["episode"], [0, 1])
    # action 1 pays 1
    np.testing.assert_allclose(stats["episode_return"], (out["actions"] == 1).sum(axis=1))
    assert (out["seed"] == 7).all()
    _, plain = host_loop.train_dqn(
        agent, game, PIPELINE, dqn.LAPAN_HYPERPARAMS, jax.random.key(0), 30, seed=7
    )
    assert "episodes" not in plain and plain["episode_return"].shape == (1,)


def test_a_game_intro_is_played_with_noops_and_not_learned_from():
    """``intro_steps`` (RELINE's package waits out Ms. Pac-Man's intro with no-ops): the first steps
    of every episode are played with the noop action, kept in the trace, and not the agent's: no
    transitions, no return, not counted in the step budget."""
    game = ToyGame()
    game.intro_steps, game.noop_action = 5, 2  # "skip": never pays
    config = dqn.lapan_config(
        "toy",
        torso="mlp",
        hidden_sizes=(16,),
        learning_starts=10,
        batch_size=4,
        buffer_size=64,
        track_coverage=False,
    )
    agent = dqn.make_agent(config, host_loop.spec_game(game, PIPELINE))
    behaviour = (lambda params, obs, key: 1, None)  # always "score" (pays 1) when the agent plays
    state, stats = host_loop.train_dqn(
        agent,
        game,
        PIPELINE,
        dqn.LAPAN_HYPERPARAMS,
        jax.random.key(0),
        10_000,
        seed=7,
        max_episodes=2,
        record=(),
        behaviour=behaviour,
    )
    out = stats["episodes"]
    assert int(state.timesteps) == 2 * (EPISODE - 5)  # only the agent's steps are transitions
    np.testing.assert_array_equal(out["actions"][:, :5], 2)  # the intro, in the trace
    np.testing.assert_array_equal(out["actions"][:, 5:], 1)
    np.testing.assert_allclose(stats["episode_return"], EPISODE - 5)  # the intro earns nothing
    played = host_loop.play(
        game, PIPELINE, lambda params, obs, key: 1, None, 1, jax.random.key(1), seed=7
    )
    np.testing.assert_array_equal(played["actions"][0], [2] * 5 + [1] * (EPISODE - 5))
