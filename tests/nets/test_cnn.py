"""Nature-DQN frame encoder."""

import flax.linen
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.nets import CNNEncoder, PatchConv, frames_to_float, image_patches

# 36x36 frames keep the tests fast: 36 -> 8 -> 3 -> 1 with the paper's VALID convolutions.
H = W = 36


@pytest.fixture(scope="module")
def encoder_and_params():
    # flax's default init compiles much faster on CPU than orthogonal (QR); the
    # orthogonal CNN is initialized in tests/nets/test_heads.py.
    enc = CNNEncoder(dense=32, orthogonal_init=False)
    params = enc.init(jax.random.key(0), jnp.zeros((H, W, 4), jnp.uint8))
    return enc, params


@pytest.mark.parametrize("lead", [(), (3,), (2, 3)])
def test_shapes_over_leading_dims(encoder_and_params, lead):
    enc, params = encoder_and_params
    out = jax.eval_shape(enc.apply, params, jax.ShapeDtypeStruct((*lead, H, W, 4), jnp.uint8))
    assert out.shape == (*lead, 32) and out.dtype == jnp.float32


def test_leading_dims_are_merged_and_restored(encoder_and_params):
    enc, params = encoder_and_params
    apply = jax.jit(enc.apply)
    frames = jax.random.uniform(jax.random.key(5), (2, 3, H, W, 4))
    np.testing.assert_allclose(
        apply(params, frames),
        apply(params, frames.reshape(6, H, W, 4)).reshape(2, 3, 32),
        rtol=1e-5,
        atol=1e-6,
    )


def test_nature_dqn_layers_on_84x84():
    enc = CNNEncoder()
    shapes = jax.eval_shape(enc.init, jax.random.key(0), jnp.zeros((84, 84, 4), jnp.uint8))[
        "params"
    ]
    assert shapes["conv_0"]["kernel"].shape == (8, 8, 4, 32)
    assert shapes["conv_1"]["kernel"].shape == (4, 4, 32, 64)
    assert shapes["conv_2"]["kernel"].shape == (3, 3, 64, 64)
    assert shapes["dense"]["kernel"].shape == (7 * 7 * 64, 512)  # 84 -> 20 -> 9 -> 7
    out = jax.eval_shape(
        lambda p, x: enc.apply({"params": p}, x), shapes, jnp.zeros((5, 84, 84, 4), jnp.uint8)
    )
    assert out.shape == (5, 512) and out.dtype == jnp.float32


def test_uint8_frames_are_scaled_by_1_over_255(encoder_and_params):
    enc, params = encoder_and_params
    apply = jax.jit(enc.apply)
    frames = jax.random.randint(jax.random.key(1), (6, H, W, 4), 0, 256).astype(jnp.uint8)
    scaled = frames.astype(jnp.float32) / 255.0
    np.testing.assert_allclose(apply(params, frames), apply(params, scaled), rtol=1e-5, atol=1e-6)
    # float frames are used as they are, not rescaled
    raw = frames.astype(jnp.float32)
    assert not np.allclose(apply(params, raw), apply(params, scaled))
    np.testing.assert_allclose(
        frames_to_float(jnp.array([0, 51, 255], jnp.uint8)), [0.0, 0.2, 1.0], rtol=1e-6
    )


def test_init_is_deterministic_and_jit_matches_eager(encoder_and_params):
    enc, params = encoder_and_params
    again = enc.init(jax.random.key(0), jnp.zeros((H, W, 4), jnp.uint8))
    jax.tree.map(np.testing.assert_array_equal, params, again)
    other = enc.init(jax.random.key(1), jnp.zeros((H, W, 4), jnp.uint8))
    assert not np.allclose(
        params["params"]["conv_0"]["kernel"], other["params"]["conv_0"]["kernel"]
    )
    frames = jax.random.uniform(jax.random.key(2), (3, H, W, 4))
    np.testing.assert_allclose(
        jax.jit(enc.apply)(params, frames), enc.apply(params, frames), rtol=1e-5, atol=1e-5
    )


def test_small_frames_need_same_padding():
    with pytest.raises(ValueError, match="too small"):
        CNNEncoder().init(jax.random.key(0), jnp.zeros((10, 10, 3)))
    enc = CNNEncoder(dense=None, padding="SAME")
    out = jax.eval_shape(enc.init, jax.random.key(0), jnp.zeros((10, 10, 3)))
    assert out["params"]["conv_2"]["kernel"].shape == (3, 3, 64, 64)
    feats = jax.eval_shape(enc.apply, out, jax.ShapeDtypeStruct((2, 10, 10, 3), jnp.float32))
    assert feats.shape == (2, 2 * 2 * 64)  # SAME: 10 -> 3 -> 2 -> 2


@pytest.mark.parametrize(
    "shape, kernel, stride, padding",
    [
        ((21, 21, 4), 3, 2, "SAME"),
        ((21, 21, 4), 3, 2, "VALID"),
        ((10, 12, 3), 4, 3, "SAME"),
        ((36, 36, 2), 8, 4, "VALID"),
    ],
)
def test_patch_conv_is_flax_conv(shape, kernel, stride, padding):
    x = jax.random.normal(jax.random.key(3), (2, *shape))
    conv = flax.linen.Conv(5, (kernel, kernel), (stride, stride), padding=padding)
    params = jax.jit(conv.init)(jax.random.key(4), x)
    patch = PatchConv(5, kernel, stride, padding)
    # same parameter tree and initialization, same outputs
    jax.tree.map(np.testing.assert_array_equal, jax.jit(patch.init)(jax.random.key(4), x), params)
    np.testing.assert_allclose(
        jax.jit(patch.apply)(params, x), jax.jit(conv.apply)(params, x), rtol=1e-5, atol=1e-5
    )


def test_image_patches_layout():
    x = jnp.arange(2 * 4 * 4 * 3, dtype=jnp.float32).reshape(2, 4, 4, 3)
    patches = image_patches(x, 2, 2, "VALID")
    assert patches.shape == (2, 2, 2, 2 * 2 * 3)
    # output (1, 0) of image 1: window rows 2-3, cols 0-1, entry (i * k + j) * C + c
    np.testing.assert_array_equal(patches[1, 1, 0].reshape(2, 2, 3), x[1, 2:4, 0:2])


def test_im2col_encoder_equals_lax_encoder(encoder_and_params):
    enc, params = encoder_and_params
    fast = CNNEncoder(dense=32, orthogonal_init=False, conv_impl="im2col")
    frames = jax.random.uniform(jax.random.key(6), (3, H, W, 4))
    np.testing.assert_allclose(
        jax.jit(fast.apply)(params, frames),
        jax.jit(enc.apply)(params, frames),
        rtol=1e-4,
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="conv_impl"):
        CNNEncoder(conv_impl="fft").init(jax.random.key(0), jnp.zeros((H, W, 4)))
