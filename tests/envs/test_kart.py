"""KartTrack: RELINE's path_done / centering, game reward, render-cost field and bugs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.envs.kart import (
    VIEW_RANGE,
    KartTrack,
    game_reward,
    make_track,
    render_cost,
    scenery_cost,
    spot_in_view,
    track_coordinates,
    track_heading,
    track_point,
    view_cost,
)
from jgtest.methods.reline.kart_probes import driver_action

ENV = KartTrack()
PARAMS = ENV.default_params
L = ENV.track_length
STEP = jax.jit(ENV.step_env)
STEPS = 225


@jax.jit
def _drive(params, key, mode):
    """Scans STEPS steps of ``step_env`` from reset; ``mode`` < 0: the scripted driver, else
    that constant action."""
    obs, state = ENV.reset_env(key, params)

    def body(carry, k):
        obs, state = carry
        action = jnp.where(mode < 0, driver_action(obs), mode)
        obs, state, reward, term, info = ENV.step_env(k, state, action, params)
        return (obs, state), (state, reward, term, info["telemetry"])

    return jax.lax.scan(body, (obs, state), jax.random.split(key, STEPS))[1]


@pytest.fixture(scope="module")
def lap():
    return jax.tree.map(np.asarray, _drive(PARAMS, jax.random.key(0), -1))


def test_coordinates_on_a_hand_made_circle():
    # Counter-clockwise circle of radius 100: the right of the driving direction is outside.
    t = np.linspace(0, 2 * np.pi, 4000, endpoint=False)
    track = make_track(100 * np.stack([np.cos(t), np.sin(t)], 1), 720)
    length = float(track.length)
    assert length == pytest.approx(2 * np.pi * 100, rel=1e-4)
    arc, c = track_coordinates(track, jnp.array([110.0, 0.0]))
    assert float(c) == pytest.approx(10.0, abs=1e-2) and min(float(arc), length - float(arc)) < 1e-2
    # A quarter lap, 10 to the left (the polygon's half-vertex angle moves the foot by ~0.04).
    arc, c = track_coordinates(track, jnp.array([0.0, 90.0]))
    assert float(c) == pytest.approx(-10.0, abs=1e-2) and float(arc) == pytest.approx(
        length / 4, abs=0.1
    )
    arc, c = track_coordinates(track, jnp.array([-100.0, 0.0]))
    assert float(c) == pytest.approx(0.0, abs=1e-2) and float(arc) == pytest.approx(
        length / 2, abs=0.1
    )


def test_centreline_has_zero_centering_and_offsets_are_signed():
    track = PARAMS.track
    s = jnp.linspace(0.0, L, 97, endpoint=False)
    coords = jax.jit(jax.vmap(lambda s, c: track_coordinates(track, track_point(track, s, c))))
    arc, c = coords(s, jnp.zeros_like(s))
    np.testing.assert_allclose(np.asarray(c), 0.0, atol=1e-3)
    np.testing.assert_allclose(np.asarray(arc), np.asarray(s), atol=1e-2)
    # Right-hand normal built by hand from a segment's direction (x right, y up).
    p = np.asarray(track.points)
    for i in (0, 100, 333):
        d = p[i + 1] - p[i]
        right = np.array([d[1], -d[0]]) / np.linalg.norm(d)
        mid = 0.5 * (p[i] + p[i + 1])
        for offset in (7.0, -12.0):
            arc, c = track_coordinates(track, jnp.asarray(mid + offset * right))
            assert float(c) == pytest.approx(offset, abs=1e-2)
            assert float(arc) == pytest.approx(
                float(track.cum[i]) + 0.5 * np.linalg.norm(d), abs=1e-2
            )


def test_a_lap_adds_the_track_length(lap):
    states, rewards, term, tel = lap
    assert term.any(), "the controller should finish the lap within 90 s"
    end = int(np.argmax(term))
    # ≈ 163 actions a lap in the paper (48,825 render times in 300 episodes, §4.1.3), ~70 s.
    assert 150 < end < 200 and 60.0 < end * PARAMS.dt < 80.0
    path = states.path_done[: end + 1]
    assert np.all(np.diff(path) > -1e-3), "path_done should grow while driving forward"
    # The start line is crossed once, at the end: path_done = L plus the last step's advance.
    assert L <= path[-1] < L + 11.0
    assert path[-2] < L
    # Lap-local arc wraps to 0 at the finish line; path_done keeps counting.
    assert states.arc[end] < 11.0
    np.testing.assert_allclose(np.sum(np.diff(np.concatenate([[0.0], path]))), path[-1], rtol=1e-5)
    assert rewards[end] == pytest.approx(1000.0 + path[-1] - path[-2], abs=1e-3)
    assert not term[:end].any()
    # Whole-lap game reward: the progress rewards sum to the lap, less what M = 10 cut off
    # (the cap binds on the straights, as in the paper: §4.1.1), plus the bonus.
    delta = np.diff(np.concatenate([[0.0], path]))
    assert (delta > PARAMS.progress_cap).mean() > 0.2
    np.testing.assert_allclose(
        np.sum(rewards[: end + 1]), 1000.0 + np.minimum(delta, 10.0).sum(), rtol=1e-4
    )
    np.testing.assert_array_equal(tel.game_reward[: end + 1], rewards[: end + 1])
    np.testing.assert_allclose(tel.position[: end + 1], states.xy[: end + 1])
    assert np.all((tel.cell >= 0) & (tel.cell < ENV.num_cells))


def test_game_reward_formula_by_hand():
    p = PARAMS
    assert float(game_reward(p, 25.0, 5.0, False)) == -1.0  # |centering| > θ = 20
    assert float(game_reward(p, -20.5, 5.0, False)) == -1.0
    assert float(game_reward(p, 19.9, 4.0, False)) == 4.0  # off the road (10) but within θ
    assert float(game_reward(p, 0.0, 12.0, False)) == 10.0  # capped at M = 10
    assert float(game_reward(p, 3.0, -3.0, False)) == 0.0  # no reward for going backwards
    assert float(game_reward(p, 5.0, 4.0, True)) == 1004.0  # finish-line bonus
    assert float(game_reward(p, 25.0, 4.0, True)) == 999.0


def test_step_rewards_by_hand():
    p = PARAMS
    key = jax.random.key(3)
    # Beyond θ: -1 whatever the progress.
    s0 = ENV.state_at(p, 300.0, centering=25.0, speed=10.0)
    _, s1, r, term, _ = STEP(key, s0, 1, p)
    assert abs(float(s1.centering)) > p.theta and float(r) == -1.0 and not bool(term)
    # Within θ: the clipped progress of the step.
    s0 = ENV.state_at(p, 300.0, centering=5.0, speed=10.0)
    _, s1, r, _, _ = STEP(key, s0, 0, p)
    delta = float(s1.path_done - s0.path_done)
    assert 3.0 < delta < 5.0 and float(r) == pytest.approx(delta, abs=1e-5)
    # Faster than M per step: capped at M.
    fast = p.replace(max_speed=40.0)
    s0 = ENV.state_at(fast, 300.0, speed=40.0)
    _, s1, r, _, _ = STEP(key, s0, 0, fast)
    assert float(s1.path_done - s0.path_done) > 12.0 and float(r) == 10.0
    # Backwards (over the start line): path_done goes negative, no negative reward.
    s0 = ENV.state_at(p, 0.5, speed=3.1, heading_error=np.pi)  # 2.5 units/s after drag: 1 unit back
    _, s1, r, _, tel = STEP(key, s0, 0, p)
    assert float(s1.path_done) == pytest.approx(-0.5, abs=0.1) and float(r) == 0.0
    assert float(s1.arc) > L - 1.0
    # Crossing the finish line: bonus and termination.
    s0 = ENV.state_at(p, L - 1.0, speed=20.0)
    _, s1, r, term, tel = STEP(key, s0, 1, p)
    assert bool(term) and float(s1.path_done) >= L
    assert float(r) == pytest.approx(1000.0 + float(s1.path_done - s0.path_done), abs=1e-3)
    assert bool(ENV.is_terminated(s1, p))


def test_frame_time_is_higher_at_heavy_spots():
    p = PARAMS
    pos, extra = np.asarray(p.heavy_pos), np.asarray(p.heavy_ms)
    far = (0.5 * (pos[1, 0] + pos[2, 0]), 0.0)
    # Noise-free field: base + scenery far from spots, plus heavy_ms at a centre.
    scenery = lambda s: float(scenery_cost(p, s))
    assert float(render_cost(p, *far)) == pytest.approx(p.base_ms + scenery(far[0]), abs=1e-3)
    for k in range(ENV.num_bugs):
        assert float(render_cost(p, pos[k, 0], pos[k, 1])) == pytest.approx(
            p.base_ms + scenery(pos[k, 0]) + extra[k], abs=1e-3
        )
    # The scenery: a smooth trend along the lap within ±scenery_ms, the same every lap.
    lap = np.asarray(jax.vmap(lambda s: scenery_cost(p, s))(jnp.linspace(0.0, L, 400)))
    assert np.abs(lap).max() <= p.scenery_ms and lap.max() - lap.min() > p.scenery_ms
    assert scenery(10.0) == pytest.approx(scenery(10.0 + L), abs=1e-4)

    # Noisy frame times reported by step, kart standing still (speed 0, coasting).
    @jax.jit
    def frame_times(state, keys):
        return jax.vmap(lambda k: STEP(k, state, 0, p)[4]["telemetry"].frame_time_ms)(keys)

    keys = jax.random.split(jax.random.key(7), 4000)
    base = np.asarray(frame_times(ENV.state_at(p, far[0], far[1]), keys))
    assert base.mean() == pytest.approx(p.base_ms + scenery(far[0]), abs=0.03)
    assert base.std() == pytest.approx(p.noise_ms, rel=0.1)
    for k in (0, 1):
        at = np.asarray(frame_times(ENV.state_at(p, pos[k, 0], pos[k, 1]), keys))
        assert at.mean() - base.mean() == pytest.approx(
            extra[k] + scenery(pos[k, 0]) - scenery(far[0]), abs=0.05
        )


def test_edge_areas_are_slow_only_off_the_racing_line():
    """Spots 1, 3, 5 are areas at the road's edge: a kart on the racing line renders below ``t``
    beside them, one dwelling in them (centering 14-20) above it."""
    p = PARAMS
    pos = np.asarray(p.heavy_pos)
    cost = jax.jit(jax.vmap(lambda s, c: render_cost(p, s, c)))
    for k in (1, 3, 5):
        side = np.sign(pos[k, 1])
        along = pos[k, 0] + np.linspace(-8.0, 8.0, 9)
        line = np.asarray(cost(jnp.asarray(along), jnp.full(9, 2.0 * side)))
        assert line.max() < p.threshold_ms - 1.0, f"spot {k} slows the racing line"
        for c in (14.0, 17.0, 20.0):
            core = np.asarray(cost(jnp.asarray(along[3:-3]), jnp.full(3, c * side)))
            assert core.min() > p.threshold_ms, f"spot {k} at centering {c * side}"


def test_the_scenery_behind_the_right_barrier_is_slow_to_look_at():
    """:func:`view_cost`: ``view_ms`` when the point ``view_distance`` ahead lies a whole
    ``view_distance`` beyond the right-hand barrier, none for a kart looking down the road."""
    p = PARAMS
    wall, reach = float(p.wall_offset), float(p.view_distance)
    view = lambda c, e: float(view_cost(p, jnp.float32(c), jnp.float32(e)))
    assert view(0.0, 0.0) == view(wall, 0.0) == view(-wall, np.pi / 2) == 0.0
    assert view(wall, -np.pi / 2) == pytest.approx(p.view_ms)  # facing over the right barrier
    assert view(wall, -np.pi / 6) == pytest.approx(0.5 * p.view_ms, abs=1e-4)  # half beyond
    assert view(wall - 0.5 * reach, -np.pi / 2) == pytest.approx(0.5 * p.view_ms, abs=1e-4)
    assert view(-wall, -np.pi / 2) == 0.0  # the left side has no such scenery
    far = 0.5 * (float(p.heavy_pos[1, 0]) + float(p.heavy_pos[2, 0]))
    looking = render_cost(p, far, wall, -np.pi / 2) - render_cost(p, far, wall, 0.0)
    assert float(looking) == pytest.approx(p.view_ms, abs=1e-4)


def test_the_observation_shows_the_nearest_heavy_spot_ahead():
    p = PARAMS
    pos, radius, theta = np.asarray(p.heavy_pos), np.asarray(p.heavy_radius), float(p.theta)
    view = lambda s, c: np.asarray(spot_in_view(p, jnp.float32(s), jnp.float32(c)))
    # 30 units before spot 1 (centering -17; spot 0 is 33 units behind, beyond its radius): ahead
    # 30, offset -17.
    np.testing.assert_allclose(
        view(pos[1, 0] - 30.0, 0.0), [1.0, 30.0 / VIEW_RANGE, -17.0 / theta], atol=1e-5
    )
    # Inside spot 0, past its centre but within its radius: still in view (negative distance).
    np.testing.assert_allclose(
        view(pos[0, 0] + 0.5 * radius[0], 3.0),
        [1.0, -0.5 * radius[0] / VIEW_RANGE, (pos[0, 1] - 3.0) / theta],
        atol=1e-5,
    )
    # Farther than VIEW_RANGE from every spot: none in view.
    np.testing.assert_allclose(view(0.5 * (pos[1, 0] + pos[2, 0]), 0.0), [0.0, 1.0, 0.0])
    # The lap wraps: before the start line, spot 0 (2.5% of the lap) is ahead.
    ahead = pos[0, 0] + 20.0
    np.testing.assert_allclose(
        view(L - 20.0, 0.0), [1.0, ahead / VIEW_RANGE, pos[0, 1] / theta], atol=1e-4
    )
    # The game's observation carries it in its last three entries.
    obs = np.asarray(ENV.get_obs(ENV.state_at(p, pos[1, 0] - 30.0, 0.0), p))
    assert obs.shape == ENV.observation_space(p).shape == (14,)
    np.testing.assert_allclose(obs[11:], view(pos[1, 0] - 30.0, 0.0), atol=1e-4)


def test_bug_fires_on_the_first_slow_step_in_a_spot_per_episode():
    """``bugs_fired`` is the low-FPS oracle inside a spot: frame time above the threshold in
    force."""
    p = PARAMS
    key = jax.random.key(0)
    pos, radius = np.asarray(p.heavy_pos), np.asarray(p.heavy_radius)
    k = 1
    outside = ENV.state_at(p, pos[k, 0] - radius[k] - 1.0, pos[k, 1])
    _, s, _, _, info = STEP(key, outside, 0, p)
    assert not np.asarray(info["telemetry"].bugs_fired).any()
    inside = ENV.state_at(p, pos[k, 0], pos[k, 1]).replace(bugs_seen=s.bugs_seen)
    _, s, _, _, info = STEP(key, inside, 0, p)
    expected = np.zeros(ENV.num_bugs, bool)
    expected[k] = True
    np.testing.assert_array_equal(np.asarray(info["telemetry"].bugs_fired), expected)
    _, s, _, _, info = STEP(key, s, 0, p)  # still inside
    assert not np.asarray(info["telemetry"].bugs_fired).any()
    # Leave and come back in the same episode: no second report.
    back = ENV.state_at(p, pos[k, 0], pos[k, 1]).replace(bugs_seen=s.bugs_seen)
    _, _, _, _, info = STEP(key, back, 0, p)
    assert not np.asarray(info["telemetry"].bugs_fired).any()
    # A new episode reports it again.
    _, fresh = ENV.reset_env(key, p)
    _, _, _, _, info = STEP(key, inside.replace(bugs_seen=fresh.bugs_seen), 0, p)
    np.testing.assert_array_equal(np.asarray(info["telemetry"].bugs_fired), expected)
    # Inside the radius but rendering below the threshold: no bug (the oracle did not fire).
    rim = ENV.state_at(p, pos[k, 0] + 0.95 * radius[k], pos[k, 1])
    _, s, _, _, info = STEP(key, rim, 0, p)
    assert float(info["telemetry"].frame_time_ms) < p.threshold_ms
    assert not np.asarray(info["telemetry"].bugs_fired).any() and not int(s.bugs_seen) >> k & 1
    # A threshold above the spot's peak: the centre never fires.
    _, _, _, _, info = STEP(
        key, inside.replace(bugs_seen=fresh.bugs_seen), 0, p.replace(threshold_ms=p.base_ms + 50.0)
    )
    assert not np.asarray(info["telemetry"].bugs_fired).any()


def test_machine_load_scales_and_shifts_the_frame_time():
    pos = np.asarray(PARAMS.heavy_pos)
    state = ENV.state_at(PARAMS, pos[0, 0], pos[0, 1])
    quiet = PARAMS.replace(noise_ms=0.0)
    loaded = quiet.replace(load_scale=1.1, load_offset_ms=0.5)
    cost = float(render_cost(PARAMS, pos[0, 0], pos[0, 1]))
    ms = lambda p: float(STEP(jax.random.key(0), state, 0, p)[4]["telemetry"].frame_time_ms)
    assert ms(quiet) == pytest.approx(cost, abs=1e-4)
    assert ms(loaded) == pytest.approx(1.1 * cost + 0.5, abs=1e-4)
    with pytest.raises(ValueError, match="load_scale"):
        ENV.validate_params(PARAMS.replace(load_scale=0.0))
    with pytest.raises(ValueError, match="view_distance"):
        ENV.validate_params(PARAMS.replace(view_distance=0.0))


def test_bugs_fire_where_a_lap_renders_slowly_in_the_spots(lap):
    states, _, term, tel = lap
    end = int(np.argmax(term)) + 1
    arc, c, fired = states.arc[:end], states.centering[:end], tel.bugs_fired[:end]
    pos, radius = np.asarray(PARAMS.heavy_pos), np.asarray(PARAMS.heavy_radius)
    assert fired.sum(0).max() <= 1, "a bug fired twice in one episode"
    # the spots stand beside the line a lap follows, as in the package's calibration laps
    assert fired.sum() == 0 and tel.frame_time_ms[:end].max() < PARAMS.threshold_ms
    for k in range(ENV.num_bugs):
        ds = (arc - pos[k, 0] + L / 2) % L - L / 2
        slow = (np.hypot(ds, c - pos[k, 1]) <= radius[k]) & (
            tel.frame_time_ms[:end] > PARAMS.threshold_ms
        )
        if slow.any():
            assert fired[:, k].any() and int(np.argmax(fired[:, k])) == int(np.argmax(slow))
        else:
            assert not fired[:, k].any()
    # Frame time = the hidden render-cost field at the kart's place and view + noise (noise_ms).
    error = states.heading[:end] - np.asarray(
        jax.vmap(lambda s: track_heading(PARAMS.track, s))(arc)
    )
    residual = tel.frame_time_ms[:end] - np.asarray(
        jax.vmap(lambda s, x, e: render_cost(PARAMS, s, x, e))(arc, c, error)
    )
    assert abs(residual.mean()) < 0.08 and residual.std() == pytest.approx(PARAMS.noise_ms, rel=0.2)


def test_throttle_only_moves_forward_and_the_barrier_holds():
    states, rewards, _, tel = jax.tree.map(np.asarray, _drive(PARAMS, jax.random.key(1), 1))
    path = states.path_done[:50]
    assert path[-1] > 100.0 and np.all(np.diff(path) >= -1e-3)
    assert states.speed[20] > 5.0
    # Holding throttle + right: the kart leaves the road, is penalised beyond θ and stopped by the
    # barrier.
    states, rewards, _, _ = jax.tree.map(np.asarray, _drive(PARAMS, jax.random.key(1), 4))
    assert np.abs(states.centering).max() <= PARAMS.wall_offset + 1e-3
    beyond = np.abs(states.centering) > PARAMS.theta
    assert beyond.any() and np.all(rewards[beyond] == -1.0)
    # Hitting the barrier right at the start line keeps the kart there, slowed down.
    for start in (L - 0.3, 0.3):
        s0 = ENV.state_at(PARAMS, start, centering=29.5, speed=20.0, heading_error=-np.pi / 2)
        _, s1, _, _, _ = STEP(jax.random.key(0), s0, 0, PARAMS)
        assert float(jnp.abs(s1.centering)) == pytest.approx(PARAMS.wall_offset, abs=1e-3)
        assert (
            float(jnp.linalg.norm(s1.xy - s0.xy)) < 2.0
            and abs(float(s1.path_done - s0.path_done)) < 2.0
        )
        assert float(s1.speed) < 11.0


def test_validate_params_refuses_spots_off_the_track():
    ENV.validate_params(PARAMS)
    pos = np.asarray(PARAMS.heavy_pos).copy()
    for bad in ((L + 5.0, 0.0), (-1.0, 0.0), (100.0, PARAMS.wall_offset + 10.0)):
        moved = pos.copy()
        moved[2] = bad
        with pytest.raises(ValueError, match="heavy spot 2 .*off the track"):
            ENV.validate_params(PARAMS.replace(heavy_pos=jnp.asarray(moved)))
    with pytest.raises(ValueError, match="heavy spot 0 .*radius"):
        ENV.validate_params(PARAMS.replace(heavy_radius=PARAMS.heavy_radius.at[0].set(0.0)))
    with pytest.raises(ValueError, match="wall_offset"):
        ENV.validate_params(PARAMS.replace(wall_offset=60.0))


def test_step_projection_window_matches_the_global_projection():
    """The per-step windowed projection finds the same nearest point as a full search."""
    from jgtest.envs.kart import _project, _project_near

    env = KartTrack()
    params = env.default_params
    track = params.track
    keys = jax.random.split(jax.random.key(3), 2)
    arcs = jax.random.uniform(keys[0], (256,), minval=0.0, maxval=float(env.track_length))
    offsets = jax.random.uniform(keys[1], (256,), minval=-30.0, maxval=30.0)
    # A point moved by up to one step (10.8 units) from (arc, offset), hinted with the old arc.
    from jgtest.envs.kart import track_point

    moved = jax.vmap(lambda s, c: track_point(track, s + 10.8, c + 1.0))(arcs, offsets)
    full = jax.jit(jax.vmap(lambda xy: _project(track, xy)))(moved)
    near = jax.jit(jax.vmap(lambda xy, s: _project_near(track, xy, s)))(moved, arcs)
    np.testing.assert_array_equal(np.asarray(full[2]), np.asarray(near[2]))
    np.testing.assert_allclose(np.asarray(full[1]), np.asarray(near[1]), atol=1e-5)
