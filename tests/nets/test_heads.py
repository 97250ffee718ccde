"""ActorCritic, QNetwork, PolicyNetwork."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.nets import ActorCritic, PolicyNetwork, QNetwork

LEADS = [(), (5,), (2, 3)]


def _init(net, obs):
    return net.init(jax.random.key(0), obs)


@pytest.fixture(scope="module")
def mlp_ac():
    net = ActorCritic(num_actions=3)
    return net, _init(net, jnp.zeros(4))


@pytest.fixture(scope="module")
def cnn_ac():
    net = ActorCritic(num_actions=5, torso="cnn", obs_ndim=3)
    return net, jax.jit(net.init)(jax.random.key(0), jnp.zeros((36, 36, 3), jnp.uint8))


def _shapes(net, obs_shape, lead, dtype=jnp.float32):
    """Param and output shapes by abstract evaluation (no compilation)."""
    params = jax.eval_shape(net.init, jax.random.key(0), jax.ShapeDtypeStruct(obs_shape, dtype))
    out = jax.eval_shape(net.apply, params, jax.ShapeDtypeStruct((*lead, *obs_shape), dtype))
    return params["params"], jax.tree.map(lambda x: x.shape, out)


@pytest.mark.parametrize("lead", LEADS)
def test_actor_critic_shapes(lead):
    _, out = _shapes(ActorCritic(num_actions=3), (4,), lead)
    assert out == ((*lead, 3), lead)
    _, out = _shapes(
        ActorCritic(num_actions=5, torso="cnn", obs_ndim=3), (84, 84, 4), lead, jnp.uint8
    )
    assert out == ((*lead, 5), lead)


def test_actor_critic_flattens_grid_observations():
    net = ActorCritic(num_actions=4, hidden_sizes=(8,), obs_ndim=3)
    params, out = _shapes(net, (6, 6, 3), (2, 7))
    assert params["actor"]["hidden_0"]["kernel"].shape == (108, 8)
    assert out == ((2, 7, 4), (2, 7))
    # (flatten_obs keeps each observation's values together: tests/nets/test_mlp.py)


def test_actor_critic_mlp_torsos_are_separate_with_ppo_init(mlp_ac):
    net, params = mlp_ac
    p = params["params"]
    assert set(p) == {"actor", "critic"}
    assert p["actor"]["hidden_0"]["kernel"].shape == (4, 64) and p["actor"]["hidden_1"][
        "kernel"
    ].shape == (64, 64)
    w = np.asarray(p["actor"]["hidden_1"]["kernel"])
    np.testing.assert_allclose(w.T @ w, 2.0 * np.eye(64), atol=1e-4)  # gain sqrt(2)
    w = np.asarray(p["actor"]["out"]["kernel"])
    np.testing.assert_allclose(w.T @ w, 1e-4 * np.eye(3), atol=1e-8)  # policy head gain 0.01
    w = np.asarray(p["critic"]["out"]["kernel"])
    np.testing.assert_allclose(w.T @ w, np.eye(1), atol=1e-5)  # value head gain 1
    # the policy does not depend on the critic's parameters
    obs = jax.random.normal(jax.random.key(1), (8, 4))
    grads = jax.jit(jax.grad(lambda q: net.apply(q, obs)[0].sum()))(params)
    assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree.leaves(grads["params"]["critic"]))


def test_initial_policy_is_near_uniform(mlp_ac, cnn_ac):
    net, params = mlp_ac
    obs = 3.0 * jax.random.normal(jax.random.key(2), (64, 4))
    logits, _ = jax.jit(net.apply)(params, obs)
    # tanh features have norm <= 8 and the head's norm is 0.01: |logits| <= 0.08
    assert float(jnp.abs(logits).max()) <= 0.08
    probs = jax.nn.softmax(logits)
    np.testing.assert_allclose(probs, 1.0 / 3.0, atol=0.03)
    # CNN torso: an orthogonal policy head of gain 0.01 and zero bias, so |logits| <= 0.01 *
    # |features|
    _, params = cnn_ac
    head = params["params"]["actor_head"]
    w = np.asarray(head["kernel"])
    assert w.shape == (512, 5)
    np.testing.assert_allclose(w.T @ w, 1e-4 * np.eye(5), atol=1e-8)
    np.testing.assert_array_equal(head["bias"], 0.0)
    w = np.asarray(params["params"]["critic_head"]["kernel"])
    np.testing.assert_allclose(w.T @ w, np.eye(1), atol=1e-5)


@pytest.mark.parametrize("lead", LEADS)
def test_q_network_shapes_and_sizes(lead):
    p, out = _shapes(QNetwork(num_actions=2), (4,), lead)
    assert out == (*lead, 2)
    assert p["mlp"]["hidden_0"]["kernel"].shape == (4, 120) and p["mlp"]["hidden_1"][
        "kernel"
    ].shape == (120, 84)
    assert p["mlp"]["out"]["kernel"].shape == (84, 2)
    p, out = _shapes(QNetwork(num_actions=5, torso="cnn", obs_ndim=3), (84, 84, 4), lead, jnp.uint8)
    assert out == (*lead, 5)
    assert p["encoder"]["dense"]["kernel"].shape == (3136, 512) and p["q_head"]["kernel"].shape == (
        512,
        5,
    )


def test_cnn_torso_accepts_single_channel_frames():
    p, out = _shapes(QNetwork(num_actions=3, torso="cnn", obs_ndim=2), (36, 36), (4,))
    assert p["encoder"]["conv_0"]["kernel"].shape == (8, 8, 1, 32)
    assert out == (4, 3)


@pytest.mark.parametrize("lead", LEADS)
def test_policy_network_shapes(lead):
    p, out = _shapes(PolicyNetwork(num_actions=2), (4,), lead)
    assert out == (*lead, 2)
    assert p["mlp"]["hidden_0"]["kernel"].shape == (4, 128) and "hidden_1" not in p["mlp"]
    p, out = _shapes(PolicyNetwork(num_actions=4, obs_ndim=3), (5, 5, 3), lead)
    assert out == (*lead, 4) and p["mlp"]["hidden_0"]["kernel"].shape == (75, 128)


def _assert_trees_equal(a, b):
    jax.tree.map(np.testing.assert_array_equal, a, b)


def _differs(a, b):
    return any(not np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def test_init_is_deterministic_in_the_key(mlp_ac):
    net, params = mlp_ac
    _assert_trees_equal(net.init(jax.random.key(0), jnp.zeros(4)), params)
    assert _differs(net.init(jax.random.key(1), jnp.zeros(4)), params)
    for other in (QNetwork(3), PolicyNetwork(3)):
        init = jax.jit(other.init)
        a = init(jax.random.key(7), jnp.zeros(4))
        _assert_trees_equal(a, init(jax.random.key(7), jnp.zeros(4)))
        assert _differs(a, init(jax.random.key(8), jnp.zeros(4)))


def test_jit_matches_eager(mlp_ac):
    net, params = mlp_ac
    batch = jax.random.normal(jax.random.key(9), (2, 6, 4))
    jax.tree.map(
        lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6),
        jax.jit(net.apply)(params, batch),
        net.apply(params, batch),
    )


def test_unknown_torso_is_refused():
    with pytest.raises(ValueError, match="torso must be one of"):
        ActorCritic(2, torso="rnn").init(jax.random.key(0), jnp.zeros(4))
    with pytest.raises(ValueError, match="torso must be one of"):
        QNetwork(2, torso="rnn").init(jax.random.key(0), jnp.zeros(4))
