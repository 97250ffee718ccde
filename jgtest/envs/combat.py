"""Combat Arena: Wuji's L10-sized combat scenario (Zheng et al., ASE 2019, §V-A, §V-D).

A player "fights against an opponent", "equipped with skills" (§V-A), on a grid arena with the
crash, stuck and logical bugs of §V-D injected. Rules: :class:`CombatArena`; ``step_env``
composes this module's pure steps.

* chosen: a 250-hp boss regaining 2 hp in each step without damage, because random must not
  "accomplish the game intermediate missions" (§V-B).
* chosen: the boss keeps the phases broken (``boss_phase_lock``), so that there are states after
  the mission to explore (§IV-A).
* chosen: late stuck bugs that go live only once the boss is worn down, because the paper's games
  hide bugs deep in a fight.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment

from jgtest.coverage import bucket_id
from jgtest.envs.arena import (
    ArenaGame,
    boss_hurt,
    boss_turn,
    check_boss,
    check_range,
    countdown,
    phase_bounds,
    regen_cap,
)
from jgtest.envs.base import check_shape
from jgtest.envs.grid import NSEW, clip_pos, distance, inside

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
    #: int32[2]: the two buffs whose being active when the boss dies crashes the game
    death_crash_buffs: jax.Array
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
    #: regeneration stops at the phase boundary (late_phases) the boss has fallen past
    boss_phase_lock: bool = True
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


def cooldown_lengths(params: EnvParams) -> jax.Array:
    """The cooldown of each of actions 5..10 (skill, dash, buffs A, B, C, heal)."""
    return jnp.stack(
        [params.skill_cooldown, params.dash_cooldown]
        + [params.buff_cooldown] * NUM_BUFFS
        + [params.heal_cooldown]
    )


def move_player(state: EnvState, action, ready, params: EnvParams, rows: int, cols: int):
    """Moves (0-3) and the dash (6).

    A move goes one cell, blocked by the border and by the boss's cell, and turns the player; the
    dash jumps ``dash_length`` cells in the facing direction, through the boss (it can land on the
    boss's cell), stopping at the border.

    Returns:
      ``(pos, facing, dashed)``.
    """
    moves = jnp.asarray(NSEW)
    is_move = action < MELEE
    step_to = state.player_pos + moves[jnp.clip(action, 0, 3)]
    walk_ok = inside(step_to, rows, cols) & ~jnp.all(step_to == state.boss_pos)
    dashed = (action == DASH) & ready
    dash_to = clip_pos(state.player_pos + params.dash_length * moves[state.facing], rows, cols)
    pos = jnp.where(is_move & walk_ok, step_to, state.player_pos)
    return jnp.where(dashed, dash_to, pos), jnp.where(is_move, action, state.facing), dashed


def attack(state: EnvState, action, ready, pos, dashed, buffed, params: EnvParams):
    """The player's attacks: melee (4) within distance 1, the skill (5) for ``skill_damage //
    distance`` within ``skill_range``, and a dash (6) that ends within distance 1.

    Bug 0, the crash: the skill divides by the distance, under ``if player.buff_time``; used at
    distance 0 while a buff is up (``buffed``), "will crash if distance == 0" (§V-D). Without a buff
    it misses.

    Returns:
      ``(damage, skill_crash)``.
    """
    dist0 = distance(state.player_pos, state.boss_pos)
    melee_hit = (action == MELEE) & (dist0 <= 1)
    is_skill = (action == SKILL) & ready
    skill_crash = is_skill & (dist0 == 0) & buffed
    skill_hit = is_skill & (dist0 > 0) & (dist0 <= params.skill_range)
    skill_dmg = params.skill_damage // jnp.maximum(dist0, 1)
    damage = (
        jnp.where(melee_hit, params.melee_damage, 0)
        + jnp.where(skill_hit, skill_dmg, 0)
        + jnp.where(dashed & (distance(pos, state.boss_pos) <= 1), params.dash_damage, 0)
    )
    return damage, skill_crash


def buff_and_heal(state: EnvState, buff_timer, cooldowns, action, ready, params: EnvParams):
    """Buffs (7-9) run for ``buff_duration`` steps, the heal (10) restores ``heal_amount`` hp up to
    the maximum, and a used action of 5..10 starts its cooldown.

    Returns:
      ``(buff_timer, cooldowns, healed)``.
    """
    buff_id = action - BUFF_A
    is_buff = (action >= BUFF_A) & (action <= BUFF_C) & ready
    cast = is_buff & (jnp.arange(NUM_BUFFS) == buff_id)
    buff_timer = jnp.where(cast, params.buff_duration, buff_timer)
    is_heal = (action == HEAL) & ready
    headroom = params.player_max_hp - state.player_hp
    healed = jnp.where(is_heal, jnp.clip(headroom, 0, params.heal_amount), 0)
    used = (action >= SKILL) & ready & (jnp.arange(NUM_COOLDOWNS) == action - SKILL)
    cooldowns = jnp.where(used, cooldown_lengths(params).astype(jnp.int32), cooldowns)
    return buff_timer, cooldowns, healed


def stuck_bugs(state: EnvState, pos, buff_timer, params: EnvParams):
    """Bug 1 and the late stuck bugs (4 and up): the player arrives (by a move or a dash) at the
    bug's cell with its buff up; a late one only once the boss is at or below ``late_phase`` of its
    hp.

    Returns:
      ``(stuck, late)``: ``bool`` and ``bool[num_late_stuck]``.
    """
    moved = ~jnp.all(pos == state.player_pos)
    stuck = moved & jnp.all(pos == params.stuck_cell) & (buff_timer[params.stuck_buff] > 0)
    worn_down = state.boss_hp <= params.late_phase * params.boss_max_hp
    at_cell = jnp.all(pos == params.late_cells, axis=-1)
    late = moved & at_cell & (buff_timer[params.late_buffs] > 0) & worn_down
    return stuck, late


def hurt_boss(state: EnvState, damage, skill_crash, buff_timer, late_phases, params: EnvParams):
    """The boss's hp after the player's turn: the damage (at most its hp left, none after a crash),
    else ``boss_regen`` hp back, up to its maximum or, with ``boss_phase_lock``, up to the lowest
    of ``late_phases`` it has fallen past.

    Bug 3, the death crash (NSH, §V-D: "the boss is dead with multiple specific buffs"): the boss
    dies while both ``death_crash_buffs`` are up.

    Returns:
      ``(damage, boss_hp, killed, death_crash)``.
    """
    damage = jnp.where(skill_crash, 0, jnp.minimum(damage, jnp.maximum(state.boss_hp, 0)))
    regen = jnp.where(damage > 0, 0, params.boss_regen)  # only sustained damage wears it down
    hit_hp = state.boss_hp - damage
    bounds = phase_bounds(jnp.asarray(late_phases, jnp.float32), params.boss_max_hp)
    locked = regen_cap(bounds, hit_hp, params.boss_max_hp)
    boss_hp = jnp.minimum(
        hit_hp + regen, jnp.where(params.boss_phase_lock, locked, params.boss_max_hp)
    )
    killed = ~skill_crash & (boss_hp <= 0)
    death_crash = killed & jnp.all(buff_timer[params.death_crash_buffs] > 0)
    return damage, boss_hp, killed, death_crash


class CombatArena(ArenaGame):
    """Wuji's online-combat scenario: a player fights a boss on a ``rows x cols`` arena.

    Actions (``Discrete(11)``; a traced out-of-range action is clipped into ``[0, 11)``; an action
    whose cooldown runs does nothing):

    * 0-3, N, S, E, W: move one cell, blocked by the border and the boss's cell; sets the facing
      the dash uses (:func:`move_player`).
    * 4, melee; 5, skill; 6, dash (:func:`attack`, :func:`move_player`).
    * 7-9, buffs A, B, C: reduction buff ``i`` takes ``buff_reduction[i]`` off each boss hit for
      ``buff_duration`` steps; 10, heal (:func:`buff_and_heal`).

    A step: timers count down, the player acts, the boss's hp takes the damage or regenerates
    (:func:`hurt_boss`), then, unless the fight is over or the player stuck, the boss acts
    (:func:`jgtest.envs.arena.boss_turn`, reach ``boss_range``).

    Bugs (``bug_kinds``), each firing the first time per episode:

    0. crash: the skill at distance 0 with a buff up (:func:`attack`); the episode terminates.
    1. stuck: arriving at ``stuck_cell`` with ``stuck_buff`` up (:func:`stuck_bugs`); from then on
       the player's actions do nothing and the boss idles, so the state stops changing until the
       time limit, which Wuji's stuck oracle (§III) detects.
    2. logical (§V-D): a boss hit with all three buffs up and a low roll heals the player
       (:func:`jgtest.envs.arena.boss_hurt`; the defaults let no two buffs do it). Its developer
       assertion is :func:`hp_never_rises_from_boss_hit`.
    3. death crash: the boss dies with both ``death_crash_buffs`` up (:func:`hurt_boss`); the kill
       earns its damage but no ``win_bonus``.
    4. and up, late stuck (``num_late_stuck``): as bug 1, at ``late_cells[k]`` with
       ``late_buffs[k]`` up, live once the boss is worn down to ``late_phase[k]`` of its hp.

    Observation ``float32[20]`` in ``[0, 1]``: ``[0:2]`` player (row, col) / (rows - 1, cols - 1),
    ``[2:4]`` boss likewise, ``[4]`` player hp / max (up to 2: bug 2 over-heals), ``[5]`` boss hp /
    max, ``[6:9]`` buff timers / ``buff_duration``, ``[9:15]`` cooldowns of actions 5-10 / their
    length, ``[15]`` distance / (rows + cols - 2), ``[16:20]`` facing one-hot (N, S, E, W).

    Reward: damage dealt / ``boss_max_hp``, ``+win_bonus`` when the boss's hp reaches 0,
    ``-lose_penalty`` when the player's does (both terminate, as does a crash).

    Coverage cell (Wuji §V-C): (player cell, boss-hp bucket, active buffs, distance), since
    "distance is a feature in the state" (§V-D) and the buffs are where the bugs hide.

    Args:
      rows: arena height (at least 3).
      cols: arena width (at least 3).
      hp_buckets: boss-hp buckets of the coverage cell id.
      num_late_stuck: late stuck bugs, placed by :meth:`randomize` with seed 0 by default.
      late_phases: the boss hp fractions, each in ``(0, 1]``, among which each late stuck
        bug's phase is drawn (deeper phases: bugs only a player who nearly wins reaches).

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("CombatArena-v0")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> obs, state, reward, terminated, truncated, info = env.step(
      ...     jax.random.key(1), state, 4, params
      ... )
      >>> info["telemetry"].bugs_fired.shape  # one flag per injected bug
      (10,)
    """

    env_id = "CombatArena-v0"
    num_actions = NUM_ACTIONS
    state_type = EnvState
    position_field = "player_pos"
    num_buffs, num_cooldowns = NUM_BUFFS, NUM_COOLDOWNS
    obs_size, hp_slot = OBS_SIZE, 4
    #: Observation slots of Wuji's game state: positions, hps, distance (and the buffs on/off).
    state_slots, buff_slots = np.r_[0:6, 15], slice(6, 9)
    start_zeros = (("boss_hit", jnp.bool_), ("healed", jnp.int32))

    def __init__(
        self,
        rows: int = 9,
        cols: int = 9,
        hp_buckets: int = 4,
        num_late_stuck: int = 6,
        late_phases: tuple[float, ...] = LATE_PHASES,
    ):
        super().__init__()
        self.rows, self.cols = int(rows), int(cols)
        self.hp_buckets, self.num_late_stuck = int(hp_buckets), int(num_late_stuck)
        self.late_phases = tuple(float(p) for p in late_phases)
        self._check_options(late_phases)
        arrays = dict(  # built in NumPy and put on the device: nothing compiles here
            player_start=np.array([self.rows - 2, self.cols // 2], np.int32),
            boss_start=np.array([1, self.cols // 2], np.int32),
            stuck_cell=np.array([self.rows // 2, self.cols - 2], np.int32),
            buff_reduction=np.array([3, 3, 4], np.int32),
            late_cells=np.zeros((self.num_late_stuck, 2), np.int32),
            late_buffs=np.zeros((self.num_late_stuck,), np.int32),
            late_phase=np.ones((self.num_late_stuck,), np.float32),
            death_crash_buffs=np.array([1, 2], np.int32),
        )
        self._default_params = EnvParams(**{k: jnp.asarray(v) for k, v in arrays.items()})
        if self.num_late_stuck:
            drawn = jax.jit(self._draw_late)(jax.random.key(0), self._default_params)
            self._default_params = self._default_params.replace(**drawn)

    def _check_options(self, late_phases) -> None:
        game, cells = self.env_id, self.rows * self.cols
        if not self.late_phases or not all(0.0 < p <= 1.0 for p in self.late_phases):
            raise ValueError(
                f"{game}: late_phases must be boss hp fractions in (0, 1], got {late_phases!r}"
            )
        if self.num_late_stuck < 0 or self.num_late_stuck > cells - 2:
            raise ValueError(
                f"{game}: num_late_stuck must be in [0, {cells - 2}], got {self.num_late_stuck}"
            )
        if self.rows < 3 or self.cols < 3:
            raise ValueError(f"{game}: the arena must be at least 3x3, got {self.rows}x{self.cols}")
        if self.hp_buckets < 1:
            raise ValueError(f"{game}: hp_buckets must be at least 1, got {self.hp_buckets}")

    # ----- metadata ---------------------------------------------------------
    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ("crash", "stuck", "logical", "crash") + ("stuck",) * self.num_late_stuck

    @property
    def map_shape(self) -> tuple[int, int]:
        return (self.rows * self.cols, self.hp_buckets * 2**NUM_BUFFS * self._num_distances)

    @property
    def _num_distances(self) -> int:
        return self.rows + self.cols - 1

    # ----- dynamics ---------------------------------------------------------
    def step_env(self, key, state: EnvState, action, params: EnvParams):
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
        keys = jax.random.split(key, 3)
        buff_timer, cooldowns = countdown(state.buff_timer), countdown(state.cooldowns)
        ready = cooldowns[jnp.clip(action - SKILL, 0, NUM_COOLDOWNS - 1)] == 0
        pos, facing, dashed = move_player(state, action, ready, params, self.rows, self.cols)
        buffed = jnp.any(buff_timer > 0)
        damage, skill_crash = attack(state, action, ready, pos, dashed, buffed, params)
        buff_timer, cooldowns, healed = buff_and_heal(
            state, buff_timer, cooldowns, action, ready, params
        )
        stuck, late = stuck_bugs(state, pos, buff_timer, params)
        damage, boss_hp, killed, death_crash = hurt_boss(
            state, damage, skill_crash, buff_timer, self.late_phases, params
        )
        crashed = skill_crash | death_crash
        won = killed & ~death_crash
        stuck_any = stuck | jnp.any(late)

        boss_acts = ~(crashed | won | stuck_any)  # no turn after a crash, a win, or once stuck
        boss = boss_turn(keys, state.boss_pos, pos, boss_acts, params.boss_range, params)
        hurt = boss_hurt(boss.hit, boss.atk, buff_timer > 0, params.buff_reduction)
        player_hp = state.player_hp + healed - hurt
        lost = ~won & ~crashed & (player_hp <= 0)

        bugs = jnp.stack([skill_crash, stuck, boss.hit & (hurt < 0), death_crash])
        fired = jnp.concatenate([bugs, late]) & ~state.bugs_seen
        reward = (
            damage / params.boss_max_hp
            + jnp.where(won, params.win_bonus, 0.0)
            - jnp.where(lost, params.lose_penalty, 0.0)
        ).astype(jnp.float32)
        new_state = EnvState(
            player_pos=pos.astype(jnp.int32),
            boss_pos=boss.boss_pos,
            player_hp=jnp.asarray(player_hp, jnp.int32),
            boss_hp=jnp.asarray(boss_hp, jnp.int32),
            facing=jnp.asarray(facing, jnp.int32),
            buff_timer=buff_timer.astype(jnp.int32),
            cooldowns=cooldowns,
            frozen=stuck_any,
            crashed=crashed,
            boss_hit=boss.hit,
            healed=jnp.asarray(healed, jnp.int32),
            bugs_seen=state.bugs_seen | fired,
            time=state.time + 1,
        )
        held = state.replace(boss_hit=jnp.bool_(False), healed=jnp.int32(0), time=state.time + 1)
        return self.finish_step(state, held, new_state, fired, reward, crashed | won | lost, params)

    def cell_id(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Coverage cell: (player cell, boss-hp bucket, active-buff bits, player–boss distance)."""
        hp_frac = jnp.asarray(state.boss_hp, jnp.float32) / params.boss_max_hp
        hp_bucket = bucket_id(hp_frac[None], 0.0, 1.0, self.hp_buckets)
        buff_bits = jnp.sum((state.buff_timer > 0) * 2 ** jnp.arange(NUM_BUFFS)).astype(jnp.int32)
        flat = state.player_pos[0] * self.cols + state.player_pos[1]
        dist = distance(state.player_pos, state.boss_pos)
        cell = (flat * self.hp_buckets + hp_bucket) * 2**NUM_BUFFS + buff_bits
        return cell * self._num_distances + dist

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        params = self.default_params if params is None else params
        scale = jnp.array([self.rows - 1, self.cols - 1], jnp.float32)
        lengths = cooldown_lengths(params).astype(jnp.float32)
        dist = distance(state.player_pos, state.boss_pos)
        obs = jnp.concatenate(
            [
                state.player_pos / scale,
                state.boss_pos / scale,
                jnp.clip(jnp.stack([state.player_hp / params.player_max_hp]), 0.0, 2.0),
                jnp.clip(jnp.stack([state.boss_hp / params.boss_max_hp]), 0.0, 1.0),
                jnp.clip(state.buff_timer / jnp.maximum(params.buff_duration, 1), 0.0, 1.0),
                jnp.clip(state.cooldowns / jnp.maximum(lengths, 1.0), 0.0, 1.0),
                jnp.stack([dist / (self.rows + self.cols - 2)]),
                jax.nn.one_hot(state.facing, 4),
            ]
        )
        return obs.astype(jnp.float32)

    # ----- testing hooks ----------------------------------------------------
    #: The logical bug's developer assertion (see :func:`hp_never_rises_from_boss_hit`).
    logical_assertion = staticmethod(hp_never_rises_from_boss_hit)

    def randomize(self, key, params: EnvParams) -> EnvParams:
        """Redraws the stuck bug, the logical bug's numbers and the death crash's buffs (Wuji
        §V-A), jittable.

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
        left_out = jax.random.randint(k_death, (), 0, NUM_BUFFS)
        return params.replace(
            **self._draw_late(k_late, params),
            stuck_cell=stuck_cell,
            stuck_buff=jax.random.randint(k_buff, (), 0, NUM_BUFFS),
            buff_reduction=reduction,
            boss_atk_min=atk_min,
            boss_atk_max=atk_max,
            death_crash_buffs=(left_out + jnp.array([1, 2])) % NUM_BUFFS,
        )

    def _free_cells(self, key, params: EnvParams, n: int) -> jax.Array:
        """``int32[n, 2]``: ``n`` distinct cells drawn uniformly among those that are no start
        cell."""
        rows, cols = self.rows, self.cols
        ids = jnp.arange(rows * cols)
        starts = jnp.stack([params.player_start, params.boss_start])
        taken = jnp.any(ids[:, None] == starts[:, 0] * cols + starts[:, 1], axis=-1)
        scores = jax.random.gumbel(key, (rows * cols,)) + jnp.where(taken, -1e9, 0.0)
        _, flat = jax.lax.top_k(scores, n)
        return jnp.stack([flat // cols, flat % cols], axis=-1).astype(jnp.int32)

    def _draw_late(self, key, params: EnvParams) -> dict:
        """Late stuck bugs: distinct cells other than the starts, uniform buffs, phases uniform
        among ``late_phases``."""
        k_cell, k_buff, k_phase = jax.random.split(key, 3)
        n = self.num_late_stuck
        phases = jnp.array(self.late_phases, jnp.float32)
        return {
            "late_cells": self._free_cells(k_cell, params, n),
            "late_buffs": jax.random.randint(k_buff, (n,), 0, NUM_BUFFS).astype(jnp.int32),
            "late_phase": jax.random.choice(k_phase, phases, (n,)),
        }

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        self._check_cells(params)
        self._check_bugs(params)
        check_boss(self.name, params)
        positive = ("player_max_hp", "boss_max_hp", "boss_range", "skill_range", "dash_length")
        check_range(self.name, params, (*positive, "buff_duration"), 1)
        damage = ("melee_damage", "skill_damage", "dash_damage", "heal_amount")
        cooldowns = ("skill_cooldown", "dash_cooldown", "buff_cooldown", "heal_cooldown")
        check_range(self.name, params, (*damage, *cooldowns, "boss_regen"), 0)
        for what in ("win_bonus", "lose_penalty"):
            value = float(np.asarray(getattr(params, what)))
            if not np.isfinite(value):
                raise ValueError(f"{self.name}: {what} must be finite, got {value}")

    def _check_cells(self, params: EnvParams) -> None:
        """Refuses start, stuck and late stuck cells off the arena, and a shared start cell."""
        rows, cols, name = self.rows, self.cols, self.name
        cells = {}
        for what in ("player_start", "boss_start", "stuck_cell"):
            cell = np.asarray(getattr(params, what))
            if cell.shape != (2,):
                raise ValueError(
                    f"{name}: {what} must be a (row, col) pair, got shape {cell.shape}"
                )
            r, c = (int(v) for v in cell)
            if not (0 <= r < rows and 0 <= c < cols):
                raise ValueError(f"{name}: {what} at ({r}, {c}) is outside the {rows}x{cols} arena")
            cells[what] = (r, c)
        if cells["player_start"] == cells["boss_start"]:
            raise ValueError(
                f"{name}: player_start and boss_start are the same cell {cells['boss_start']}"
            )
        late = check_shape(name, "late_cells", params.late_cells, (self.num_late_stuck, 2))
        for k, (r, c) in enumerate(late.tolist()):
            if not (0 <= r < rows and 0 <= c < cols):
                raise ValueError(
                    f"{name}: late stuck bug {k} at ({r}, {c}) is outside the {rows}x{cols} arena"
                )

    def _check_bugs(self, params: EnvParams) -> None:
        """Refuses bad buffs and phases of the bugs."""
        name, n = self.name, self.num_late_stuck
        buffs, phase = np.asarray(params.late_buffs), np.asarray(params.late_phase)
        if buffs.shape != (n,) or np.any((buffs < 0) | (buffs >= NUM_BUFFS)):
            raise ValueError(f"{name}: late_buffs must be {n} buffs in 0..2, got {buffs.tolist()}")
        if phase.shape != (n,) or np.any(~((phase > 0) & (phase <= 1))):
            raise ValueError(
                f"{name}: late_phase must be {n} hp fractions in (0, 1], got {phase.tolist()}"
            )
        death = np.asarray(params.death_crash_buffs)
        if (
            death.shape != (2,)
            or np.any((death < 0) | (death >= NUM_BUFFS))
            or death[0] == death[1]
        ):
            raise ValueError(
                f"{name}: death_crash_buffs must be two different buffs in 0..2, "
                f"got {death.tolist()}"
            )
        red = check_shape(name, "buff_reduction", params.buff_reduction, (NUM_BUFFS,))
        if np.any(red < 0):
            raise ValueError(
                f"{name}: buff_reduction values must be non-negative, got {red.tolist()}"
            )
        stuck_buff = int(np.asarray(params.stuck_buff))
        if not 0 <= stuck_buff < NUM_BUFFS:
            raise ValueError(
                f"{name}: stuck_buff must be 0, 1 or 2 (a reduction buff), got {stuck_buff}"
            )
