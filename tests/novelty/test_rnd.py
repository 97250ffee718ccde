"""RND with a vmapped ensemble of predictors: the reward, learning, the buffer, bad settings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.novelty import RND, RNDConfig

SMALL = dict(
    channels=(8, 16, 16), hidden=(64, 32), buffer_size=64, batch_size=16, learning_rate=1e-3
)


def _frames(seed, n=8, size=64):
    return jax.random.randint(jax.random.key(seed), (n, size, size, 3), 0, 256).astype(jnp.uint8)


@pytest.mark.slow
def test_ensemble_reward_equals_a_loop_over_members():
    """(Each side compiled: op-by-op convolutions take seconds on CPU.)"""
    rnd = RND(RNDConfig(members=5, **SMALL))
    state = jax.jit(rnd.init)(jax.random.key(0))
    x = _frames(1)

    @jax.jit
    def looped(state, x):
        features = rnd.embed(state, x)  # the shared backbone, once
        return jnp.stack(
            [
                rnd.net.apply(jax.tree.map(lambda p, m=m: p[m], state.predictors), features)
                for m in range(5)
            ]
        )

    np.testing.assert_allclose(
        jax.jit(rnd.raw_reward)(state, x),
        jnp.var(looped(state, x), axis=0).mean(-1),
        rtol=1e-5,
        atol=1e-7,
    )
    # the original RND: whole networks
    single = RND(RNDConfig(members=1, reward="error", shared_backbone=False, **SMALL))
    s1 = jax.jit(single.init)(jax.random.key(0))
    error = jax.jit(
        lambda s, x: (
            (
                single.net.apply(jax.tree.map(lambda p: p[0], s.predictors), x)
                - single.net.apply(s.target, x)
            )
            ** 2
        ).mean(-1)
    )
    np.testing.assert_allclose(jax.jit(single.raw_reward)(s1, x), error(s1, x), rtol=1e-5)


@pytest.mark.parametrize(
    "reward, members, shared",
    [("error", 1, False), pytest.param("variance", 4, True, marks=pytest.mark.slow)],
)
def test_seen_frames_become_less_novel_than_new_ones(reward, members, shared):
    rnd = RND(RNDConfig(members=members, reward=reward, shared_backbone=shared, **SMALL))
    raw_reward = jax.jit(rnd.raw_reward)  # compiled: op-by-op convolutions take seconds on CPU
    state = jax.jit(rnd.init)(jax.random.key(0))
    seen, new = _frames(1), _frames(2)
    before = float(raw_reward(state, seen).mean())
    state = jax.jit(rnd.observe)(state, seen)
    # 150 updates in one call
    train = jax.jit(lambda state, keys: jax.lax.scan(rnd.update, state, keys)[0])
    state = train(state, jax.vmap(jax.random.key)(jnp.arange(150)))
    after_seen, after_new = (
        float(raw_reward(state, seen).mean()),
        float(raw_reward(state, new).mean()),
    )
    assert after_seen < 0.3 * before
    assert after_new > 2.0 * after_seen


def test_buffer_and_running_scale():
    rnd = RND(RNDConfig(members=2, **SMALL))
    state, observe = jax.jit(rnd.init)(jax.random.key(0)), jax.jit(rnd.observe)
    for i in range(10):  # 80 frames through a buffer of 64: the oldest are overwritten
        state = observe(state, _frames(i))
    assert int(state.filled) == 64 and int(state.cursor) == 80 % 64
    # 64 + 16 written
    np.testing.assert_array_equal(
        np.asarray(state.buffer[:16]), np.concatenate([_frames(8), _frames(9)])
    )
    raw = jax.jit(rnd.raw_reward)(state, _frames(3))
    scaled = jax.jit(rnd.reward)(state, _frames(3))
    std = np.sqrt(float(state.scale_m2) / (float(state.scale_count) - 1))
    np.testing.assert_allclose(scaled, raw / std, rtol=1e-4)


def test_update_is_a_no_op_before_any_frame_and_never_moves_the_backbone_or_target():
    rnd = RND(RNDConfig(members=2, **SMALL))
    update = jax.jit(rnd.update)
    state = jax.jit(rnd.init)(jax.random.key(0))
    after, _ = update(state, jax.random.key(1))
    for a, b in zip(jax.tree.leaves(state.predictors), jax.tree.leaves(after.predictors)):
        np.testing.assert_array_equal(a, b)
    trained, _ = update(jax.jit(rnd.observe)(state, _frames(1)), jax.random.key(1))
    assert any(
        not np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(state.predictors), jax.tree.leaves(trained.predictors))
    )
    for a, b in zip(
        jax.tree.leaves((state.backbone, state.target)),
        jax.tree.leaves((trained.backbone, trained.target)),
    ):
        np.testing.assert_array_equal(a, b)


def test_preprocess_resizes_and_masks_around_the_box():
    rnd = RND(RNDConfig(members=2, **SMALL))
    frames = jnp.zeros((2, 128, 128, 3), jnp.uint8).at[..., 0].set(200)  # pure red
    out = rnd.preprocess(
        frames, jnp.array([[0, 0, 64, 64], [0, 0, 0, 0]]), jnp.array([True, False])
    )
    assert out.shape == (2, 64, 64, 3)
    assert int(out[0, 5, 5, 0]) == 200 and int(out[0, 5, 5, 1]) == 0  # inside the box: colour
    assert int(out[0, 50, 50, 0]) == int(out[0, 50, 50, 1])  # outside: grayscale
    assert int(out[1, 5, 5, 0]) == int(out[1, 5, 5, 1])  # no object in view: all grayscale


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"members": 0}, "at least one predictor"),
        ({"buffer_size": 8, "batch_size": 16}, "must hold at least one batch"),
        ({"reward": "surprise"}, "reward must be one of"),
        ({"members": 1, "reward": "variance"}, "at least 2 members"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RNDConfig(**kwargs)
