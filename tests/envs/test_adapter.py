"""JAX games through the gymnax adapter (jgtest.adapt): gymnax's CartPole with a user's telemetry
and assertions, the checks that name a bad field, and Craftax by name."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs.adapter import AdapterError, adapt, observation_cell
from jgtest.methods import compatibility

gymnax = pytest.importorskip("gymnax")
INNER, INNER_PARAMS = gymnax.make("CartPole-v1")


def cart_telemetry(obs, state, params):
    return {
        "position": jnp.stack([state.x, state.theta]),
        "cell": jnp.clip(((state.x + 2.4) / 4.8 * 32).astype(jnp.int32), 0, 31),
    }


UPRIGHT = {"the pole leans at most 0.1 rad": lambda obs, state, params: jnp.abs(state.theta) <= 0.1}


@pytest.fixture(scope="module")
def cart():
    return adapt(
        INNER,
        INNER_PARAMS,
        cart_telemetry,
        name="cart",
        num_cells=32,
        assertions=UPRIGHT,
        max_steps_in_episode=60,
    )


def test_the_adapted_game_jits_vmaps_and_reports_telemetry(cart):
    env, params = cart
    assert env.bug_kinds == ("logical",) and env.num_actions == 2 and env.map_shape == (1, 32)
    keys = jax.random.split(jax.random.key(0), 16)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

    def walk(carry, t):
        state, seen = carry
        action = jnp.full(16, t % 7 < 5, jnp.int32)  # mostly right: the poles fall
        obs, state, reward, terminated, truncated, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None)
        )(jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, t), state, action, params)
        tel = info["telemetry"]
        return (state, seen + tel.bugs_fired[:, 0]), (tel.cell, tel.position, terminated, truncated)

    (_, fired), (cells, position, terminated, truncated) = jax.jit(
        lambda s: jax.lax.scan(walk, (s, jnp.zeros(16, jnp.int32)), jnp.arange(150))
    )(state)
    assert ((cells >= 0) & (cells < 32)).all() and len(np.unique(cells)) >= 3
    # once per episode: each falls
    assert (fired >= 1).all() and (fired <= terminated.sum(axis=0) + 1).all()
    assert terminated.any() and not (terminated & truncated).any()


def test_truncation_comes_from_the_adapters_step_count(cart):
    env, params = cart
    params = params.replace(max_steps_in_episode=5)
    obs, state = env.reset(jax.random.key(1), params)
    for t in range(5):
        obs, state, reward, terminated, truncated, info = env.step(
            jax.random.key(t), state, t % 2, params
        )
    # reset after the fifth step
    assert bool(truncated) and not bool(terminated) and int(state.time) == 0


def test_without_telemetry_the_cell_hashes_the_observation():
    env, params = jgtest.make("gymnax:CartPole-v1")
    assert (
        env.num_cells == 65_536
        and "position" not in env.signals
        and "oracle_inputs" not in env.signals
    )
    low, high = jnp.full(3, -1.0), jnp.full(3, 1.0)
    same = observation_cell(jnp.array([0.0, 0.5, -0.5]), low, high, 1000)
    # within one of the 16 levels
    assert same == observation_cell(jnp.array([0.01, 0.5, -0.5]), low, high, 1000)
    assert same != observation_cell(jnp.array([0.5, 0.5, -0.5]), low, high, 1000)
    assert compatibility.missing("wuji", "gymnax:CartPole-v1") == ("oracle_inputs",)


@pytest.mark.parametrize(
    ("telemetry", "message"),
    [
        (
            lambda o, s, p: {"position": jnp.zeros(3), "cell": 0},
            r"returned position of shape \(3,\), expected \(2,\)",
        ),
        (
            lambda o, s, p: {"position": jnp.full(2, jnp.nan), "cell": 0},
            "returned position = .*NaN or infinite",
        ),
        (lambda o, s, p: {"cell": 99}, r"returned cell 99, outside \[0, 32\)"),
        (lambda o, s, p: {"position": jnp.zeros(2)}, "must return cell"),
        (lambda o, s, p: {"cell": 0, "speed": 1.0}, "unknown field\\(s\\) speed"),
    ],
)
def test_a_bad_telemetry_function_is_refused_naming_the_field(telemetry, message):
    with pytest.raises(AdapterError, match=message):
        adapt(INNER, INNER_PARAMS, telemetry, name="cart", num_cells=32)


def test_a_continuous_game_is_refused():
    env, params = gymnax.make("Pendulum-v1")
    with pytest.raises(AdapterError, match="discrete actions"):
        adapt(env, params)


def test_craftax_by_name():
    pytest.importorskip("craftax")
    env, params = jgtest.make("craftax:Craftax-Classic-Symbolic-v1")
    assert env.map_shape == (64, 64) and env.bug_kinds == ("logical", "logical")
    assert {"position", "state_features", "oracle_inputs", "game_reward", "cells"} <= env.signals
    # one compile
    first_step = jax.jit(
        lambda key: (lambda obs, state: (obs, env.step_env(key, state, 0, params)))(
            *env.reset_env(key, params)
        )
    )
    obs, (_, state, reward, terminated, info) = first_step(jax.random.key(0))
    assert env.state_features(obs).shape == (16,) and env.state_feature_bounds(params)[1].shape == (
        16,
    )
    row, col = np.asarray(state.inner.player_position)
    assert int(info["telemetry"].cell) == row * 64 + col and not info["telemetry"].bugs_fired.any()
    with pytest.raises(ValueError, match="unknown Craftax game 'Nope'"):
        jgtest.make("craftax:Nope")


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two Craftax compilations, about 15 minutes on 2 busy cores
def test_wuji_and_ppo_run_on_craftax_from_the_command_line(tmp_path):
    pytest.importorskip("craftax")
    from jgtest.cli import main

    game = [
        "--game",
        "craftax:Craftax-Classic-Symbolic-v1",
        "--game-arg",
        "max_steps_in_episode=500",
    ]
    assert (
        main(
            [
                "run",
                "wuji",
                *game,
                "--strategy",
                "wuji",
                "--generations",
                "1",
                "--population",
                "2",
                "--steps-per-child",  # of the authors' 10,000: the game runs, the test stays short
                "1000",
                "--out",
                str(tmp_path / "wuji"),
                "--quiet",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "wuji" / "summary.json").read_text())
    assert (
        summary["bugs_total"] == 2
        and summary["env_steps"]["wuji"]["mean"] > 0
        and summary["cells_covered"]["wuji"]["mean"] > 10
    )
    assert (
        main(
            [
                "train",
                "ppo",
                *game,
                "--steps",
                "40960",
                "--set",
                "num_evals=2",  # evaluations of up to 500 steps would cost more than the training
                "--out",
                str(tmp_path / "ppo"),
                "--quiet",
            ]
        )
        == 0
    )
    trained = json.loads((tmp_path / "ppo" / "summary.json").read_text())
    assert trained["env_steps"] == 40960 and np.isfinite(trained["final_return_mean"])
