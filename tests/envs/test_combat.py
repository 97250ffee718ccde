"""CombatArena: Wuji's combat scenario and its crash, stuck and logical bugs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.envs.combat import (
    BUFF_A,
    BUFF_B,
    BUFF_C,
    BUG_DEATH_CRASH,
    DASH,
    HEAL,
    MELEE,
    SKILL,
    CombatArena,
    hp_never_rises_from_boss_hit,
)

N, S, E, W = 0, 1, 2, 3

ENV = CombatArena(num_late_stuck=0)  # the paper's four bugs; the late stuck bugs are tested below
PARAMS = ENV.default_params
STEP = jax.jit(ENV.step_env)  # traced once per params structure; reused by every test
KEY = jax.random.key(0)


def _scan_steps(state, actions, params):
    def body(s, a):
        obs, s2, r, term, info = ENV.step_env(KEY, s, a, params)
        return s2, (s2.player_pos, obs, term, info["telemetry"].bugs_fired)

    return jax.lax.scan(body, state, actions)


SCAN = jax.jit(_scan_steps)


def _state(**kw):
    _, state = ENV.reset_env(KEY, PARAMS)
    return state.replace(**kw)


def _params(**kw):
    return PARAMS.replace(**kw)


def _pos(r, c):
    return jnp.array([r, c], jnp.int32)


# A calm boss (never moves, attacks or regenerates) for tests of the player's side.
CALM = _params(boss_move_prob=0.0, boss_attack_prob=0.0, boss_regen=0)


# ----- crash ---------------------------------------------------------------
def test_skill_at_distance_zero_with_a_buff_crashes():
    """The skill call sits under `if player.buff_time` in the paper's snippet (§V-D)."""
    for buff in range(3):
        timers = jnp.zeros(3, jnp.int32).at[buff].set(2)  # still 1 after the step's countdown
        state = _state(player_pos=_pos(4, 4), boss_pos=_pos(4, 4), buff_timer=timers)
        obs, s2, reward, term, info = STEP(KEY, state, SKILL, CALM)
        tel = info["telemetry"]
        assert bool(term) and bool(tel.crashed) and bool(s2.crashed)
        np.testing.assert_array_equal(np.asarray(tel.bugs_fired), [True, False, False, False])
        assert float(tel.game_reward) == 0.0


def test_skill_at_distance_zero_without_a_buff_does_not_crash():
    for timers in ([0, 0, 0], [1, 0, 0]):  # a timer of 1 runs out at the step's countdown
        state = _state(
            player_pos=_pos(4, 4), boss_pos=_pos(4, 4), buff_timer=jnp.asarray(timers, jnp.int32)
        )
        _, s2, reward, term, info = STEP(KEY, state, SKILL, CALM)
        assert not bool(term) and not bool(info["telemetry"].crashed)
        assert (
            not bool(info["telemetry"].bugs_fired.any()) and int(s2.boss_hp) == PARAMS.boss_max_hp
        )


def test_skill_at_positive_distance_damages_without_crash():
    for dist in (1, 2, 4):
        state = _state(player_pos=_pos(4 + dist, 4), boss_pos=_pos(4, 4))
        _, s2, reward, term, info = STEP(KEY, state, SKILL, CALM)
        tel = info["telemetry"]
        assert not bool(term) and not bool(tel.crashed)
        assert not bool(tel.bugs_fired.any())
        assert int(s2.boss_hp) == PARAMS.boss_max_hp - PARAMS.skill_damage // dist
        assert int(s2.cooldowns[0]) == PARAMS.skill_cooldown


def test_buff_then_dash_onto_the_boss_then_skill_crashes():
    # Facing north, two cells below the boss: the dash lands on its cell.
    state = _state(player_pos=_pos(6, 4), boss_pos=_pos(4, 4), facing=jnp.int32(N))
    actions = jnp.array([BUFF_A, DASH, SKILL], jnp.int32)
    final, (pos, _, term, fired) = SCAN(state, actions, CALM)
    np.testing.assert_array_equal(np.asarray(pos[1]), [4, 4])
    assert int(final.boss_hp) == PARAMS.boss_max_hp - PARAMS.dash_damage
    np.testing.assert_array_equal(np.asarray(term), [False, False, True])
    np.testing.assert_array_equal(np.asarray(fired[:, 0]), [False, False, True])


def test_the_coverage_cell_sees_distance_and_which_buffs_are_active():
    """§V-D: "distance is a feature in the state, new states will be covered when distance
    changes"."""
    cells = set()
    for boss_row in (0, 1, 2):
        for timers in ([0, 0, 0], [3, 0, 0], [0, 3, 0], [0, 0, 3], [3, 3, 0]):
            state = _state(
                player_pos=_pos(4, 4),
                boss_pos=_pos(boss_row, 4),
                buff_timer=jnp.asarray(timers, jnp.int32),
            )
            cells.add(int(ENV.cell_id(state, PARAMS)))
    assert len(cells) == 15 and all(0 <= c < ENV.num_cells for c in cells)


def test_walking_cannot_enter_the_boss_cell():
    state = _state(player_pos=_pos(5, 4), boss_pos=_pos(4, 4))
    _, s2, *_ = STEP(KEY, state, N, CALM)
    np.testing.assert_array_equal(np.asarray(s2.player_pos), [5, 4])


# ----- stuck ---------------------------------------------------------------
def _stuck_setup(buff_on: bool):
    params = _params(stuck_cell=_pos(3, 6), stuck_buff=1, boss_move_prob=1.0, boss_attack_prob=1.0)
    timer = jnp.array([0, 3 if buff_on else 0, 0], jnp.int32)
    state = _state(player_pos=_pos(4, 6), boss_pos=_pos(8, 0), buff_timer=timer)
    actions = jnp.array([N, N, W, S, E, DASH, MELEE, HEAL, BUFF_A], jnp.int32)
    return SCAN(state, actions, params)


def test_entering_stuck_cell_with_buff_freezes_player():
    final, (pos, obs, term, fired) = _stuck_setup(buff_on=True)
    assert bool(final.frozen)
    np.testing.assert_array_equal(np.asarray(pos), np.tile([3, 6], (len(pos), 1)))
    np.testing.assert_array_equal(np.asarray(fired[:, 1]), [True] + [False] * (len(pos) - 1))
    assert not bool(fired[:, [0, 2]].any()) and not bool(term.any())
    # Everything but the clock is frozen (boss included): the stuck oracle's input stops changing.
    np.testing.assert_array_equal(np.asarray(obs), np.tile(np.asarray(obs[0]), (len(obs), 1)))
    np.testing.assert_array_equal(np.asarray(final.boss_pos), [8, 0])
    assert int(final.time) == len(pos)


def test_entering_stuck_cell_without_buff_is_harmless():
    final, (pos, _, _, fired) = _stuck_setup(buff_on=False)
    assert not bool(final.frozen)
    assert not bool(fired.any())
    np.testing.assert_array_equal(np.asarray(pos[0]), [3, 6])
    np.testing.assert_array_equal(np.asarray(pos[1]), [2, 6])  # the next move works


def test_other_buff_does_not_trigger_stuck():
    params = _params(stuck_cell=_pos(3, 6), stuck_buff=1)
    state = _state(
        player_pos=_pos(4, 6), boss_pos=_pos(8, 0), buff_timer=jnp.array([3, 0, 3], jnp.int32)
    )
    _, s2, _, _, info = STEP(KEY, state, N, params)
    assert not bool(s2.frozen) and not bool(info["telemetry"].bugs_fired.any())


# ----- logical -------------------------------------------------------------
def _hit(timers, atk, action=MELEE, player_hp=50, bugs_seen=(False, False, False, False)):
    params = _params(boss_attack_prob=1.0, boss_atk_min=atk, boss_atk_max=atk)
    state = _state(
        player_pos=_pos(5, 4),
        boss_pos=_pos(4, 4),
        player_hp=jnp.int32(player_hp),
        buff_timer=jnp.asarray(timers, jnp.int32),
        bugs_seen=jnp.asarray(bugs_seen),
    )
    _, s2, reward, term, info = STEP(KEY, state, action, params)
    return state, s2, info["telemetry"]


def test_three_reduction_buffs_and_low_attack_heal_the_player():
    for atk in (8, 9):  # 3 + 3 + 4 = 10 > atk
        before, after, tel = _hit([3, 3, 3], atk)
        assert int(after.player_hp) == 50 + 10 - atk > 50
        np.testing.assert_array_equal(np.asarray(tel.bugs_fired), [False, False, True, False])
        assert not bool(hp_never_rises_from_boss_hit(before, after))
        assert not bool(CombatArena.logical_assertion(before, after))


def test_logical_bug_fires_once_per_episode():
    _, after, tel = _hit([3, 3, 3], 8, bugs_seen=(False, False, True, False))
    assert int(after.player_hp) == 52
    assert not bool(tel.bugs_fired.any())


def test_two_buffs_or_high_attack_do_not_heal():
    cases = [
        ([3, 3, 0], 8),
        ([3, 0, 3], 8),
        ([0, 3, 3], 8),
        ([3, 3, 3], 10),
        ([3, 3, 3], 16),
        ([0, 0, 0], 12),
    ]
    for timers, atk in cases:
        before, after, tel = _hit(timers, atk)
        assert int(after.player_hp) <= 50, (timers, atk)
        assert not bool(tel.bugs_fired.any()), (timers, atk)
        assert bool(hp_never_rises_from_boss_hit(before, after)), (timers, atk)


def test_assertion_allows_heal_before_the_hit():
    # Heal (+20) then a hit for 16 - 3 = 13: hp rises, but not because of the hit.
    before, after, tel = _hit([3, 0, 0], 16, action=HEAL)
    assert int(after.player_hp) == 50 + 20 - 13
    assert bool(hp_never_rises_from_boss_hit(before, after))
    assert not bool(tel.bugs_fired.any())


def test_buff_stacking_reaches_the_logical_bug():
    # A B C in a row, boss adjacent and always hitting with atk 8.
    params = _params(boss_attack_prob=1.0, boss_atk_min=8, boss_atk_max=8)
    state = _state(player_pos=_pos(5, 4), boss_pos=_pos(4, 4), player_hp=jnp.int32(80))
    final, (_, _, _, fired) = SCAN(
        state, jnp.array([BUFF_A, BUFF_B, BUFF_C, MELEE, MELEE], jnp.int32), params
    )
    np.testing.assert_array_equal(np.asarray(fired[:, 2]), [False, False, True, False, False])
    # hits: 8-3, 8-6, 8-10, 8-10, 8-7 (A expired on the last step)
    assert int(final.player_hp) == 80 - 5 - 2 + 2 + 2 - 1


# ----- win, loss, rewards ----------------------------------------------------
def test_killing_the_boss_wins():
    state = _state(player_pos=_pos(5, 4), boss_pos=_pos(4, 4), boss_hp=jnp.int32(4))
    _, s2, reward, term, info = STEP(KEY, state, MELEE, _params(boss_attack_prob=1.0))
    assert bool(term) and int(s2.boss_hp) <= 0
    # The damage reward is capped at the hp the boss had left.
    assert float(info["telemetry"].game_reward) == pytest.approx(4 / PARAMS.boss_max_hp + 1.0)
    assert int(s2.player_hp) == int(state.player_hp)  # a dead boss does not hit back


def test_killing_the_boss_with_both_death_crash_buffs_up_crashes_the_game():
    """NSH's crash (§V-D): "only when the boss is dead with multiple specific buffs"."""
    params = _params(death_crash_buffs=jnp.array([0, 2], jnp.int32))
    for timers, crash in (
        ([2, 0, 2], True),
        ([2, 2, 2], True),
        ([2, 2, 0], False),
        ([0, 2, 2], False),
        ([0, 0, 0], False),
    ):
        state = _state(
            player_pos=_pos(5, 4),
            boss_pos=_pos(4, 4),
            boss_hp=jnp.int32(4),
            buff_timer=jnp.array(timers, jnp.int32),
        )
        _, s2, reward, term, info = STEP(KEY, state, MELEE, params)
        tel = info["telemetry"]
        assert bool(term) and int(s2.boss_hp) <= 0, timers
        np.testing.assert_array_equal(np.asarray(tel.bugs_fired), [False, False, False, crash])
        assert bool(tel.crashed) == crash, timers
        # The crash comes before the win is recorded: the kill's damage, no win bonus.
        assert float(tel.game_reward) == pytest.approx(
            4 / PARAMS.boss_max_hp + (0.0 if crash else 1.0)
        ), timers
    # The same buffs without the kill are harmless.
    state = _state(
        player_pos=_pos(5, 4),
        boss_pos=_pos(4, 4),
        boss_hp=jnp.int32(40),
        buff_timer=jnp.array([2, 0, 2], jnp.int32),
    )
    _, s2, _, term, info = STEP(KEY, state, MELEE, params)
    assert not bool(term) and not bool(info["telemetry"].bugs_fired.any())


def test_player_death_loses():
    params = _params(boss_attack_prob=1.0, boss_atk_min=16, boss_atk_max=16)
    state = _state(player_pos=_pos(5, 4), boss_pos=_pos(4, 4), player_hp=jnp.int32(10))
    _, s2, reward, term, info = STEP(KEY, state, N, params)
    assert bool(term) and int(s2.player_hp) <= 0
    assert float(info["telemetry"].game_reward) == pytest.approx(-1.0)


def test_traced_out_of_range_action_is_clipped_and_cell_in_range():
    state = _state(player_pos=_pos(5, 4), player_hp=jnp.int32(50))
    _, s_hi, *_ = STEP(KEY, state, 99, CALM)
    _, s_heal, _, _, info = STEP(KEY, state, HEAL, CALM)
    assert int(s_hi.player_hp) == int(s_heal.player_hp) == 70
    assert 0 <= int(info["telemetry"].cell) < ENV.num_cells
    assert ENV.num_cells == 81 * 4 * 8 * 17


def test_randomize_keeps_the_logical_bug_three_buff_only():
    batch = jax.jit(jax.vmap(ENV.randomize, in_axes=(0, None)))(jax.random.split(KEY, 64), PARAMS)
    red = np.asarray(batch.buff_reduction)
    total, pair_max = red.sum(1), red.sum(1) - red.min(1)
    assert np.all(np.asarray(batch.boss_atk_min) > pair_max)
    assert np.all(np.asarray(batch.boss_atk_min) < total)
    ENV.validate_params(jax.tree.map(lambda x: x[0], batch))
    pairs = {tuple(sorted(p)) for p in np.asarray(batch.death_crash_buffs).tolist()}
    assert pairs == {(0, 1), (0, 2), (1, 2)}  # two different buffs, every pair drawn


@pytest.mark.parametrize(
    "override, match",
    [
        (dict(stuck_cell=np.array([9, 2])), "stuck_cell at \\(9, 2\\) is outside the 9x9 arena"),
        (dict(buff_reduction=np.array([3, -1, 4])), "buff_reduction values must be non-negative"),
        (dict(stuck_buff=3), "stuck_buff must be 0, 1 or 2"),
        (dict(death_crash_buffs=np.array([1, 1])), "death_crash_buffs must be two different buffs"),
        (dict(boss_atk_min=10, boss_atk_max=5), "boss attack range"),
        (dict(player_start=np.array([1, 4])), "player_start and boss_start are the same cell"),
        (dict(boss_move_prob=1.5), "boss_move_prob must be a probability"),
        (dict(max_steps_in_episode=0), "max_steps_in_episode must be positive"),
    ],
)
def test_validate_params_refusals(override, match):
    ENV.validate_params(PARAMS)
    with pytest.raises(ValueError, match=match):
        ENV.validate_params(PARAMS.replace(**override))


def test_constructor_refuses_tiny_arena():
    with pytest.raises(ValueError, match="at least 3x3"):
        CombatArena(rows=2)


# ----- late stuck bugs ---------------------------------------------------------
LATE = CombatArena()
LATE_STEP = jax.jit(LATE.step_env)


def test_late_stuck_bugs_are_placed_apart_from_the_starts():
    params = LATE.default_params
    assert LATE.bug_kinds == ("crash", "stuck", "logical", "crash") + ("stuck",) * 6
    LATE.validate_params(params)
    cells = {tuple(c) for c in np.asarray(params.late_cells).tolist()}
    assert len(cells) == 6 and not cells & {(7, 4), (1, 4)}
    assert set(np.asarray(params.late_phase).tolist()) <= set(np.float32([0.5, 0.3, 0.15]).tolist())
    drawn = jax.jit(jax.vmap(LATE.randomize, in_axes=(0, None)))(jax.random.split(KEY, 8), params)
    assert len({tuple(np.asarray(drawn.late_cells[i]).ravel().tolist()) for i in range(8)}) == 8


def test_a_late_stuck_bug_fires_only_once_the_boss_is_worn_down():
    params = LATE.default_params.replace(
        late_cells=LATE.default_params.late_cells.at[0].set(jnp.array([3, 6])),
        late_buffs=LATE.default_params.late_buffs.at[0].set(1),
        late_phase=LATE.default_params.late_phase.at[0].set(0.5),
        boss_move_prob=0.0,
        boss_attack_prob=0.0,
    )
    _, state = LATE.reset_env(KEY, params)
    for boss_hp, fires in ((126, False), (125, True)):  # 250 max: 125 is 50%
        start = state.replace(
            player_pos=_pos(4, 6),
            boss_pos=_pos(8, 0),
            buff_timer=jnp.array([0, 3, 0], jnp.int32),
            boss_hp=jnp.int32(boss_hp),
        )
        _, after, _, _, info = LATE_STEP(KEY, start, N, params)
        fired = np.asarray(info["telemetry"].bugs_fired)
        assert bool(fired[4]) == fires and bool(after.frozen) == fires and fired.sum() == int(fires)


def test_bad_late_stuck_bugs_are_refused():
    with pytest.raises(ValueError, match="late stuck bug 0 at \\(9, 0\\) is outside the 9x9 arena"):
        LATE.validate_params(
            LATE.default_params.replace(
                late_cells=LATE.default_params.late_cells.at[0].set(jnp.array([9, 0]))
            )
        )
    with pytest.raises(ValueError, match="late_phase must be 6 hp fractions"):
        LATE.validate_params(LATE.default_params.replace(late_phase=jnp.zeros(6)))
    with pytest.raises(ValueError, match="num_late_stuck must be in"):
        CombatArena(num_late_stuck=-1)
    with pytest.raises(ValueError, match="late_phases must be boss hp fractions in \\(0, 1\\]"):
        CombatArena(late_phases=(0.3, 1.5))
    deep = CombatArena(late_phases=(0.05,)).default_params.late_phase
    assert np.allclose(np.asarray(deep), 0.05)  # every late bug's phase drawn from the option


def _fighter(_, obs, key):
    """A scripted player who fights: closes in, uses the skill when ready, else a buff when none is
    active, else melee; heals below half hp; a random action 10% of the time."""
    dist, cooldowns, buffs, hp = obs[15] * 16, obs[9:15], obs[6:9], obs[4]
    gap = (obs[2:4] - obs[0:2]) * 8
    move = jnp.where(
        jnp.abs(gap[0]) >= jnp.abs(gap[1]), jnp.where(gap[0] < 0, N, S), jnp.where(gap[1] > 0, E, W)
    )
    buff_ready = cooldowns[2:5] == 0
    action = jnp.where(
        dist > 1.5,
        move,
        jnp.where(
            (hp < 0.5) & (cooldowns[5] == 0),
            HEAL,
            jnp.where(
                cooldowns[0] == 0,
                SKILL,
                jnp.where(
                    jnp.all(buffs == 0) & jnp.any(buff_ready),
                    BUFF_A + jnp.argmax(buff_ready),
                    MELEE,
                ),
            ),
        ),
    )
    k_explore, k_action = jax.random.split(key)
    return jnp.where(
        jax.random.uniform(k_explore) < 0.1, jax.random.randint(k_action, (), 0, 11), action
    )


@pytest.mark.slow
def test_the_fight_has_depth():
    """Only a player who fights wears the boss down (combat.py's "Balance"): random "cannot
    accomplish the mission" (Wuji §V-B), so the late stuck bugs and the death crash need a player
    who fights well."""
    from jgtest.rollout import play_episodes

    env, params = LATE, LATE.default_params
    random_policy = lambda _, obs, key: jax.random.randint(key, (), 0, env.num_actions)
    reached, death_crashes = {}, {}
    for name, policy in (("random", random_policy), ("fighter", _fighter)):
        out = jax.jit(
            lambda p=policy: play_episodes(
                env, params, p, None, 0, 2000, 200, info_keys=("final_observation",)
            )
        )()
        boss = np.where(
            np.asarray(out["valid"]), np.asarray(out["final_observation"])[..., 5], 1.0
        ).min(axis=1)
        reached[name] = [(boss <= phase).mean() for phase in (0.5, 0.3, 0.15, 0.0)]
        fired = np.asarray(out["telemetry"].bugs_fired) & np.asarray(out["valid"])[..., None]
        death_crashes[name] = fired[..., BUG_DEATH_CRASH].any(axis=1).mean()
    assert (
        reached["random"][0] < 0.05 and reached["random"][1] < 0.005 and reached["random"][2] == 0.0
    )
    assert (
        reached["fighter"][0] > 0.95 and reached["fighter"][2] > 0.6 and reached["fighter"][3] > 0.4
    )
    # NSH's crash is a corner case of winning: never for random, rare for the fighter who wins
    # (0.25% of fights)
    assert death_crashes["random"] == 0.0 and 0.0 < death_crashes["fighter"] < 0.01


def test_the_boss_regenerates_only_in_steps_without_damage():
    start = _state(player_pos=jnp.array([3, 4]), boss_pos=jnp.array([1, 4]), boss_hp=jnp.int32(100))
    calm = _state(player_pos=jnp.array([7, 4]), boss_pos=jnp.array([1, 4]), boss_hp=jnp.int32(100))
    _, hit, *_ = STEP(KEY, start, SKILL, PARAMS)  # distance 2: 24 // 2 damage, no regeneration
    _, rested, *_ = STEP(KEY, calm, HEAL, PARAMS)  # out of range: no damage
    _, full, *_ = STEP(KEY, calm.replace(boss_hp=jnp.int32(PARAMS.boss_max_hp - 1)), HEAL, PARAMS)
    assert int(hit.boss_hp) == 100 - 12
    assert int(rested.boss_hp) == 100 + PARAMS.boss_regen
    assert int(full.boss_hp) == PARAMS.boss_max_hp  # capped


def test_regeneration_stops_at_the_phase_boundary_the_boss_has_fallen_past():
    """Phases (``late_phases``, 50/30/15% of 250 hp: 125, 75, 37) lock in: resting lifts the boss to
    the boundary above it, never past it; without ``boss_phase_lock`` up to its maximum."""
    calm = _state(player_pos=jnp.array([7, 4]), boss_pos=jnp.array([1, 4]))
    rest = lambda hp, params=PARAMS: int(
        STEP(KEY, calm.replace(boss_hp=jnp.int32(hp)), HEAL, params)[1].boss_hp
    )
    assert [rest(124), rest(125), rest(126), rest(74), rest(36), rest(100)] == [
        125,
        125,
        128,
        75,
        37,
        102,
    ]
    assert rest(124, PARAMS.replace(boss_phase_lock=False)) == 126


def test_wujis_state_sees_buffs_on_or_off_not_their_timers_and_cooldowns():
    """CombatArena.state_features: cells, hps, distance and active buffs; timers, cooldowns and
    facing tick every step and are left out (else nearly every step is a new state)."""
    from jgtest.coverage import ObservationStates

    states = ObservationStates(ENV, PARAMS, 10)
    base = _state(buff_timer=jnp.array([2, 0, 0]))
    variants = {
        "timer": base.replace(buff_timer=jnp.array([4, 0, 0])),
        "cooldown": base.replace(cooldowns=jnp.array([3, 0, 0, 0, 0, 0])),
        "facing": base.replace(facing=jnp.int32(2)),
        "buff": base.replace(buff_timer=jnp.array([2, 1, 0])),
        "boss hp": base.replace(boss_hp=jnp.int32(100)),
        "cell": base.replace(player_pos=jnp.array([6, 4])),
    }
    same = lambda s: bool(
        jnp.all(states.hashes(ENV.get_obs(s, PARAMS)) == states.hashes(ENV.get_obs(base, PARAMS)))
    )
    assert [name for name, s in variants.items() if same(s)] == ["timer", "cooldown", "facing"]
