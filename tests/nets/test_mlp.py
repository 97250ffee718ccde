"""MLP, activations and observation flattening."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.nets import MLP, flatten_obs, get_activation


@pytest.mark.parametrize("lead", [(), (5,), (2, 3)])
def test_shapes_over_leading_dims(lead):
    mlp = MLP((16, 8), "tanh", out_size=3)
    params = mlp.init(jax.random.key(0), jnp.zeros(4))
    assert mlp.apply(params, jnp.ones((*lead, 4))).shape == (*lead, 3)
    no_out = MLP((16, 8))
    params = no_out.init(jax.random.key(0), jnp.zeros(4))
    assert no_out.apply(params, jnp.ones((*lead, 4))).shape == (*lead, 8)


def test_no_layers_is_identity_as_float():
    mlp = MLP(hidden_sizes=())
    params = mlp.init(jax.random.key(0), jnp.zeros(3, jnp.int32))
    out = mlp.apply(params, jnp.array([1, 2, 3], jnp.int32))
    assert out.dtype == jnp.float32
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


def test_orthogonal_init_gains_and_zero_bias():
    mlp = MLP((32, 32), "relu", out_size=4, out_gain=0.01)
    p = mlp.init(jax.random.key(1), jnp.zeros(32))["params"]
    for name in ("hidden_0", "hidden_1"):
        w = np.asarray(p[name]["kernel"])
        np.testing.assert_allclose(w.T @ w, 2.0 * np.eye(32), atol=1e-4)  # gain sqrt(2)
        np.testing.assert_array_equal(p[name]["bias"], 0.0)
    w = np.asarray(p["out"]["kernel"])
    np.testing.assert_allclose(w.T @ w, 1e-4 * np.eye(4), atol=1e-8)  # gain 0.01
    plain = MLP((32,), orthogonal_init=False).init(jax.random.key(1), jnp.zeros(32))["params"]
    w = np.asarray(plain["hidden_0"]["kernel"])
    assert not np.allclose(w.T @ w, (w.T @ w)[0, 0] * np.eye(32), atol=1e-3)


def test_torch_init_draws_weights_and_biases_uniform_in_one_over_root_fan_in():
    # PyTorch's nn.Linear: U(±1/√fan_in) for both (RELINE's package's CEM network starts there).
    p = MLP((128,), "relu", out_size=2, torch_init=True).init(jax.random.key(2), jnp.zeros(4))[
        "params"
    ]
    for name, fan_in in (("hidden_0", 4), ("out", 128)):
        for leaf in ("kernel", "bias"):
            values, bound = np.asarray(p[name][leaf]), 1 / np.sqrt(fan_in)
            assert np.abs(values).max() <= bound and (values != 0).all(), (name, leaf)
            if values.size >= 100:  # a uniform's spread: near the bound, sd bound/√3
                assert (
                    np.abs(values).max() > 0.9 * bound
                    and abs(values.std() - bound / np.sqrt(3)) < 0.15 * bound
                ), (name, leaf)


def test_init_is_deterministic_in_the_key():
    mlp = MLP((8,), out_size=2)
    a = mlp.init(jax.random.key(3), jnp.zeros(4))
    b = mlp.init(jax.random.key(3), jnp.zeros(4))
    c = mlp.init(jax.random.key(4), jnp.zeros(4))
    jax.tree.map(np.testing.assert_array_equal, a, b)
    assert not np.allclose(a["params"]["hidden_0"]["kernel"], c["params"]["hidden_0"]["kernel"])


def test_jit_matches_eager():
    mlp = MLP((16, 16), "relu", out_size=2)
    params = mlp.init(jax.random.key(0), jnp.zeros(4))
    x = jax.random.normal(jax.random.key(1), (6, 4))
    np.testing.assert_allclose(
        jax.jit(mlp.apply)(params, x), mlp.apply(params, x), rtol=1e-6, atol=1e-6
    )


def test_activations_by_name():
    assert get_activation("relu")(jnp.array(-1.0)) == 0.0
    assert math.isclose(float(get_activation("tanh")(jnp.array(0.5))), math.tanh(0.5), rel_tol=1e-6)
    with pytest.raises(ValueError, match="unknown activation 'nope'"):
        get_activation("nope")
    with pytest.raises(ValueError, match="unknown activation"):
        MLP((4,), "nope").init(jax.random.key(0), jnp.zeros(2))


def test_flatten_obs():
    grid = jnp.arange(2 * 3 * 4 * 5 * 3).reshape(2, 3, 4, 5, 3)
    flat = flatten_obs(grid, 3)
    assert flat.shape == (2, 3, 60) and flat.dtype == jnp.float32
    np.testing.assert_array_equal(flat[1, 2], np.asarray(grid[1, 2]).reshape(-1))
    assert flatten_obs(jnp.zeros((4, 5, 3)), 3).shape == (60,)
    assert flatten_obs(jnp.zeros((7, 4)), 1).shape == (7, 4)
    with pytest.raises(ValueError, match="fewer than obs_ndim"):
        flatten_obs(jnp.zeros((4, 5)), 3)
    with pytest.raises(ValueError, match="obs_ndim must be >= 1"):
        flatten_obs(jnp.zeros(3), 0)


def test_flatten_obs_scales_uint8_pixels_to_unit_range():
    pixels = jnp.array([[[0, 51], [204, 255]]], jnp.uint8)
    np.testing.assert_allclose(flatten_obs(pixels, 2), [[0.0, 0.2, 0.8, 1.0]], rtol=1e-6)
    # only uint8 is pixels
    np.testing.assert_array_equal(flatten_obs(jnp.array([[0, 51]], jnp.int32), 1), [[0.0, 51.0]])
