"""Combat Arena: Wuji's online-combat scenario (Zheng et al., ASE 2019, §V-A, §V-D).

Wuji tests two commercial online combat games, L10 and NSH, on one combat
scenario each: "a game character fights against an opponent", "the game
character is equipped with skills" and "can move in four directions", and "the
goals of the games are to win the fighting by discovering a combination of
skills that damage the opponent to the largest extent" (§V-A "Datasets"). This
is an on-device stand-in: a player and a boss on a ``rows x cols`` arena grid.

Actions (``Discrete(11)``):

====  ===========  ============================================================
 id   name         effect
====  ===========  ============================================================
 0-3  N, S, E, W   move one cell (blocked by the arena border and by the boss's
                   cell); also sets the facing direction used by the dash
 4    melee        ``melee_damage`` to the boss if the Manhattan distance is <= 1
 5    skill        ranged skill ``use_skill(skill_id, distance)``:
                   ``skill_damage // distance`` if ``distance <= skill_range``;
                   cooldown ``skill_cooldown``. **Crash bug** at distance 0
                   while a buff is active
 6    dash         jump ``dash_length`` cells in the facing direction, through
                   the boss (it can land on the boss's cell); ``dash_damage``
                   if it ends within distance 1; cooldown ``dash_cooldown``
 7-9  buff A/B/C   damage-reduction buff ``i`` for ``buff_duration`` steps
                   (reduces each boss hit by ``buff_reduction[i]``); cooldown
                   ``buff_cooldown``
 10   heal         ``+heal_amount`` hp (capped at ``player_max_hp``); cooldown
                   ``heal_cooldown``
====  ===========  ============================================================

An action whose cooldown is running does nothing (a wasted step). A traced
out-of-range action is clipped into ``[0, 11)``. Each step: timers and
cooldowns count down, the player acts (a step in which it deals no damage, the
boss regains ``boss_regen`` hp up to its maximum, or with ``boss_phase_lock`` up to
the phase boundary above it: see "Balance"), then (if the fight goes on) the boss
acts: with probability ``boss_move_prob`` it steps toward the player when it is
farther than ``boss_range`` (it never enters the player's cell), and when
within ``boss_range`` (Manhattan) it attacks with probability
``boss_attack_prob``, rolling an integer attack uniformly in
``[boss_atk_min, boss_atk_max]`` from the step key.

Injected bugs (``bug_kinds = ("crash", "stuck", "logical", "crash")``, then the
late stuck bugs), each firing only the first time per episode, after §V-A ("crash
bugs, stuck bugs and logical bugs previously known ... injected in the selected
scenarios") and the three cases of §V-D "Bug analysis" (two in L10, one in NSH):

0. **crash** (§V-D, "will crash if distance == 0"): the ranged skill divides by
   the player-boss distance, and in the paper's snippet the call sits under
   ``if player.buff_time …``: used at distance 0 (reachable only by dashing
   onto the boss) while any buff is active, the game crashes:
   ``telemetry.crashed`` is set and the episode terminates. Without a buff the
   skill at distance 0 misses (the guarded call is not made).
1. **stuck**: arriving at ``stuck_cell`` (by a move or a dash) while reduction
   buff ``stuck_buff`` is active traps the player in the scenery: from then on
   its actions have no effect and the boss, which cannot path to it, stands
   idle, so the state (and the observation) stops changing until the time
   limit, what Wuji's stuck oracle (§III, distance between the current state
   and the moving average of the previous ``n`` states below a threshold)
   detects.
2. **logical** (§V-D, "the damage from the boss becomes the treatment for the
   player"): a boss hit does ``hurt = atk - sum(buff_reduction[i] for active
   buffs i)`` and ``player.hp -= hurt`` with the fix ``hurt = max(hurt, 0)``
   missing. With the default values (reductions 3, 3, 4; attack 8..16) no two
   buffs can make ``hurt`` negative, but all three active at once with an
   attack of 8 or 9 heal the player. The developer assertion that catches it
   is :func:`hp_never_rises_from_boss_hit` (Wuji §III: logical bugs "require
   specific assertions").
3. **death crash** (§V-D, NSH: "triggered when some properties of the game are
   reset with invalid values which are generated only when the boss is dead
   with multiple specific buffs ... a very hard corner case to reach by manual
   testing"): the boss dies while both buffs of ``death_crash_buffs`` are
   active (default B and C; :meth:`randomize` draws the pair per run). The
   game crashes in the death handling: ``telemetry.crashed`` is set, the
   episode terminates and the kill earns its damage but no ``win_bonus`` (the
   game never got to record the win). Only a player who wins can reach it,
   and only one who wins in an unusual state: over 2,000 episodes random never
   wins, and the scripted fighter below wins 57% of its fights but kills the
   boss with B and C both up in only 0.25% of them.
4. … **late stuck bugs** (``num_late_stuck``, bug ids 4, 5, …): like the stuck
   bug, at ``late_cells[k]`` with buff ``late_buffs[k]`` active, but live only
   once the boss is worn down to ``late_phase[k]`` of its hp or less. The
   paper's commercial scenarios hide bugs deep in a fight, where only a player
   who wins gets, and in states only an explorer visits ("random testing … is
   the worst one in the larger games", §V-C); these stand for them, so that
   the comparison of strategies has bugs of both kinds. The paper does not
   list its L10/NSH bugs (its copy here lost their counts); default 6, each
   at a phase drawn from ``late_phases`` (default 50%, 30% or 15%).

Balance (our choice; the paper's fights are its games'): the boss has 250 hp,
so that the fight has depth, and regains ``boss_regen`` (2) hp in every step in
which it takes no damage, so that only sustained damage wears it down: in the
paper's large games random "cannot effectively accomplish the game intermediate
missions" (§V-B), and its deep states and bugs stay out of its reach. Measured
over 2,000 episodes each (``tests/envs/test_combat.py::test_the_fight_has_depth``
checks both): a random player wears the boss down to half its hp in 1.8% of
episodes and to 30% in 0.1%, never to 15%; a scripted fighter (close in, skill
when ready, else a buff when none is active, else melee; heal below half hp; a
random action 10% of the time) in 99%, 90% and 74%, winning 57%. Without the
regeneration random reached half in 24%, 30% in 6% and 15% in 1.3%, enough
episodes in a second of play to reach every late bug; with 150 hp and no
regeneration it won 11% of its fights.

Phases (``boss_phase_lock``, default on): the boss's hp bar is cut at ``late_phases``
(125, 75 and 37 of 250 hp), and once worn past a boundary it regenerates only up to
it, as many games' bosses keep their phases. Without the lock the deep states of the
fight last only as long as the player keeps hitting: a player who breaks a phase
and then walks off to another cell, or buffs, gives the boss its hp back, and the
paper's point that a policy "unable to complete the mission ... would not explore
the states after the mission" (§IV-A) would have no such states to point at. The
lock leaves random's reach as it was (it rarely breaks the first phase: 1.8% of
fights reach half, 0.15% 30%, none 15%) and the fighter's too (99%, 91%, 76%).

Observation: ``float32[20]`` in ``[0, 1]`` (player hp slot up to 2, since the
logical bug can over-heal): ``[0:2]`` player (row, col) / (rows-1, cols-1),
``[2:4]`` boss (row, col) likewise, ``[4]`` player hp / ``player_max_hp``
(clipped to ``[0, 2]``), ``[5]`` boss hp / ``boss_max_hp``, ``[6:9]`` buff
timers / ``buff_duration``, ``[9:15]`` cooldowns of actions 5-10 / their
length, ``[15]`` Manhattan distance / (rows + cols - 2), ``[16:20]`` facing
one-hot (N, S, E, W).

Reward: damage dealt to the boss (at most its hp left) / ``boss_max_hp``, ``+win_bonus`` when the
boss's hp reaches 0 and ``-lose_penalty`` when the player's does (both
terminate, as does a crash); also in ``telemetry.game_reward``.

Wuji's game state (:meth:`CombatArena.state_features`): both cells, both hps, the
distance and the active buffs.

Coverage (Wuji §V-C, bucketed state features): a cell is (player cell, boss-hp
bucket out of ``hp_buckets``, which buffs are active (3 bits), player–boss
Manhattan distance 0..rows+cols−2): "distance is a feature in the state, new
states will be covered when distance changes" (§V-D), and the active buffs
are where the crash, stuck and logical bugs hide. ``map_shape`` is
``(rows * cols, hp_buckets * 8 * (rows + cols - 1))``, one row per arena cell
(44,064 cells on the default 9×9 arena).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.coverage import bucket_id
from jgtest.envs.base import TestingEnv
from jgtest.envs.grid import NSEW
from jgtest.types import Telemetry

NUM_ACTIONS = 11
MELEE, SKILL, DASH, BUFF_A, BUFF_B, BUFF_C, HEAL = 4, 5, 6, 7, 8, 9, 10
#: Number of reduction buffs; ``cooldowns`` covers actions ``SKILL..HEAL``.
NUM_BUFFS = 3
NUM_COOLDOWNS = NUM_ACTIONS - SKILL
OBS_SIZE = 20
BUG_CRASH, BUG_STUCK, BUG_LOGICAL, BUG_DEATH_CRASH = 0, 1, 2, 3
#: Bugs before the late stuck bugs (ids 0..3 above).
NUM_BASE_BUGS = 4
#: Default boss hp fractions at which a late stuck bug goes live (one drawn per bug).
LATE_PHASES = (0.5, 0.3, 0.15)


@struct.dataclass
class EnvState(environment.EnvState):
    player_pos: jax.Array  # int32[2] (row, col)
    boss_pos: jax.Array  # int32[2] (row, col)
    player_hp: jax.Array  # int32 (may exceed the maximum through the logical bug)
    boss_hp: jax.Array  # int32
    facing: jax.Array  # int32 in [0, 4): last move direction (N, S, E, W)
    buff_timer: jax.Array  # int32[3] steps left of each reduction buff (0: off)
    cooldowns: jax.Array  # int32[6] steps until actions 5..10 can be used again
    frozen: jax.Array  # bool, the stuck bug has trapped the player
    crashed: jax.Array  # bool, the crash bug happened (terminal)
    boss_hit: jax.Array  # bool, the boss hit the player this step
    healed: jax.Array  # int32, hp restored by the heal action this step
    bugs_seen: jax.Array  # bool[4 + S] bugs already fired this episode
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    player_start: jax.Array  # int32[2]
    boss_start: jax.Array  # int32[2]
    stuck_cell: jax.Array  # int32[2] cell of the stuck bug
    buff_reduction: jax.Array  # int32[3] damage reduction of buffs A, B, C
    late_cells: jax.Array  # int32[S, 2] cells of the late stuck bugs
    late_buffs: jax.Array  # int32[S] the buff each needs active
    late_phase: jax.Array  # float32[S] boss hp fraction at or below which each is live
    death_crash_buffs: jax.Array  # int32[2] the two buffs whose being active when the boss dies crashes the game
    stuck_buff: int = 0  # which buff (0, 1, 2) must be active for the stuck bug
    player_max_hp: int = 100
    boss_max_hp: int = 250
    boss_atk_min: int = 8
    boss_atk_max: int = 16  # inclusive
    boss_range: int = 1
    boss_move_prob: float = 0.5
    boss_attack_prob: float = 0.5
    melee_damage: int = 10
    skill_damage: int = 24
    skill_range: int = 4
    skill_cooldown: int = 3
    dash_length: int = 2
    dash_damage: int = 6
    dash_cooldown: int = 4
    buff_duration: int = 4
    buff_cooldown: int = 6
    heal_amount: int = 20
    heal_cooldown: int = 10
    boss_regen: int = 2  # hp the boss regains in a step in which it takes no damage
    boss_phase_lock: bool = True  # regeneration stops at the phase boundary (late_phases) the boss has fallen past
    win_bonus: float = 1.0
    lose_penalty: float = 1.0
    max_steps_in_episode: int = 200


def hp_never_rises_from_boss_hit(state_before: EnvState, state_after: EnvState) -> jax.Array:
    """The developer assertion for the logical bug (Wuji §III "Oracle logical", §V-D).

    "A boss hit never heals the player": when the boss hit the player in the
    transition ``state_before -> state_after``, the player's hp may not end
    above its previous value plus what the heal action restored in that step.

    Use the state ``step_env`` returns (``env.step`` auto-resets on the last
    step of an episode). Pure and vmappable.

    Args:
      state_before: state the step started from.
      state_after: state the step produced.

    Returns:
      ``bool``: ``True`` when the assertion holds, ``False`` on a bad transition.
    """
    rose = state_after.player_hp > state_before.player_hp + state_after.healed
    return ~(state_after.boss_hit & rose)


class CombatArena(TestingEnv):
    """Wuji's online-combat scenario, player vs boss (see module docstring).

    Args:
      rows: arena height (at least 3).
      cols: arena width (at least 3).
      hp_buckets: boss-hp buckets of the coverage cell id.
      num_late_stuck: late stuck bugs (module docstring), placed by
        :meth:`randomize` with seed 0 by default.
      late_phases: the boss hp fractions, each in ``(0, 1]``, among which each late stuck
        bug's phase is drawn (deeper phases: bugs only a player who nearly wins reaches).

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("CombatArena-v0")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> obs, state, reward, terminated, truncated, info = env.step(jax.random.key(1), state, 4, params)
      >>> info["telemetry"].bugs_fired.shape             # one flag per injected bug
      (10,)
    """

    env_id = "CombatArena-v0"

    def __init__(self, rows: int = 9, cols: int = 9, hp_buckets: int = 4, num_late_stuck: int = 6, late_phases: tuple[float, ...] = LATE_PHASES):
        super().__init__()
        self.rows, self.cols, self.hp_buckets, self.num_late_stuck = int(rows), int(cols), int(hp_buckets), int(num_late_stuck)
        self.late_phases = tuple(float(p) for p in late_phases)
        if not self.late_phases or not all(0.0 < p <= 1.0 for p in self.late_phases):
            raise ValueError(f"{self.env_id}: late_phases must be boss hp fractions in (0, 1], got {late_phases!r}")
        if self.num_late_stuck < 0 or self.num_late_stuck > self.rows * self.cols - 2:
            raise ValueError(f"{self.env_id}: num_late_stuck must be in [0, {self.rows * self.cols - 2}], got {num_late_stuck}")
        if self.rows < 3 or self.cols < 3:
            raise ValueError(f"{self.env_id}: the arena must be at least 3x3, got {self.rows}x{self.cols}")
        if self.hp_buckets < 1:
            raise ValueError(f"{self.env_id}: hp_buckets must be at least 1, got {self.hp_buckets}")
        arrays = dict(  # built in NumPy and put on the device: no computation, so nothing compiles here
            player_start=np.array([self.rows - 2, self.cols // 2], np.int32),
            boss_start=np.array([1, self.cols // 2], np.int32),
            stuck_cell=np.array([self.rows // 2, self.cols - 2], np.int32),
            buff_reduction=np.array([3, 3, 4], np.int32),
            late_cells=np.zeros((self.num_late_stuck, 2), np.int32),
            late_buffs=np.zeros((self.num_late_stuck,), np.int32),
            late_phase=np.ones((self.num_late_stuck,), np.float32),
            death_crash_buffs=np.array([1, 2], np.int32),
        )
        self._default_params = EnvParams(**{name: jnp.asarray(value) for name, value in arrays.items()})
        if self.num_late_stuck:
            drawn = jax.jit(self._draw_late)(jax.random.key(0), self._default_params)
            self._default_params = self._default_params.replace(**drawn)

    # ----- metadata ---------------------------------------------------------
    @property
    def default_params(self) -> EnvParams:
        return self._default_params

    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ("crash", "stuck", "logical", "crash") + ("stuck",) * self.num_late_stuck

    @property
    def map_shape(self) -> tuple[int, int]:
        return (self.rows * self.cols, self.hp_buckets * 2**NUM_BUFFS * self._num_distances)

    @property
    def _num_distances(self) -> int:
        return self.rows + self.cols - 1

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS


    def observation_space(self, params) -> spaces.Box:
        high = np.ones((OBS_SIZE,), np.float32)
        high[4] = 2.0
        return spaces.Box(jnp.zeros((OBS_SIZE,), jnp.float32), jnp.asarray(high), (OBS_SIZE,), jnp.float32)

    # ----- dynamics ---------------------------------------------------------
    def reset_env(self, key, params: EnvParams):
        state = EnvState(
            player_pos=jnp.asarray(params.player_start, jnp.int32),
            boss_pos=jnp.asarray(params.boss_start, jnp.int32),
            player_hp=jnp.asarray(params.player_max_hp, jnp.int32),
            boss_hp=jnp.asarray(params.boss_max_hp, jnp.int32),
            facing=jnp.int32(0),
            buff_timer=jnp.zeros((NUM_BUFFS,), jnp.int32),
            cooldowns=jnp.zeros((NUM_COOLDOWNS,), jnp.int32),
            frozen=jnp.bool_(False),
            crashed=jnp.bool_(False),
            boss_hit=jnp.bool_(False),
            healed=jnp.int32(0),
            bugs_seen=jnp.zeros((NUM_BASE_BUGS + self.num_late_stuck,), bool),
            time=0,
        )
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
        k_move, k_attack, k_roll = jax.random.split(key, 3)
        moves = jnp.asarray(NSEW)
        frozen = state.frozen

        # Timers and cooldowns count down at the start of the step.
        buff_timer = jnp.maximum(state.buff_timer - 1, 0)
        cooldowns = jnp.maximum(state.cooldowns - 1, 0)
        ready = cooldowns[jnp.clip(action - SKILL, 0, NUM_COOLDOWNS - 1)] == 0
        dist0 = _distance(state.player_pos, state.boss_pos)

        # Movement (0-3): blocked by the border and by the boss.
        is_move = action < MELEE
        step_to = state.player_pos + moves[jnp.clip(action, 0, 3)]
        walk_ok = _inside(step_to, self.rows, self.cols) & ~jnp.all(step_to == state.boss_pos)
        facing = jnp.where(is_move, action, state.facing)
        # Dash (6): dash_length cells in the facing direction, through the boss.
        is_dash = (action == DASH) & ready
        dash_to = _clip_pos(state.player_pos + params.dash_length * moves[state.facing], self.rows, self.cols)
        pos = jnp.where(is_move & walk_ok, step_to, state.player_pos)
        pos = jnp.where(is_dash, dash_to, pos)
        dist = _distance(pos, state.boss_pos)

        # Attacks on the boss.
        melee_hit = (action == MELEE) & (dist0 <= 1)
        is_skill = (action == SKILL) & ready
        buffed = jnp.any(buff_timer > 0)
        skill_crash = is_skill & (dist0 == 0) & buffed  # under `if player.buff_time`: "will crash if distance == 0" (§V-D)
        skill_hit = is_skill & (dist0 > 0) & (dist0 <= params.skill_range)
        skill_dmg = params.skill_damage // jnp.maximum(dist0, 1)
        damage = (
            jnp.where(melee_hit, params.melee_damage, 0)
            + jnp.where(skill_hit, skill_dmg, 0)
            + jnp.where(is_dash & (dist <= 1), params.dash_damage, 0)
        )
        # Buffs (7-9) and heal (10).
        buff_id = action - BUFF_A
        is_buff = (action >= BUFF_A) & (action <= BUFF_C) & ready
        buff_timer = jnp.where(is_buff & (jnp.arange(NUM_BUFFS) == buff_id), params.buff_duration, buff_timer)
        is_heal = (action == HEAL) & ready
        healed = jnp.where(is_heal, jnp.clip(params.player_max_hp - state.player_hp, 0, params.heal_amount), 0)
        used = (action >= SKILL) & ready
        lengths = jnp.stack(
            [params.skill_cooldown, params.dash_cooldown]
            + [params.buff_cooldown] * NUM_BUFFS
            + [params.heal_cooldown]
        ).astype(jnp.int32)
        cooldowns = jnp.where(used & (jnp.arange(NUM_COOLDOWNS) == action - SKILL), lengths, cooldowns)

        # Stuck bug: arriving at the stuck cell with the given buff active.
        moved = ~jnp.all(pos == state.player_pos)
        stuck = moved & jnp.all(pos == params.stuck_cell) & (buff_timer[params.stuck_buff] > 0)
        worn_down = state.boss_hp <= params.late_phase * params.boss_max_hp
        late = moved & jnp.all(pos == params.late_cells, axis=-1) & (buff_timer[params.late_buffs] > 0) & worn_down
        stuck_any = stuck | jnp.any(late)

        damage = jnp.where(skill_crash, 0, jnp.minimum(damage, jnp.maximum(state.boss_hp, 0)))
        regen = jnp.where(damage > 0, 0, params.boss_regen)  # only sustained damage wears the boss down
        boss_hp = jnp.minimum(state.boss_hp - damage + regen, self._regen_cap(state.boss_hp - damage, params))
        killed = ~skill_crash & (boss_hp <= 0)
        death_crash = killed & jnp.all(buff_timer[params.death_crash_buffs] > 0)  # NSH (§V-D)
        crashed = skill_crash | death_crash
        won = killed & ~death_crash

        # Boss turn (skipped after a crash, a win, or once the player is stuck).
        boss_acts = ~(crashed | won | stuck_any)
        gap = pos - state.boss_pos
        along_rows = jnp.abs(gap[0]) >= jnp.abs(gap[1])
        boss_step = jnp.where(along_rows, jnp.array([1, 0]), jnp.array([0, 1])) * jnp.sign(gap)
        boss_moves = boss_acts & (dist > params.boss_range) & (jax.random.uniform(k_move) < params.boss_move_prob)
        boss_pos = jnp.where(boss_moves, state.boss_pos + boss_step, state.boss_pos).astype(jnp.int32)
        in_range = _distance(pos, boss_pos) <= params.boss_range
        boss_hit = boss_acts & in_range & (jax.random.uniform(k_attack) < params.boss_attack_prob)
        atk = jax.random.randint(k_roll, (), params.boss_atk_min, params.boss_atk_max + 1)
        # hurt = boss.atk; hurt -= buf.reduce_val for each active buff; the fix
        # `hurt = max(hurt, 0)` is missing (Wuji §V-D): the logical bug.
        hurt = atk - jnp.sum(jnp.where(buff_timer > 0, params.buff_reduction, 0))
        hurt = jnp.where(boss_hit, hurt, 0)
        player_hp = state.player_hp + healed - hurt
        lost = ~won & ~crashed & (player_hp <= 0)

        fired = jnp.concatenate([jnp.stack([skill_crash, stuck, boss_hit & (hurt < 0), death_crash]), late]) & ~state.bugs_seen
        game_reward = (
            damage / params.boss_max_hp
            + jnp.where(won, params.win_bonus, 0.0)
            - jnp.where(lost, params.lose_penalty, 0.0)
        ).astype(jnp.float32)

        new_state = EnvState(
            player_pos=pos.astype(jnp.int32),
            boss_pos=boss_pos,
            player_hp=jnp.asarray(player_hp, jnp.int32),
            boss_hp=jnp.asarray(boss_hp, jnp.int32),
            facing=jnp.asarray(facing, jnp.int32),
            buff_timer=buff_timer.astype(jnp.int32),
            cooldowns=cooldowns,
            frozen=stuck_any,
            crashed=crashed,
            boss_hit=boss_hit,
            healed=jnp.asarray(healed, jnp.int32),
            bugs_seen=state.bugs_seen | fired,
            time=state.time + 1,
        )
        # A stuck player's world no longer changes (only the clock runs).
        frozen_state = state.replace(boss_hit=jnp.bool_(False), healed=jnp.int32(0), time=state.time + 1)
        new_state = jax.tree.map(lambda a, b: jnp.where(frozen, a, b), frozen_state, new_state)
        no_bug = jnp.zeros_like(fired)
        fired = jnp.where(frozen, no_bug, fired)
        game_reward = jnp.where(frozen, 0.0, game_reward).astype(jnp.float32)
        terminated = ~frozen & (crashed | won | lost)

        telemetry = Telemetry.make(
            position=new_state.player_pos,
            cell=self.cell_id(new_state, params),
            bugs_fired=fired,
            game_reward=game_reward,
            crashed=new_state.crashed,
        )
        return self.get_obs(new_state, params), new_state, game_reward, terminated, {"telemetry": telemetry}

    def cell_id(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Coverage cell: (player cell, boss-hp bucket, active-buff bits, player–boss distance)."""
        hp_frac = jnp.asarray(state.boss_hp, jnp.float32) / params.boss_max_hp
        hp_bucket = bucket_id(hp_frac[None], 0.0, 1.0, self.hp_buckets)
        buff_bits = jnp.sum((state.buff_timer > 0) * 2 ** jnp.arange(NUM_BUFFS)).astype(jnp.int32)
        flat = state.player_pos[0] * self.cols + state.player_pos[1]
        dist = _distance(state.player_pos, state.boss_pos)
        return ((flat * self.hp_buckets + hp_bucket) * 2**NUM_BUFFS + buff_bits) * self._num_distances + dist

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        params = self.default_params if params is None else params
        scale = jnp.array([self.rows - 1, self.cols - 1], jnp.float32)
        lengths = jnp.stack(
            [params.skill_cooldown, params.dash_cooldown]
            + [params.buff_cooldown] * NUM_BUFFS
            + [params.heal_cooldown]
        ).astype(jnp.float32)
        obs = jnp.concatenate(
            [
                state.player_pos / scale,
                state.boss_pos / scale,
                jnp.clip(jnp.stack([state.player_hp / params.player_max_hp]), 0.0, 2.0),
                jnp.clip(jnp.stack([state.boss_hp / params.boss_max_hp]), 0.0, 1.0),
                jnp.clip(state.buff_timer / jnp.maximum(params.buff_duration, 1), 0.0, 1.0),
                jnp.clip(state.cooldowns / jnp.maximum(lengths, 1.0), 0.0, 1.0),
                jnp.stack([_distance(state.player_pos, state.boss_pos) / (self.rows + self.cols - 2)]),
                jax.nn.one_hot(state.facing, 4),
            ]
        )
        return obs.astype(jnp.float32)

    #: Observation slots of Wuji's game state: positions, hps, distance (the buffs are added as on/off).
    _STATE_SLOTS = np.r_[0:6, 15]

    def _regen_cap(self, boss_hp: jax.Array, params: EnvParams) -> jax.Array:
        """The most hp the boss can regenerate to from ``boss_hp``: its maximum, or with
        ``boss_phase_lock`` the lowest phase boundary (``late_phases`` of its maximum hp, floored)
        at or above ``boss_hp``."""
        bounds = jnp.floor(jnp.asarray(self.late_phases, jnp.float32) * params.boss_max_hp).astype(jnp.int32)
        locked = jnp.min(jnp.where(bounds >= boss_hp, bounds, params.boss_max_hp))  # phases are at most 1
        return jnp.where(params.boss_phase_lock, locked, params.boss_max_hp)

    def state_features(self, obs: jax.Array) -> jax.Array:
        """Wuji's game state (Def. 3): player and boss cells, both hps, the player–boss distance and
        which buffs are active, as ``float32[..., 10]``.

        Our choice (the paper lists no features for its games): the aspects its §V-D bugs turn on
        ("distance is a feature in the state"; buffs; hp), without the buff timers, cooldowns and
        facing, which tick or flip nearly every step: with them 66–80% of every strategy's steps
        were new states, so coverage only counted steps played.
        """
        buffs = (obs[..., 6:9] > 0).astype(jnp.float32)
        return jnp.concatenate([obs[..., self._STATE_SLOTS], buffs], axis=-1)

    def state_feature_bounds(self, params) -> tuple[np.ndarray, np.ndarray]:
        low, high = super().state_feature_bounds(params)
        return np.r_[low[self._STATE_SLOTS], np.zeros(NUM_BUFFS, np.float32)], np.r_[high[self._STATE_SLOTS], np.ones(NUM_BUFFS, np.float32)]

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.crashed | (state.boss_hp <= 0) | (state.player_hp <= 0)

    # ----- testing hooks ----------------------------------------------------
    #: The logical bug's developer assertion (see :func:`hp_never_rises_from_boss_hit`).
    logical_assertion = staticmethod(hp_never_rises_from_boss_hit)

    def randomize(self, key, params: EnvParams) -> EnvParams:
        """Redraws the stuck bug, the logical bug's numbers and the death crash's buffs (Wuji §V-A), jittable.

        * ``stuck_cell``: uniform over the arena cells other than the two
          start cells; ``stuck_buff``: uniform in ``{0, 1, 2}``.
        * ``buff_reduction``: each uniform in ``[2, 5]``; ``boss_atk_min``:
          uniform in ``[max pair sum + 1, total - 1]`` and ``boss_atk_max`` =
          ``boss_atk_min + U[6, 10]``, so that no two buffs ever make the hit
          negative but all three do for the lowest attack rolls (the paper's
          "certain range" of the initial damage).
        * ``death_crash_buffs``: the two buffs other than one left out uniformly.
        * the late stuck bugs (:meth:`_draw_late`).
        """
        k_cell, k_buff, k_red, k_min, k_span, k_late, k_death = jax.random.split(key, 7)
        stuck_cell = self._free_cells(k_cell, params, 1)[0]
        reduction = jax.random.randint(k_red, (NUM_BUFFS,), 2, 6).astype(jnp.int32)
        total = jnp.sum(reduction)
        pair_max = total - jnp.min(reduction)
        atk_min = jax.random.randint(k_min, (), pair_max + 1, total)
        atk_max = atk_min + jax.random.randint(k_span, (), 6, 11)
        return params.replace(
            **self._draw_late(k_late, params),
            stuck_cell=stuck_cell,
            stuck_buff=jax.random.randint(k_buff, (), 0, NUM_BUFFS),
            buff_reduction=reduction,
            boss_atk_min=atk_min,
            boss_atk_max=atk_max,
            death_crash_buffs=(jax.random.randint(k_death, (), 0, NUM_BUFFS) + jnp.array([1, 2])) % NUM_BUFFS,
        )

    def _free_cells(self, key, params: EnvParams, n: int) -> jax.Array:
        """``int32[n, 2]``: ``n`` distinct cells drawn uniformly among those that are no start cell."""
        rows, cols = self.rows, self.cols
        ids = jnp.arange(rows * cols)
        starts = jnp.stack([params.player_start, params.boss_start])
        taken = jnp.any(ids[:, None] == starts[:, 0] * cols + starts[:, 1], axis=-1)
        _, flat = jax.lax.top_k(jax.random.gumbel(key, (rows * cols,)) + jnp.where(taken, -1e9, 0.0), n)
        return jnp.stack([flat // cols, flat % cols], axis=-1).astype(jnp.int32)

    def _draw_late(self, key, params: EnvParams) -> dict:
        """Late stuck bugs: distinct cells other than the starts, uniform buffs, phases uniform
        among ``late_phases``."""
        k_cell, k_buff, k_phase = jax.random.split(key, 3)
        n = self.num_late_stuck
        return {
            "late_cells": self._free_cells(k_cell, params, n),
            "late_buffs": jax.random.randint(k_buff, (n,), 0, NUM_BUFFS).astype(jnp.int32),
            "late_phase": jax.random.choice(k_phase, jnp.array(self.late_phases, jnp.float32), (n,)),
        }

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        rows, cols = self.rows, self.cols
        cells = {}
        for what in ("player_start", "boss_start", "stuck_cell"):
            cell = np.asarray(getattr(params, what))
            if cell.shape != (2,):
                raise ValueError(f"{self.name}: {what} must be a (row, col) pair, got shape {cell.shape}")
            r, c = (int(v) for v in cell)
            if not (0 <= r < rows and 0 <= c < cols):
                raise ValueError(f"{self.name}: {what} at ({r}, {c}) is outside the {rows}x{cols} arena")
            cells[what] = (r, c)
        if cells["player_start"] == cells["boss_start"]:
            raise ValueError(f"{self.name}: player_start and boss_start are the same cell {cells['boss_start']}")
        late = np.asarray(params.late_cells)
        if late.shape != (self.num_late_stuck, 2):
            raise ValueError(f"{self.name}: late_cells must have shape ({self.num_late_stuck}, 2), got {late.shape}")
        for k, (r, c) in enumerate(late.tolist()):
            if not (0 <= r < rows and 0 <= c < cols):
                raise ValueError(f"{self.name}: late stuck bug {k} at ({r}, {c}) is outside the {rows}x{cols} arena")
        buffs, phase = np.asarray(params.late_buffs), np.asarray(params.late_phase)
        if buffs.shape != (self.num_late_stuck,) or np.any((buffs < 0) | (buffs >= NUM_BUFFS)):
            raise ValueError(f"{self.name}: late_buffs must be {self.num_late_stuck} buffs in 0..2, got {buffs.tolist()}")
        if phase.shape != (self.num_late_stuck,) or np.any(~((phase > 0) & (phase <= 1))):
            raise ValueError(f"{self.name}: late_phase must be {self.num_late_stuck} hp fractions in (0, 1], got {phase.tolist()}")
        death = np.asarray(params.death_crash_buffs)
        if death.shape != (2,) or np.any((death < 0) | (death >= NUM_BUFFS)) or death[0] == death[1]:
            raise ValueError(f"{self.name}: death_crash_buffs must be two different buffs in 0..2, got {death.tolist()}")
        red = np.asarray(params.buff_reduction)
        if red.shape != (NUM_BUFFS,):
            raise ValueError(f"{self.name}: buff_reduction must have shape ({NUM_BUFFS},), got {red.shape}")
        if np.any(red < 0):
            raise ValueError(f"{self.name}: buff_reduction values must be non-negative, got {red.tolist()}")
        stuck_buff = int(np.asarray(params.stuck_buff))
        if not 0 <= stuck_buff < NUM_BUFFS:
            raise ValueError(f"{self.name}: stuck_buff must be 0, 1 or 2 (a reduction buff), got {stuck_buff}")
        atk_min, atk_max = int(np.asarray(params.boss_atk_min)), int(np.asarray(params.boss_atk_max))
        if atk_min < 0 or atk_max < atk_min:
            raise ValueError(
                f"{self.name}: boss attack range [{atk_min}, {atk_max}] must satisfy 0 <= boss_atk_min <= boss_atk_max"
            )
        for what in ("player_max_hp", "boss_max_hp", "boss_range", "skill_range", "dash_length", "buff_duration"):
            value = int(np.asarray(getattr(params, what)))
            if value < 1:
                raise ValueError(f"{self.name}: {what} must be at least 1, got {value}")
        for what in (
            "melee_damage", "skill_damage", "dash_damage", "heal_amount",
            "skill_cooldown", "dash_cooldown", "buff_cooldown", "heal_cooldown", "boss_regen",
        ):  # fmt: skip
            value = int(np.asarray(getattr(params, what)))
            if value < 0:
                raise ValueError(f"{self.name}: {what} must be non-negative, got {value}")
        for what in ("boss_move_prob", "boss_attack_prob"):
            value = float(np.asarray(getattr(params, what)))
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{self.name}: {what} must be a probability in [0, 1], got {value}")
        for what in ("win_bonus", "lose_penalty"):
            value = float(np.asarray(getattr(params, what)))
            if not np.isfinite(value):
                raise ValueError(f"{self.name}: {what} must be finite, got {value}")


def _distance(a: jax.Array, b: jax.Array) -> jax.Array:
    """Manhattan distance between two (row, col) cells."""
    return jnp.sum(jnp.abs(a - b)).astype(jnp.int32)


def _inside(pos: jax.Array, rows: int, cols: int) -> jax.Array:
    return (pos[0] >= 0) & (pos[0] < rows) & (pos[1] >= 0) & (pos[1] < cols)


def _clip_pos(pos: jax.Array, rows: int, cols: int) -> jax.Array:
    return jnp.stack([jnp.clip(pos[0], 0, rows - 1), jnp.clip(pos[1], 0, cols - 1)])
