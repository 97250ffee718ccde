"""NSHArena-v0: the combat rules, the injected bugs, bad parameters and the probe calibration."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs.nsh_arena import (
    AWAY,
    BURST,
    DART,
    DASH,
    DROP,
    FLICK,
    FULL_BUDGET_STEPS,
    FURY,
    GUARD,
    IRON,
    LEAP,
    REACH_CLASSES,
    STRIKE,
    SWEEP,
    THRUST,
    WARD,
    NSHArena,
)
from jgtest.methods.wuji.probes import make_fighter, probe_run, random_policy

ENV, PARAMS = jgtest.make("NSHArena-v0")
STEP = jax.jit(ENV.step_env)
CALM = PARAMS.replace(boss_attack_prob=0.0, boss_move_prob=0.0)


def _state(floor=0, cell=(6, 5), boss=(5, 5), boss_hp=400, buffs=(), **kw):
    _, state = ENV.reset_env(jax.random.key(0), PARAMS)
    timers = np.zeros(5, np.int32)
    timers[list(buffs)] = 3
    return state.replace(
        pos=jnp.array([floor, *cell], jnp.int32),
        boss_pos=jnp.array(boss, jnp.int32),
        boss_hp=jnp.int32(boss_hp),
        buff_timer=jnp.asarray(timers),
        **kw,
    )


def _step(state, action, params=CALM):
    obs, state, reward, terminated, info = STEP(jax.random.key(1), state, jnp.int32(action), params)
    return (
        state,
        float(reward),
        bool(terminated),
        np.flatnonzero(np.asarray(info["telemetry"].bugs_fired)).tolist(),
    )


def test_the_combo_is_the_strongest_line():
    state = _state()
    dealt = []
    for action in (THRUST, SWEEP, BURST):
        before = int(state.boss_hp)
        state, *_ = _step(state, action)
        dealt.append(before - int(state.boss_hp))
    assert dealt == [4, 20, 36]
    strikes = _state()
    for _ in range(3):
        strikes, *_ = _step(strikes, STRIKE)
    assert 400 - int(strikes.boss_hp) == 24


def test_attacks_do_not_reach_across_floors_and_the_boss_idles():
    state = _state(floor=1, cell=(5, 5))
    after, *_ = _step(state, STRIKE, PARAMS.replace(boss_attack_prob=1.0))
    assert int(after.boss_hp) == 400 and int(after.player_hp) == 150
    # the boss regenerates only up to the phase it has fallen into
    worn = _state(floor=1, boss_hp=230)
    assert int(_step(worn, STRIKE)[0].boss_hp) == 235
    assert int(_step(_state(floor=1, boss_hp=238), STRIKE)[0].boss_hp) == 240


def test_leap_and_drop_change_floors():
    state, *_ = _step(_state(), LEAP)
    assert np.asarray(state.pos).tolist() == [1, 6, 5]
    state, *_ = _step(state.replace(cooldowns=jnp.zeros(19, jnp.int32)), DROP)
    assert np.asarray(state.pos).tolist() == [0, 6, 5]


def test_l10s_crash_needs_distance_zero_and_a_buff():
    assert _step(_state(cell=(5, 5), buffs=(IRON,)), DART)[2:] == (True, [0])
    assert _step(_state(cell=(5, 5)), DART)[2:] == (False, [])


def test_l10s_logical_bug_needs_three_specific_buffs_and_a_low_roll():
    low = PARAMS.replace(boss_attack_prob=1.0, boss_move_prob=0.0, boss_atk_min=6, boss_atk_max=6)
    state, _, _, bugs = _step(
        _state(buffs=(IRON, WARD, GUARD), player_hp=jnp.int32(100)), STRIKE, low
    )
    assert bugs == [1] and int(state.player_hp) == 102
    # no two of them turn the lowest roll into a heal
    for two in ((IRON, WARD), (IRON, GUARD), (WARD, GUARD)):
        state, _, _, bugs = _step(_state(buffs=(*two, FURY), player_hp=jnp.int32(100)), STRIKE, low)
        assert bugs == [] and int(state.player_hp) <= 100, two
    high = low.replace(boss_atk_min=8, boss_atk_max=8)
    # a roll out of the range
    assert _step(_state(buffs=(IRON, WARD, GUARD)), STRIKE, high)[3] == []


def test_nshs_crash_is_the_boss_dying_under_fury_and_guard():
    _, reward, terminated, bugs = _step(_state(boss_hp=5, buffs=(FURY, GUARD)), STRIKE)
    assert terminated and bugs == [7] and reward < 1.0  # a crash, not a win
    _, reward, terminated, bugs = _step(_state(boss_hp=5, buffs=(FURY,)), STRIKE)
    assert terminated and bugs == [] and reward > 1.0


def test_damage_path_bugs_are_gated_on_the_phase():
    staggered = dict(stagger=jnp.int32(3))
    # 250 - 30 breaks 60%
    assert _step(_state(boss_hp=250, buffs=(FURY,), **staggered), SWEEP)[3] == [9]
    assert _step(_state(boss_hp=300, buffs=(FURY,), **staggered), SWEEP)[3] == []
    assert _step(_state(boss_hp=200, **staggered), THRUST)[3] == [11]
    assert _step(_state(boss_hp=300, **staggered), THRUST)[3] == []
    overflow = _state(boss_hp=100, buffs=(FURY,), exposed=jnp.int32(2))
    state, reward, _, bugs = _step(overflow, BURST)
    # healed, up to phase 3's top
    assert bugs == [8] and int(state.boss_hp) == 120 and reward == pytest.approx(-20 / 400)
    # the boss entering phase 3 with the player on its cell traps the player, unless the hit kills
    # it
    assert _step(_state(cell=(5, 5), boss_hp=125), STRIKE)[3] == [10]
    assert _step(_state(cell=(5, 5), boss_hp=5), STRIKE)[3] == []


def test_off_path_bugs_need_a_run_of_choices_away_from_the_fight():
    late = dict(boss_hp=100)
    # the weak skill from distance 10, phase 3
    assert _step(_state(cell=(0, 0), **late), FLICK)[3] == [15]
    assert _step(_state(cell=(0, 0), boss_hp=200), FLICK)[3] == []  # phase 2
    assert _step(_state(cell=(1, 0), boss=(5, 2), **late), FLICK)[3] == []  # distance 6
    assert _step(_state(floor=1, away=jnp.int32(AWAY), **late), LEAP)[3] == [17]
    assert _step(_state(floor=1, away=jnp.int32(AWAY - 1), **late), LEAP)[3] == []
    assert _step(_state(floor=1, away=jnp.int32(AWAY)), LEAP)[3] == []  # phase 1
    # away counts the steps in a row off floor 0
    state = _state(floor=1)
    for _ in range(3):
        state, *_ = _step(state, STRIKE)
    assert (
        int(state.away) == 3
        and int(_step(state.replace(pos=jnp.array([0, 9, 9], jnp.int32)), STRIKE)[0].away) == 0
    )


def test_a_stuck_player_stays_stuck():
    cell = np.asarray(PARAMS.bug_cells[2]).tolist()  # bug 4: a dash ending in floor 2's wall
    state = _state(floor=2, cell=(cell[1], cell[2] + 2), facing=jnp.int32(3))
    state, _, terminated, bugs = _step(state, DASH)
    assert bugs == [4] and bool(state.frozen) and not terminated
    later, reward, _, bugs = _step(state, 0)
    assert (
        bugs == []
        and reward == 0.0
        and np.array_equal(np.asarray(later.pos), np.asarray(state.pos))
    )


def test_reach_classes_and_kinds():
    assert len(ENV.bug_kinds) == ENV.num_bugs == 21 and set(ENV.bug_kinds) == {
        "crash",
        "stuck",
        "logical",
    }
    # the probe table's (tests/methods/wuji/test_probes.py): no bug is beyond every probe
    assert [REACH_CLASSES.count(c) for c in ("start", "path", "off")] == [7, 14, 0]


def test_bugs_stay_where_injected_unless_randomized():
    key = jax.random.key(3)
    assert ENV.randomize(key, PARAMS) is PARAMS
    moved = NSHArena(randomize_bugs=True).randomize(key, PARAMS)
    NSHArena(randomize_bugs=True).validate_params(moved)
    assert not np.array_equal(np.asarray(moved.bug_cells), np.asarray(PARAMS.bug_cells))
    # floors kept
    assert np.array_equal(np.asarray(moved.bug_cells)[:, 0], np.asarray(PARAMS.bug_cells)[:, 0])


@pytest.mark.parametrize(
    "override, match",
    [
        (
            {"bug_cells": PARAMS.bug_cells.at[1].set(jnp.array([0, 11, 3]))},
            "bug cell 1 at \\(floor 0, 11, 3\\) is outside the 3x11x11 arena",
        ),
        (
            {"bug_cells": PARAMS.bug_cells.at[0].set(jnp.array([3, 1, 1]))},
            "bug cell 0 at \\(floor 3, 1, 1\\) is outside",
        ),
        ({"bug_buffs": PARAMS.bug_buffs.at[2].set(5)}, "bug_buffs must be 5 buff indices in 0..4"),
        ({"death_buffs": jnp.array([-1, 2])}, "death_buffs must be 2 buff indices in 0..4"),
        (
            {"phase_thresholds": jnp.array([1.0, 0.3])},
            "phase_thresholds must be two boss hp fractions in \\(0, 1\\)",
        ),
        ({"phase_thresholds": jnp.array([0.3, 0.6])}, "the first the larger"),
        ({"phase_thresholds": jnp.array([0.6, 0.001])}, "leave a phase without hp"),
        ({"death_buffs": jnp.array([3, 3])}, "death_buffs must be two different buffs"),
        (
            {"bug_cells": PARAMS.bug_cells.at[1].set(jnp.array([2, 5, 5]))},
            "bug cell 1 \\(bug 3\\) must be on floor 0",
        ),
        ({"player_start": jnp.array([0, 1, 5])}, "player_start and boss_start are the same cell"),
        ({"boss_attack_prob": 1.5}, "boss_attack_prob must be a probability"),
    ],
)
def test_bad_parameters_are_refused(override, match):
    with pytest.raises(ValueError, match=match):
        ENV.validate_params(PARAMS.replace(**override))


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="levels must be at least 3"):
        NSHArena(levels=2)
    with pytest.raises(ValueError, match="at least 7x7"):
        NSHArena(rows=5)


def _calibrate(budget):
    gated = np.array([c != "start" for c in REACH_CLASSES])
    designed_off_path = np.arange(ENV.num_bugs) >= 14
    probes = {
        "random": random_policy,
        "fighter": make_fighter(ENV),
        "fighter30": make_fighter(ENV, 0.3),
    }
    out = {name: probe_run(ENV, PARAMS, policy, budget) for name, policy in probes.items()}
    found = {name: np.array(o["first_found"]) >= 0 for name, o in out.items()}
    assert all(int(np.sum(f & gated)) <= 7 for f in found.values()), {
        n: int(np.sum(f & gated)) for n, f in found.items()
    }
    assert out["fighter"]["win_rate"] > 0.6 and out["fighter"]["reached_phase3"] > 0.95
    assert out["random"]["win_rate"] == 0.0 and out["random"]["reached_phase2"] < 5e-4
    assert int(np.sum(found["fighter30"] & designed_off_path)) == 0
    return found, gated


@pytest.mark.slow
def test_probe_calibration():
    """The calibration table of nsh_arena's docstring: at the full budget no probe finds more than
    half of the phase-gated bugs, the scripted fighter wins, random hardly ever breaks the first
    phase, and the noisy fighter finds none of the bugs designed off its path (14-20)."""
    found, gated = _calibrate(FULL_BUDGET_STEPS)
    assert found["random"][~gated].all()  # the near-start bugs are within anyone's reach
    # ... and the damage path within a noisy fighter's
    assert int(np.sum(found["fighter30"] & gated)) == 7


@pytest.mark.slow
def test_probe_calibration_at_a_tenth_of_the_budget():
    """The same probes on a tenth of the budget (the default run's share of the slow test above)."""
    found, gated = _calibrate(FULL_BUDGET_STEPS // 10)
    assert int(np.sum(found["fighter30"] & gated)) >= 5 and not np.any(found["fighter"] & gated)
