"""Wrappers: episode statistics, frame stacking, grayscale/resize, OD mask."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs.wrappers import (
    DrawFrames,
    EpisodeStatistics,
    FrameStack,
    GrayscaleResize,
    ODMask,
)
from jgtest.frames import grayscale, od_mask, resize

MAZE, MAZE_PARAMS = jgtest.make("BlockMaze-v0", max_steps_in_episode=6)


def _run(env, params, actions, state=None):
    """Steps ``env`` through ``actions`` in one scan; returns the stacked outputs."""
    if state is None:
        _, state = env.reset(jax.random.key(0), params)

    def body(state, xs):
        k, a = xs
        obs, state, reward, term, trunc, info = env.step(k, state, a, params)
        return state, (obs, reward, term, trunc, info)

    keys = jax.random.split(jax.random.key(1), len(actions))
    return jax.jit(lambda s: jax.lax.scan(body, s, (keys, jnp.asarray(actions))))(state)


def test_episode_statistics_counts_return_length_bugs_and_cells():
    env = EpisodeStatistics(MAZE)
    # Start (1,1): S, S -> (3,1) is bug 'b' at row 3 col 1; then E, E, W, W.
    actions = [1, 1, 2, 2, 3, 3, 1]
    _, (obs, reward, term, trunc, info) = _run(env, MAZE_PARAMS, actions)
    np.testing.assert_array_equal(np.asarray(info["episode_length"][:6]), [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(np.asarray(info["episode_bugs"][:6]), [0, 1, 1, 1, 1, 1])
    # Cells: (2,1), (3,1), (3,2), (3,3), (3,2), (3,1) -> 4 distinct.
    np.testing.assert_array_equal(np.asarray(info["episode_cells"][:6]), [1, 2, 3, 4, 4, 4])
    assert (
        bool(trunc[5])
        and bool(info["returned_episode"][5])
        and not bool(info["returned_episode"][4])
    )
    np.testing.assert_allclose(float(info["returned_episode_return"][5]), -0.06, rtol=1e-5)
    assert int(info["returned_episode_length"][5]) == 6
    assert (
        int(info["returned_episode_bugs"][5]) == 1 and int(info["returned_episode_cells"][5]) == 4
    )
    # The next episode starts from zero.
    assert int(info["episode_length"][6]) == 1 and int(info["episode_bugs"][6]) == 0


def test_episode_statistics_passes_attributes_through():
    env = EpisodeStatistics(MAZE)
    assert env.num_bugs == MAZE.num_bugs and env.bug_kinds == MAZE.bug_kinds


def test_frame_stack_shifts_and_refills_after_reset():
    env, params = jgtest.make("CartPoleBugs-v0")
    stacked = FrameStack(env, num_frames=3)
    assert stacked.observation_space(params).shape == (12,)
    obs0, state = stacked.reset(jax.random.key(0), params)
    np.testing.assert_array_equal(
        np.asarray(obs0).reshape(3, 4), np.tile(np.asarray(obs0[:4]), (3, 1))
    )
    _, (obs, _, term, trunc, info) = _run(stacked, params, [1, 1, 0, 0, 1], state)
    frames = np.asarray(obs).reshape(5, 3, 4)
    np.testing.assert_array_equal(frames[1, 1], frames[0, 2])  # previous newest is now middle
    np.testing.assert_array_equal(frames[2, 0], frames[0, 2])
    np.testing.assert_array_equal(frames[2], np.asarray(info["final_observation"][2]).reshape(3, 4))
    # An ending step refills with the reset frame.
    state = state.replace(
        env_state=state.env_state.replace(x=jnp.float32(2.39), x_dot=jnp.float32(3.0))
    )
    obs, _, _, term, _, _ = jax.jit(stacked.step)(jax.random.key(3), state, 1, params)
    assert bool(term)
    np.testing.assert_array_equal(
        np.asarray(obs).reshape(3, 4)[0], np.asarray(obs).reshape(3, 4)[2]
    )


def test_frame_stack_rejects_bad_count():
    with pytest.raises(ValueError, match="num_frames"):
        FrameStack(MAZE, num_frames=0)


def test_grayscale_uses_bt601_luma():
    frame = jnp.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]], jnp.uint8)
    np.testing.assert_array_equal(
        np.asarray(grayscale(frame)), [[76, 150, 29, round(0.299 * 10 + 0.587 * 20 + 0.114 * 30)]]
    )


def test_resize_keeps_constant_images_and_dtype():
    frame = jnp.full((84, 84), 100, jnp.uint8)
    out = resize(frame, (42, 21))
    assert out.shape == (42, 21) and out.dtype == jnp.uint8
    assert np.all(np.asarray(out) == 100)
    ramp = jnp.tile(jnp.arange(8, dtype=jnp.float32), (8, 1))
    half = np.asarray(resize(ramp, (4, 4)))
    assert np.all(np.diff(half, axis=1) > 0)  # order is preserved by downsampling


def test_od_mask_keeps_colour_only_inside_the_box():
    frame = jnp.zeros((6, 8, 3), jnp.uint8).at[..., 0].set(200)
    out = np.asarray(od_mask(frame, jnp.array([1, 2, 3, 5])))
    np.testing.assert_array_equal(out[1:3, 2:5], np.asarray(frame[1:3, 2:5]))
    gray = round(0.299 * 200)
    assert np.all(out[0] == gray) and np.all(out[:, :2] == gray) and np.all(out[3:] == gray)


PAC_CELLS, PAC_PARAMS = jgtest.make("PacMaze-v0")
PAC = DrawFrames(PAC_CELLS)


def test_draw_frames_draws_the_observation_and_the_final_one():
    obs, state = PAC.reset(jax.random.key(0), PAC_PARAMS)
    cells, _ = PAC_CELLS.reset(jax.random.key(0), PAC_PARAMS)
    assert PAC.observation_space(PAC_PARAMS).shape == (84, 84, 3)
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(PAC_CELLS.draw(cells)))
    obs, _, _, _, _, info = PAC.step(jax.random.key(1), state, 1, PAC_PARAMS)
    assert obs.shape == info["final_observation"].shape == (84, 84, 3)
    with pytest.raises(ValueError, match="DrawFrames needs a game that draws"):
        DrawFrames(jgtest.make("CartPoleBugs-v0")[0])
    with pytest.raises(ValueError, match="wrap the game in DrawFrames first"):
        GrayscaleResize(PAC_CELLS)


def test_grayscale_resize_and_od_mask_wrappers_on_pacmaze_pixels():
    small = GrayscaleResize(PAC, size=(42, 42))
    assert small.observation_space(PAC_PARAMS).shape == (42, 42, 1)
    obs, state = small.reset(jax.random.key(0), PAC_PARAMS)
    full, _ = PAC.reset(jax.random.key(0), PAC_PARAMS)
    assert obs.shape == (42, 42, 1) and obs.dtype == jnp.uint8
    np.testing.assert_allclose(float(obs.mean()), float(grayscale(full).mean()), atol=1.0)
    obs, *_ = small.step(jax.random.key(1), state, 1, PAC_PARAMS)
    assert small.observation_space(PAC_PARAMS).contains(obs)
    stacked = FrameStack(small, num_frames=4)
    assert stacked.reset(jax.random.key(0), PAC_PARAMS)[0].shape == (42, 42, 4)
    masked = ODMask(PAC, box=(0, 0, 20, 20))
    obs, _ = masked.reset(jax.random.key(0), PAC_PARAMS)
    np.testing.assert_array_equal(np.asarray(obs[:20, :20]), np.asarray(full[:20, :20]))
    np.testing.assert_array_equal(
        np.asarray(obs[40:, 40:, 0]), np.asarray(grayscale(full)[40:, 40:])
    )
    with pytest.raises(ValueError, match="not inside"):
        ODMask(PAC, box=(0, 0, 90, 8))


PIXEL_CELLS, PIXEL_PARAMS = jgtest.make("PacMaze-v0", cell_px=1, max_steps_in_episode=3)
PIXELS = DrawFrames(PIXEL_CELLS)


def test_observation_wrappers_transform_the_final_observation():
    """At a truncated step, ``final_observation`` is the wrapped frame the episode
    ended on (stacked, grayscale, masked), not the game's raw RGB frame."""
    gray = GrayscaleResize(PIXELS)
    stacked = FrameStack(gray, num_frames=4)
    masked = ODMask(PIXELS, (2, 2, 10, 10))
    _, state = PIXELS.reset(jax.random.key(0), PIXEL_PARAMS)
    _, (raw_obs, _, _, _, raw_info) = _run(PIXELS, PIXEL_PARAMS, [3, 3, 3], state)
    for env, transform in (
        (gray, gray._convert),
        (masked, lambda f: od_mask(f, jnp.asarray(masked.box))),
    ):
        _, (obs, _, _, trunc, info) = _run(env, PIXEL_PARAMS, [3, 3, 3], state)
        assert bool(trunc[2])
        np.testing.assert_array_equal(
            np.asarray(info["final_observation"][2]),
            np.asarray(transform(raw_info["final_observation"][2])),
        )
        assert info["final_observation"].shape == obs.shape
    _, fs_state = stacked.reset(jax.random.key(0), PIXEL_PARAMS)
    fs_state = fs_state.replace(env_state=state)  # same start as the raw run
    frames0 = np.asarray(gray._convert(PIXELS.draw(PIXELS.get_obs(state, PIXEL_PARAMS))))
    fs_state = fs_state.replace(frames=jnp.asarray(np.repeat(frames0, 4, axis=-1)))
    _, (obs, _, _, trunc, info) = _run(stacked, PIXEL_PARAMS, [3, 3, 3], fs_state)
    final = np.asarray(info["final_observation"][2])
    assert final.shape == (42, 42, 4) and bool(trunc[2])
    gray_frames = [np.asarray(gray._convert(raw_obs[t]))[..., 0] for t in range(2)]
    expected = np.stack(
        [
            frames0[..., 0],
            *gray_frames,
            np.asarray(gray._convert(raw_info["final_observation"][2]))[..., 0],
        ],
        -1,
    )
    np.testing.assert_array_equal(final, expected)
    # The observation after the auto-reset is the new episode's first frame, repeated.
    assert (np.asarray(obs[2]) == np.asarray(obs[2])[..., :1]).all()


def test_dqn_on_a_stacked_pixel_game_bootstraps_truncation_from_the_stacked_final_frame():
    from jgtest.agents import dqn

    game = (FrameStack(GrayscaleResize(PIXELS), 4), PIXEL_PARAMS)
    config = dqn.DQNConfig(
        game="PacMaze-v0",
        num_envs=1,
        total_timesteps=12,
        buffer_size=16,
        batch_size=4,
        learning_starts=4,
        train_interval=1,
        target_update_interval=4,
        num_evals=1,
        eval_episodes=1,
        torso="cnn",
        cnn_layers=((4, 3, 2),),
        cnn_dense=8,
        cnn_padding="SAME",
    )
    state, metrics = jax.jit(dqn.make_train(config, game))(jax.random.key(0))
    exp = jax.device_get(state.buffer.experience)
    # 12 transitions, episodes of 3 steps
    obs, next_obs = exp["obs"][0, :12], exp["next_obs"][0, :12]
    assert next_obs.shape == (12, 42, 42, 4)
    for t in range(11):
        if (t + 1) % 3:  # inside an episode: next_obs is the next step's obs
            np.testing.assert_array_equal(next_obs[t], obs[t + 1])
        else:  # truncated: the stacked final frame continues obs[t], not the reset frame obs[t + 1]
            np.testing.assert_array_equal(next_obs[t][..., :3], obs[t][..., 1:])
            assert not np.array_equal(next_obs[t], obs[t + 1])
    assert float(metrics["loss"][0]) > 0
