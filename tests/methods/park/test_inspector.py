"""Object tests in the park (trigger, 360° walk, outcome, replay) and the Inspector / random
campaigns."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs import park_experts, park_map
from jgtest.methods.park import inspector
from jgtest.methods.park.bridged import device_run
from jgtest.methods.park.campaign import run_campaign
from jgtest.methods.park.ooi_testing import (
    OOITestSettings,
    init_tester,
    ooi_step,
    replay_seen,
    replay_test,
)
from jgtest.records import read_bug_records

ENV, PARAMS = jgtest.make("ParkWorld-v0")
SETTINGS = OOITestSettings()
STEP = jax.jit(
    lambda tester, state, action, key: ooi_step(ENV, SETTINGS, PARAMS, tester, state, action, key)
)


def _open_target() -> int:
    """A reachable object with nothing blocking within 3 cells (room for the 360° walk)."""
    for k in np.flatnonzero(ENV.ooi_reachable(PARAMS)):
        c, r = np.floor(np.asarray(PARAMS.ooi_pos[k])).astype(int)
        if r >= 3 and c >= 3 and ENV.map.walkable[r - 3 : r + 4, c - 3 : c + 4].all():
            return int(k)
    raise AssertionError("no object in the open")


TARGET = _open_target()


def _run_tester(state, steps, action=0):
    tester, events, positions = init_tester(ENV.num_oois), [], []
    for t in range(steps):
        tester, _, state, _, _, event = STEP(tester, state, jnp.int32(action), jax.random.key(t))
        events.append(jax.device_get(event))
        positions.append(np.asarray(state.pos))
    return tester, events, np.asarray(positions)


def test_an_object_in_view_is_tested_by_a_full_walk_around_it():
    target = TARGET
    start = park_experts.start_near(ENV, PARAMS, jnp.int32(target), jax.random.key(1), 2.0)
    # the explorer keeps turning: ignored while testing
    tester, events, positions = _run_tester(start, 300, action=4)
    done = [(t, int(e["done"]), bool(e["success"])) for t, e in enumerate(events) if e["done"] >= 0]
    assert done and done[0][1] == target and done[0][2], done[:3]
    assert bool(tester.tested[target])
    t_end = done[0][0]
    testing = np.array([e["testing"] for e in events])
    assert testing[1 : t_end + 1].all()  # the walk ran from the trigger to the end of the test
    swept = park_experts.swept_angle(jnp.asarray(positions[: t_end + 1]), PARAMS.ooi_pos[target])
    assert abs(float(swept)) >= 2 * np.pi - 0.3


def test_a_walled_in_object_fails_its_test_and_is_not_retested():
    ring = np.argwhere(ENV.map.solid == park_map.INVISIBLE)
    (r0, _), (r1, c1) = ring.min(axis=0), ring.max(axis=0)
    # just inside the ring's east side
    inside = np.array([c1 - 1.5, (r0 + r1) / 2 + 0.5], np.float32)
    # every other object far behind the player
    behind = jnp.full_like(PARAMS.ooi_pos, ENV.size - 4.5)
    params = PARAMS.replace(ooi_pos=behind.at[0].set(jnp.asarray(inside)))
    outside = np.array([c1 + 2.5, inside[1]], np.float32)
    _, state = ENV.reset(jax.random.key(0), params)  # gymnax's reset: jitted
    state = state.replace(pos=jnp.asarray(outside), yaw=jnp.float32(np.pi))
    step = jax.jit(
        lambda tester, state, action, key: ooi_step(
            ENV, SETTINGS, params, tester, state, action, key
        )
    )
    tester, events = init_tester(ENV.num_oois), []
    for t in range(SETTINGS.test_budget + 20):
        tester, _, state, _, _, event = step(tester, state, jnp.int32(4), jax.random.key(t))
        events.append(jax.device_get(event))
        assert state.pos[0] > c1 + 1.0  # never through the invisible wall
    ends = [(int(e["done"]), bool(e["success"])) for e in events if e["done"] >= 0]
    assert (0, False) in ends  # seen through the invisible wall, but it cannot be walked around
    # tested once, not again
    assert sum(1 for d, _ in ends if d == 0) == 1 and bool(tester.tested[0])


def test_replay_checks_the_walk():
    target = TARGET
    start = park_experts.start_near(ENV, PARAMS, jnp.int32(target), jax.random.key(1), 2.0)
    tester, state, executed, done_at = init_tester(ENV.num_oois), start, [], None
    for t in range(300):
        tester, _, state, _, action, event = STEP(tester, state, jnp.int32(4), jax.random.key(t))
        executed.append(int(action))
        if int(event["done"]) == target:
            done_at = t
            break
    assert done_at is not None
    assert replay_test(ENV, PARAMS, start, np.array(executed), target)
    # half a walk is no test
    assert not replay_test(ENV, PARAMS, start, np.array(executed[: done_at // 2]), target)
    # An oracle's record (its test's frames judged): the trace must reproduce and show the object up
    # close.
    end = np.asarray(state.pos)
    assert replay_seen(ENV, PARAMS, start, np.array(executed), target, end, SETTINGS)
    # another trace
    assert not replay_seen(ENV, PARAMS, start, np.array(executed), target, end + 1.0, SETTINGS)
    far = int(np.argmax(np.linalg.norm(np.asarray(PARAMS.ooi_pos) - end, axis=1)))
    # never in view
    assert not replay_seen(ENV, PARAMS, start, np.array(executed), far, end, SETTINGS)


def test_bad_campaign_settings_are_refused():
    with pytest.raises(ValueError, match="multiple of num_envs"):
        inspector.InspectorConfig(episodes=7, num_envs=5)
    with pytest.raises(ValueError, match="must divide episode_steps"):
        inspector.InspectorConfig(rollout_steps=300)
    with pytest.raises(ValueError, match="agent must be one of"):
        inspector.InspectorConfig(agent="ppgta")


@pytest.mark.parametrize("reference_action, succeeds", [(3, True), (0, False)])
def test_a_learned_test_runs_its_steps_and_is_judged_by_js(reference_action, succeeds):
    settings = OOITestSettings(test_steps=10)
    judge = (jax.nn.one_hot(reference_action, ENV.num_actions), 0.1)
    step = jax.jit(
        lambda tester, state, key: ooi_step(
            ENV,
            settings,
            PARAMS,
            tester,
            state,
            jnp.int32(4),
            key,
            test_action=jnp.int32(3),
            judge=judge,
        )
    )
    target = int(np.flatnonzero(ENV.ooi_reachable(PARAMS))[3])
    state = park_experts.start_near(ENV, PARAMS, jnp.int32(target), jax.random.key(1), 2.0)
    tester, events = init_tester(ENV.num_oois), []
    for t in range(30):
        tester, _, state, _, executed, event = step(tester, state, jax.random.key(t))
        events.append(jax.device_get({**event, "executed": executed}))
    testing = [t for t, e in enumerate(events) if e["testing"]]
    ends = [(t, int(e["done"]), bool(e["success"])) for t, e in enumerate(events) if e["done"] >= 0]
    # all its actions were 3: JS 0 to "3", 1 to "0"
    assert ends[0][1] == target and ends[0][2] == succeeds
    assert (
        len(testing) >= 10
        and testing[:10] == list(range(testing[0], testing[0] + 10))
        and ends[0][0] == testing[9]
    )
    assert all(events[t]["executed"] == 3 for t in testing[:10])


def test_a_killed_campaign_resumes_to_the_whole_run_whose_directory_records_replay(tmp_path):
    # A small, crowded park, so that a random walk of 4 x 200 steps meets objects; compiled once for
    # the three runs.
    config = inspector.InspectorConfig(
        agent="random",
        episodes=4,
        num_envs=2,
        episode_steps=200,
        rollout_steps=100,
        size=64,
        num_oois=200,
    )
    campaign = inspector.InspectorCampaign(config)

    def killed(done, total, tested):
        raise KeyboardInterrupt  # after the first round's checkpoint

    with pytest.raises(KeyboardInterrupt):
        run_campaign(campaign, "random", tmp_path / "killed", progress=killed)
    assert (tmp_path / "killed" / "checkpoints").is_dir()
    resumed = run_campaign(campaign, "random", tmp_path / "killed", resume=True)
    # what inspector.run(config, ...) runs
    whole = run_campaign(campaign, "random", tmp_path / "whole")
    for key in ("outcomes", "ooi_tested", "pathway_coverage", "curves", "texture_bugs_found"):
        assert resumed[key] == whole[key], key
    ids = [r.bug_id for r in read_bug_records(tmp_path / "killed" / "bugs.jsonl")]
    assert sorted(ids) == sorted(
        r.bug_id for r in read_bug_records(tmp_path / "whole" / "bugs.jsonl")
    ) and len(set(ids)) == len(ids)
    _assert_the_run_directory_records_replay(config, whole, tmp_path / "whole")


def _assert_the_run_directory_records_replay(config, summary, run_dir):
    env, params = jgtest.make("ParkWorld-v0", **config.game_kwargs)
    written = json.loads((run_dir / "summary.json").read_text())
    assert written["ooi_tested"] == summary["ooi_tested"] > 0
    assert 0 < summary["pathway_coverage"] <= summary["pathway_coverage_of_reachable"] < 1
    assert np.all(np.diff(summary["curves"]["pathway_coverage"]) >= 0) and np.all(
        np.diff(summary["curves"]["ooi_tested"]) >= 0
    )
    assert summary["ooi_unreachable"] == int((~env.ooi_reachable(params)).sum()) > 0
    outcomes = np.asarray(summary["outcomes"])
    assert (outcomes != "missed").sum() == summary["ooi_tested"]
    records = read_bug_records(run_dir / "bugs.jsonl")
    bugged = np.asarray(params.ooi_bug) > 0
    assert {r.bug_id for r in records} == set(np.flatnonzero((outcomes == "success") & bugged))
    for record in records:
        assert record.kind == "texture" and inspector.replay_record(record)
    assert json.loads((run_dir / "config.json").read_text())["method"] == "random"
    with pytest.raises(ValueError, match="a 'random' run has no trained explorer"):
        device_run(run_dir)  # what drives a bridged game: a learner's run, not a random walk's
    for name in ("traces.png", "tests.png"):
        assert (run_dir / name).stat().st_size > 10_000


def test_the_summary_says_how_many_steps_stood_on_a_pathway():
    from types import SimpleNamespace

    from jgtest.methods.park.campaign import _fresh_books, summarise

    c = SimpleNamespace(episodes=2, num_envs=2, rounds=1, episode_steps=4)
    books = _fresh_books(c, ENV)
    # (row, col)
    on, off = np.argwhere(ENV.map.path)[0], np.argwhere(~ENV.map.path & ENV.map.walkable)[0]
    xy = lambda cell: cell[::-1] + 0.5  # a trace holds (x, y) positions
    # 4 steps of 2 games
    books["traces"][0] = np.array(
        [[xy(on), xy(off)], [xy(on), xy(on)], [xy(off), xy(off)], [xy(on), xy(off)]]
    )
    summary = summarise("random", c, ENV, PARAMS, books, with_oracle=False, wall_s=1.0)
    assert summary["steps_on_pathway"] == pytest.approx(4 / 8)
