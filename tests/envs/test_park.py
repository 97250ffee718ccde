"""ParkWorld-v0: the park, its rendering, objects and their boxes, texture bugs, invisible walls,
experts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs import park_experts, park_map
from jgtest.envs.park import FORWARD, ParkWorld, trace_cells
from jgtest.envs.park_render import CLEAN, LOW_RES, OOI_TYPES, STRETCHED, _cast_walls

ENV, PARAMS = jgtest.make("ParkWorld-v0")
OBSERVE = jax.jit(ENV.observe)


def _facing(target: int, distance: float = 2.0, key: int = 0):
    return park_experts.start_near(ENV, PARAMS, jnp.int32(target), jax.random.key(key), distance)


def _clear_view_target():
    """A reachable object that is, seen from 2 cells away, the nearest object in view and
    unhidden."""
    for target in np.flatnonzero(ENV.ooi_reachable(PARAMS)):
        state = _facing(int(target))
        _, info = OBSERVE(state, PARAMS)
        objects = jax.device_get(info["objects"])
        if objects["id"][0] == target and objects["visible"][0] and objects["pixels"][0] > 60:
            return int(target), state
    raise AssertionError("no object in clear view")


@pytest.fixture(scope="module")
def in_view():
    """``(target, state)``: :func:`_clear_view_target`, found once per process that needs it
    (seconds: not at collection)."""
    return _clear_view_target()


def test_the_park_has_the_papers_parts():
    m = ENV.map
    assert (m.floor == park_map.WATER).any() and (m.solid == park_map.TREE).any()
    assert (m.solid == park_map.INVISIBLE).any() and (m.solid == park_map.BLOCKAGE).any()
    water = m.floor == park_map.WATER
    # pathways are 2 cells wide
    near = lambda shift, axis: np.roll(water, shift, axis) | np.roll(water, 2 * shift, axis)
    bridge = (m.floor == park_map.PATH) & ((near(1, 0) & near(-1, 0)) | (near(1, 1) & near(-1, 1)))
    assert bridge.any()  # a pathway with water on both sides
    # Pathways form one network in the main park (bridges over the lakes included; the stubs
    # that lead to the sealed pockets stand apart).
    main_path = m.path & m.main
    assert main_path.sum() > 400
    assert (
        park_map.reachable_from(main_path, np.argwhere(main_path)[:1]).sum()
        > 0.95 * main_path.sum()
    )
    # Objects: four types in equal shares, half of each type bugged (§V-A).
    kinds, bugs = np.asarray(PARAMS.ooi_type), np.asarray(PARAMS.ooi_bug)
    assert len(kinds) == 247  # the paper's count (§VI-A)
    for t in range(len(OOI_TYPES)):
        count = (kinds == t).sum()
        assert count in (61, 62) and (bugs[kinds == t] != CLEAN).sum() == count // 2
    assert {LOW_RES, STRETCHED} <= set(bugs.tolist())


def test_a_frame_shows_the_object_where_its_box_says(in_view):
    TARGET, STATE = in_view
    frame, info = OBSERVE(STATE, PARAMS)
    behind = STATE.pos - 3.0 * jnp.stack([jnp.cos(STATE.yaw), jnp.sin(STATE.yaw)])
    without = PARAMS.replace(
        ooi_pos=PARAMS.ooi_pos.at[TARGET].set(jnp.clip(behind, 0.5, ENV.size - 0.5))
    )
    frame_without, info_without = OBSERVE(STATE, without)
    changed = np.any(np.asarray(frame) != np.asarray(frame_without), axis=-1)
    r0, c0, r1, c1 = np.asarray(info["objects"]["box"][0])
    inside = np.zeros_like(changed)
    inside[r0:r1, c0:c1] = True
    # objects drawn in its stead (the slot it frees in the nearest few)
    others = np.zeros_like(changed)
    for (a0, b0, a1, b1), shown in zip(
        np.asarray(info_without["objects"]["box"]), np.asarray(info_without["objects"]["pixels"])
    ):
        if shown:
            others[a0:a1, b0:b1] = True
    assert changed[inside].sum() >= 60
    assert not (changed & ~inside & ~others).any()  # what the object changes is inside its box
    assert changed[inside].mean() > 0.4  # and the box is tight around it
    # its pixel count (objects farther off may show through a chair's or a tire's gaps once it is
    # gone)
    assert (
        0.95 * changed[inside].sum() <= int(info["objects"]["pixels"][0]) <= changed[inside].sum()
    )
    np.testing.assert_array_equal(np.asarray(info["od_box"]), [r0, c0, r1, c1])


@pytest.mark.parametrize("kind", range(len(OOI_TYPES)), ids=OOI_TYPES)
def test_bugged_and_clean_textures_differ_in_the_frames(kind, in_view):
    TARGET, STATE = in_view

    def frame(bug):
        params = PARAMS.replace(
            ooi_type=PARAMS.ooi_type.at[TARGET].set(kind),
            ooi_bug=PARAMS.ooi_bug.at[TARGET].set(bug),
        )
        out, info = OBSERVE(STATE, params)
        return np.asarray(out, np.float32), np.asarray(info["objects"]["box"][0])

    clean, (r0, c0, r1, c1) = frame(CLEAN)
    again, _ = frame(CLEAN)
    np.testing.assert_array_equal(clean, again)
    for bug in (LOW_RES, STRETCHED):
        bugged, _ = frame(bug)
        diff = np.abs(bugged - clean)[r0:r1, c0:c1].mean()
        # mean over the box, 0-255 levels (the weakest: a stretched chair, ≈ 5.7)
        assert diff > 5.0, (OOI_TYPES[kind], bug, diff)


def test_types_are_distinguishable(in_view):
    TARGET, STATE = in_view
    means = []
    for kind in range(len(OOI_TYPES)):
        params = PARAMS.replace(
            ooi_type=PARAMS.ooi_type.at[TARGET].set(kind),
            ooi_bug=PARAMS.ooi_bug.at[TARGET].set(CLEAN),
        )
        out, info = OBSERVE(STATE, params)
        r0, c0, r1, c1 = np.asarray(info["objects"]["box"][0])
        shown = np.asarray(out, np.float32)[r0:r1, c0:c1]
        means.append(shown.reshape(-1, 3).mean(axis=0))
    gaps = [np.abs(means[a] - means[b]).max() for a in range(4) for b in range(a + 1, 4)]
    assert min(gaps) > 15.0


def _outside_the_invisible_ring():
    ring = ENV.map.solid == park_map.INVISIBLE
    for r, c in np.argwhere(ring):
        if c + 2 < ENV.size and ENV.map.main[r, c + 1] and ENV.map.main[r, c + 2]:
            return r, c
    raise AssertionError("no main cell east of the invisible ring")


def test_invisible_walls_block_but_are_not_drawn():
    r, c = _outside_the_invisible_ring()
    _, state = ENV.reset(jax.random.key(0), PARAMS)  # gymnax's reset: jitted
    # facing west, at the wall
    state = state.replace(pos=jnp.array([c + 1.3, r + 0.5], jnp.float32), yaw=jnp.float32(np.pi))
    step = jax.jit(ENV.step_env)
    for t in range(12):
        _, state, *_ = step(jax.random.key(t), state, FORWARD, PARAMS)
    assert float(state.pos[0]) >= c + 1.0 + 0.19  # stopped at the wall, radius 0.2 off it
    ray = jnp.array([[-1.0, 0.0]])
    seen, kind, _, _ = _cast_walls(ENV._drawn, state.pos, ray, ENV.camera.far)
    assert int(kind[0]) == 0 or float(seen[0]) > 1.0  # the wall half a cell away is not drawn
    as_trees = ENV._drawn.at[ENV.map.solid == park_map.INVISIBLE].set(park_map.TREE)
    seen_tree, kind_tree, _, _ = _cast_walls(as_trees, state.pos, ray, ENV.camera.far)
    # the same cells as trees would be
    assert int(kind_tree[0]) == park_map.TREE and float(seen_tree[0]) < 0.5


def test_objects_behind_invisible_walls_or_blockages_are_unreachable():
    reachable = ENV.ooi_reachable(PARAMS)
    assert 0 < (~reachable).sum() < len(reachable) // 4
    ring = np.argwhere(ENV.map.solid == park_map.INVISIBLE)
    inside = ring.min(axis=0) + 3  # a cell inside the invisible ring's pocket
    env, params = jgtest.make("ParkWorld-v0", ooi_pos=np.asarray(PARAMS.ooi_pos).copy())
    params = params.replace(
        ooi_pos=params.ooi_pos.at[0].set(jnp.asarray(inside[::-1] + 0.5, jnp.float32))
    )
    assert not env.ooi_reachable(params)[0]
    crates = np.argwhere(ENV.map.solid == park_map.BLOCKAGE)[0]
    beyond = crates + np.array([0, 2])  # inside the tree-ringed pocket, past its crates
    params = params.replace(
        ooi_pos=params.ooi_pos.at[0].set(jnp.asarray(beyond[::-1] + 0.5, jnp.float32))
    )
    assert ENV.map.walkable[beyond[0], beyond[1]] and not env.ooi_reachable(params)[0]


@pytest.mark.slow
def test_path_expert_follows_the_pathways():
    demos = park_experts.demonstrations(ENV, PARAMS, jax.random.key(1), "path", num=4, steps=300)
    assert demos["frames"].shape == (4, 300, 64, 64, 3) and demos["actions"].shape == (4, 300)
    on_path = np.asarray(demos["on_path"])[:, 100:]  # after walking to the nearest pathway
    assert on_path.mean() > 0.8
    travelled = np.linalg.norm(np.diff(np.asarray(demos["positions"]), axis=1), axis=-1).sum(axis=1)
    assert travelled.min() > 20.0  # it walks on, it does not dither
    # noisy: demonstrations differ
    assert not np.array_equal(demos["actions"][0], demos["actions"][1])
    # Each step keeps the expert's intended action beside the executed one: they differ where the
    # noise drew another action.
    replaced = np.asarray(demos["actions"]) != np.asarray(demos["intended"])
    assert (
        0.03 < replaced.mean() < park_experts.DEMONSTRATION_EPSILON
        and np.asarray(demos["actions"])[replaced].max() < 6
    )


def test_a_driver_plays_and_the_expert_labels_its_states():
    """DAgger's walks: the learner's actions are executed, the path follower's action on each state
    is kept beside them."""
    forward = park_experts.Driver(
        init=lambda frame, info: jnp.int32(0),
        act=lambda carry, frame, info, key: (jnp.int32(FORWARD), carry + 1),
    )
    walks = park_experts.demonstrations(
        ENV, PARAMS, jax.random.key(1), "path", num=3, steps=40, driver=forward
    )
    expert = park_experts.demonstrations(ENV, PARAMS, jax.random.key(1), "path", num=3, steps=40)
    assert (np.asarray(walks["actions"]) == FORWARD).all()
    # the same starts
    np.testing.assert_array_equal(walks["positions"][:, 0], expert["positions"][:, 0])
    # labelled by the same expert
    np.testing.assert_array_equal(walks["intended"][:, 0], expert["intended"][:, 0])
    # it would have turned where the learner did not
    assert (np.asarray(walks["intended"]) != FORWARD).any()
    assert not np.array_equal(walks["positions"], expert["positions"])


def _in_the_open(params, count):
    """Reachable objects with nothing blocking within 3 cells (room to walk around them)."""
    free = []
    for k in np.flatnonzero(ENV.ooi_reachable(params)):
        c, r = np.floor(np.asarray(params.ooi_pos[k])).astype(int)
        if r >= 3 and c >= 3 and ENV.map.walkable[r - 3 : r + 4, c - 3 : c + 4].all():
            free.append(int(k))
    return free[:count]


@pytest.mark.slow
def test_circle_expert_walks_all_around_the_object():
    targets = jnp.asarray(_in_the_open(PARAMS, 4), jnp.int32)
    demos = park_experts.demonstrations(
        ENV, PARAMS, jax.random.key(2), "circle", num=4, steps=260, targets=targets
    )
    for i, target in enumerate(np.asarray(targets)):
        centre = PARAMS.ooi_pos[target]
        swept = abs(float(park_experts.swept_angle(demos["positions"][i], centre)))
        assert swept >= 2 * np.pi, (int(target), swept)
        distance = np.linalg.norm(
            np.asarray(demos["positions"][i][60:]) - np.asarray(centre), axis=-1
        )
        assert abs(np.median(distance) - park_experts.CIRCLE_RADIUS) < 0.5
        assert np.asarray(demos["od_visible"][i][60:]).mean() > 0.6  # it keeps the object in view
    # Each walk starts as a campaign's test does: 2-3 cells off, the object in view, not always
    # straight ahead.
    start = np.linalg.norm(
        np.asarray(demos["positions"][:, 0]) - np.asarray(PARAMS.ooi_pos[targets]), axis=-1
    )
    assert np.all(
        (start > park_experts.CIRCLE_START_DISTANCE[0] - 1e-3)
        & (start < park_experts.CIRCLE_START_DISTANCE[1] + 1e-3)
    ), start
    assert np.all(np.asarray(demos["target_pixels"][:, 0]) > 0)
    first = np.asarray(demos["target_box"][:, 0])
    # the object's centre column differs between starts
    assert np.ptp((first[:, 1] + first[:, 3]) / 2) > 4


def test_frames_at_128_pixels():
    env, params = jgtest.make("ParkWorld-v0", res=128, num_oois=40)
    obs, state = jax.jit(env.reset)(jax.random.key(0), params)
    assert obs.shape == (128, 128, 3) and obs.dtype == jnp.uint8


@pytest.mark.parametrize(
    "override, message",
    [
        ({"ooi_pos": np.full((247, 2), 400.0)}, "off the 320x320 map"),
        ({"ooi_type": np.full(247, 4)}, "unknown type 4"),
        ({"ooi_bug": np.full(247, 3)}, "unknown texture bug 3"),
    ],
)
def test_bad_objects_are_refused(override, message):
    with pytest.raises(ValueError, match=message):
        jgtest.make("ParkWorld-v0", **override)


def test_too_many_objects_are_refused():
    with pytest.raises(ValueError, match="do not fit"):
        ParkWorld(size=64, num_oois=5000)


def test_looking_down_shows_more_ground_and_a_jump_raises_the_eye(in_view):
    TARGET, STATE = in_view
    step = jax.jit(ENV.step_env)
    # bluish sky pixels
    sky = lambda frame: int((np.asarray(frame)[..., 2] > np.asarray(frame)[..., 1] + 20).sum())
    level, _ = OBSERVE(STATE, PARAMS)
    down, state, *_ = step(jax.random.key(0), STATE, 7, PARAMS)  # look down
    assert int(state.pitch) == 1 and sky(down) < sky(level)
    up, state, *_ = step(jax.random.key(0), STATE, 6, PARAMS)  # look up
    assert int(state.pitch) == -1 and sky(up) > sky(level)
    _, state, *_ = step(jax.random.key(0), STATE, 8, PARAMS)  # jump
    assert float(ENV.eye_height(state, PARAMS)) > 0.5 and int(state.jump) == PARAMS.jump_steps


def test_a_trace_covers_the_pathway_within_half_its_width():
    # The cells a one-cell disc around the player touches: from a cell's centre its 3x3 block.
    rows, cols, within = trace_cells(np.array([[10.5, 5.5], [10.0, 5.5]]))
    assert {(int(r), int(c)) for r, c in zip(rows[0][within[0]], cols[0][within[0]])} == {
        (r, c) for r in (4, 5, 6) for c in (9, 10, 11)
    }
    assert {(int(r), int(c)) for r, c in zip(rows[1][within[1]], cols[1][within[1]])} == {
        (5, 8),
        (5, 9),
        (5, 10),
        (5, 11),
        (4, 9),
        (4, 10),
        (6, 9),
        (6, 10),
    }
    jr, jc, jw = trace_cells(jnp.asarray([10.0, 5.5]))
    assert np.array_equal(np.asarray(jr)[np.asarray(jw)], rows[1][within[1]])  # numpy and jax agree
    # One pass down either lane of a 2-wide pathway (columns 9 and 10) covers both lanes, and no
    # farther.
    for x in (9.5, 10.5):
        walk = np.stack([np.full(40, x), np.linspace(2.0, 12.0, 40)], axis=-1)
        rows, cols, within = trace_cells(walk)
        covered = set(zip(rows[within].tolist(), cols[within].tolist()))
        assert all((r, c) in covered for r in range(3, 12) for c in (9, 10))
        assert not any(c in (7, 12) for _, c in covered)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"path_width": 0}, "path_width must be at least 1"),
        ({"node_spacing": 2.0}, "node_spacing must be at least"),
        ({"move_speed": 0.0}, "move_speed is a movement step"),
        ({"strafe_speed": -0.1}, "strafe_speed is a movement step"),
        ({"turn_deg": 0.0}, "turn_deg must be in"),
    ],
)
def test_bad_park_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        jgtest.make("ParkWorld-v0", size=64, num_oois=16, **kwargs)
