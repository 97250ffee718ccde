"""NSH Arena: Wuji's large combat scenario, at the scale of its game NSH (Zheng et al., ASE 2019).

NSH is the larger of Wuji's two combat games, with about twice L10's bugs (§V-A);
:mod:`jgtest.envs.combat` is the L10-sized one. Rules: :class:`NSHArena`; ``step_env`` composes
this module's pure steps. Its free parameters were set with probe policies alone.

* chosen: floors 1 and 2 are ledges out of the fight, because NSH is three-dimensional (§V-A).
* chosen: a three-skill combo, because winning is "discovering a combination of skills" (§V-A).
* chosen: a regenerating boss in phases, because random must not "accomplish the game
  intermediate missions" (§V-B).
* chosen: a third of the bugs off the damage path, because a policy that only wins does not
  explore the states after the mission (§V-B).
* chosen: bugs fixed unless ``randomize_bugs``, because the paper injects them once (§V-A).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment

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
from jgtest.envs.grid import NSEW, clip_pos, distance, inside

N_, S_, E_, W_ = 0, 1, 2, 3
STRIKE, THRUST, SWEEP, BURST, DART, DASH, FLICK, HEAL = range(4, 12)
IRON, WARD, GUARD, FURY, SWIFT = range(5)
BUFF0 = 12
LEAP, DROP = 17, 18
NUM_ACTIONS = 19
NUM_BUFFS = 5
ACTION_NAMES = tuple(
    "N S E W strike thrust sweep burst dart dash flick heal".split()
    + "iron ward guard fury swift leap drop".split()
)
#: Actions with a cooldown, in the observation's order.
COOLDOWN_ACTIONS = (THRUST, SWEEP, BURST, DART, DASH, HEAL, 12, 13, 14, 15, 16, LEAP, DROP)
#: Damage each buff takes off a boss hit (Iron, Ward, Guard; Fury and Swift none): no two of the
#: first three reach the lowest phase-1 roll, 6; all three, 8, exceed it (bug 1).
REDUCTION = (2, 3, 3, 0, 0)
OBS_SIZE = 36
NUM_BUGS = 21
BUG_KINDS = (
    ("crash", "logical", "stuck", "crash", "stuck", "logical", "crash")  # near the start
    + ("crash", "logical", "crash", "stuck", "logical", "crash", "crash")  # on the damage path
    + ("stuck", "crash", "logical", "stuck", "crash", "stuck", "crash")  # off the damage path
)
#: Reach class of each bug, as the probe table gives them (``benchmarks/nsh_probes.py``,
#: :func:`jgtest.methods.wuji.probes.reach_classes`): ``start`` (random reaches it), ``path`` (a
#: scripted fighter, noisy or retreating to heal, or plain A2C does), ``off`` (no probe does).
REACH_CLASSES = ("start",) * 7 + ("path",) * 14
STAGGER, EXPOSE, BUFF_TIME = 4, 3, 4
#: The bugs at ``bug_cells`` and the floor each must be on (leaps need a floor above, the ledges
#: are floors 1 and 2).
BUG_CELL_BUGS, BUG_CELL_FLOORS = (2, 3, 4, 14, 19), (1, 0, 2, 2, 0)
#: Steps in a row off floor 0 after which the boss has lost the player (bug 17).
AWAY = 12
#: The comparison's env-step budget: Wuji's 30 generations at most 294k steps each (30 learners
#: × 8 A2C rounds × 1,000 steps, and twice 30 policies × m = 3 evaluation runs × 300 steps),
#: rounded up.
FULL_BUDGET_STEPS = 10_000_000
_IS_CRASH = np.array([k == "crash" for k in BUG_KINDS])
_IS_STUCK = np.array([k == "stuck" for k in BUG_KINDS])


@struct.dataclass
class EnvState(environment.EnvState):
    pos: jax.Array  # int32[3] (floor, row, col)
    boss_pos: jax.Array  # int32[2] (row, col) on floor 0
    player_hp: jax.Array  # int32
    boss_hp: jax.Array  # int32
    facing: jax.Array  # int32 in [0, 4)
    buff_timer: jax.Array  # int32[5]
    cooldowns: jax.Array  # int32[19] steps until each action is ready again
    stagger: jax.Array  # int32 steps the boss stays staggered
    away: jax.Array  # int32 steps in a row the player has spent off floor 0
    exposed: jax.Array  # int32 steps the boss stays exposed
    frozen: jax.Array  # bool: a stuck bug trapped the player
    crashed: jax.Array  # bool
    bugs_seen: jax.Array  # bool[21]
    time: int


@struct.dataclass(kw_only=True)
class EnvParams(environment.EnvParams):
    player_start: jax.Array  # int32[3]
    boss_start: jax.Array  # int32[2]
    bug_cells: jax.Array  # int32[5, 3] (floor, row, col) of bugs 2, 3, 4, 14, 19
    bug_buffs: jax.Array  # int32[5] the buff of bugs 2, 5, 12, 14, 19
    death_buffs: jax.Array  # int32[2] bug 7's buffs
    phase_thresholds: jax.Array  # float32[2] boss hp fractions that start phases 2 and 3
    player_max_hp: int = 150
    boss_max_hp: int = 400
    boss_atk_min: int = 6
    boss_atk_max: int = 12  # inclusive
    boss_atk_per_phase: int = 2
    boss_move_prob: float = 0.5
    boss_attack_prob: float = 0.5
    boss_regen: int = 5
    heal_amount: int = 25
    max_steps_in_episode: int = 300


#: Cooldown of each action (0: none).
COOLDOWN = np.zeros(NUM_ACTIONS, np.int32)
COOLDOWN[[THRUST, SWEEP, BURST, DART, DASH, HEAL, LEAP, DROP]] = (3, 3, 6, 3, 4, 10, 2, 2)
COOLDOWN[BUFF0 : BUFF0 + NUM_BUFFS] = 8


def tick(state: EnvState) -> EnvState:
    """Buff timers, cooldowns, the stagger and the exposure count down at the start of a step."""
    return state.replace(
        buff_timer=countdown(state.buff_timer),
        cooldowns=countdown(state.cooldowns),
        stagger=countdown(state.stagger),
        exposed=countdown(state.exposed),
    )


class Turn(NamedTuple):
    """The player's action and what it finds at the start of the step (:func:`start_turn`)."""

    action: jax.Array  #: int32, clipped into the action set
    ready: jax.Array  #: bool: the action's cooldown has run out
    up: jax.Array  #: bool[5]: the buffs up before this step's cast
    phase: jax.Array  #: int32: the boss's phase, 1, 2 or 3
    on_arena: jax.Array  #: bool: the player is on floor 0
    dist0: jax.Array  #: int32: planar distance to the boss

    @property
    def late(self) -> jax.Array:
        """The boss is in phase 2 or 3."""
        return self.phase >= 2

    def use(self, a: int) -> jax.Array:
        """The action is ``a`` and ready."""
        return (self.action == a) & self.ready

    def reach(self, r: int) -> jax.Array:
        """The boss is within planar distance ``r`` of the player on floor 0."""
        return self.on_arena & (self.dist0 <= r)


def start_turn(state: EnvState, ticked: EnvState, action: jax.Array, phase: jax.Array) -> Turn:
    """The :class:`Turn` of ``action`` from ``state`` (``ticked``: after :func:`tick`)."""
    return Turn(
        action=action,
        ready=ticked.cooldowns[action] == 0,
        up=ticked.buff_timer > 0,
        phase=phase,
        on_arena=state.pos[0] == 0,
        dist0=distance(state.pos[1:], state.boss_pos),
    )


class Move(NamedTuple):
    """Where the player's action took it (:func:`move_player`)."""

    pos: jax.Array  #: int32[3] (floor, row, col)
    facing: jax.Array  #: int32
    dashed: jax.Array  #: bool: the dash was used
    dash_blocked: jax.Array  #: bool: the dash's aim lay beyond the border
    dist: jax.Array  #: int32: planar distance to the boss (where it stood) after the move


def move_player(state: EnvState, turn: Turn, shape: tuple[int, int, int]) -> Move:
    """Moves (0-3) go one cell, two with Swift up, blocked by the border and, on floor 0, by the
    boss's cell; the dash (9) jumps two cells in the facing direction, through the boss, stopping
    at the border; the leap (17) goes up a floor, the drop (18) down one, in phase 1 not onto the
    boss's cell.

    Args:
      state: the state the step starts from.
      turn: the player's action.
      shape: ``(levels, rows, cols)``.
    """
    levels, rows, cols = shape
    moves = jnp.asarray(NSEW)
    action, floor, cell = turn.action, state.pos[0], state.pos[1:]

    def free(p):
        return inside(p, rows, cols) & ~(turn.on_arena & jnp.all(p == state.boss_pos))

    step1 = cell + moves[jnp.clip(action, 0, 3)]
    step2 = step1 + moves[jnp.clip(action, 0, 3)]
    two = turn.up[SWIFT] & free(step1) & free(step2)
    walk_to = jnp.where(two, step2, jnp.where(free(step1), step1, cell))
    is_move = action < STRIKE
    aim = cell + 2 * moves[state.facing]
    dash_to = clip_pos(aim, rows, cols)
    dashed = turn.use(DASH)
    new_cell = jnp.where(is_move, walk_to, jnp.where(dashed, dash_to, cell))
    leapt = turn.use(LEAP) & (floor < levels - 1)
    onto_boss = (floor == 1) & jnp.all(cell == state.boss_pos)
    dropped = turn.use(DROP) & (floor > 0) & ~(onto_boss & ~turn.late)
    new_floor = floor + leapt.astype(jnp.int32) - dropped.astype(jnp.int32)
    return Move(
        pos=jnp.concatenate([new_floor[None], new_cell]).astype(jnp.int32),
        facing=jnp.where(is_move, action, state.facing),
        dashed=dashed,
        dash_blocked=jnp.any(dash_to != aim),
        dist=distance(new_cell, state.boss_pos),
    )


class Blow(NamedTuple):
    """The player's attack (:func:`attack`)."""

    damage: jax.Array  #: int32, before the boss's hp caps it
    stagger: jax.Array  #: int32: steps the boss stays staggered
    exposed: jax.Array  #: int32: steps the boss stays exposed
    thrusted: jax.Array  #: bool: a thrust landed
    combo_sweep: jax.Array  #: bool: a sweep landed on a staggered boss
    finisher: jax.Array  #: bool: a burst landed on an exposed boss
    darted: jax.Array  #: bool: a dart was thrown within its range
    dart_crash: jax.Array  #: bool: bug 0


def attack(ticked: EnvState, turn: Turn, move: Move) -> Blow:
    """Attacks, only from floor 0 within reach: strike (4) 8 within 1; thrust (5) 4 within 1 and a
    stagger of 4 steps; sweep (6) within 1, 20 on a staggered boss (ending the stagger and exposing
    the boss for 3 steps), else 6; burst (7) within 2, 36 on an exposed boss (ending the exposure),
    else 6; dart (8) ``24 // distance`` within 5; a dash (9) ending within 1, 6; flick (10) 1
    within 3. Fury multiplies the damage by 1.5, floored.

    A thrust on a still-staggered boss in phase 2 or 3 stacks the stagger (bug 11); the dart at
    distance 0 with a buff up crashes (bug 0, L10's "will crash if distance == 0", §V-D).
    """
    use, reach, dist0, up = turn.use, turn.reach, turn.dist0, turn.up
    stagger, exposed = ticked.stagger, ticked.exposed
    thrusted = use(THRUST) & reach(1)
    swept = use(SWEEP) & reach(1)
    combo_sweep = swept & (stagger > 0)
    bursted = use(BURST) & reach(2)
    finisher = bursted & (exposed > 0)
    darted = use(DART) & turn.on_arena & (dist0 <= 5)
    flicked = (turn.action == FLICK) & turn.on_arena & (dist0 <= 3)
    damage = (
        jnp.where((turn.action == STRIKE) & reach(1), 8, 0)
        + jnp.where(thrusted, 4, 0)
        + jnp.where(swept, jnp.where(combo_sweep, 20, 6), 0)
        + jnp.where(bursted, jnp.where(finisher, 36, 6), 0)
        + jnp.where(darted & (dist0 > 0), 24 // jnp.maximum(dist0, 1), 0)
        + jnp.where(move.dashed & turn.on_arena & (move.dist <= 1), 6, 0)
        + jnp.where(flicked, 1, 0)
    )
    stacked = jnp.where(turn.late & (stagger > 0), stagger + STAGGER, STAGGER)
    return Blow(
        damage=jnp.where(up[FURY], damage * 3 // 2, damage),
        stagger=jnp.where(thrusted, stacked, jnp.where(combo_sweep, 0, stagger)),
        exposed=jnp.where(combo_sweep, EXPOSE, jnp.where(finisher, 0, exposed)),
        thrusted=thrusted,
        combo_sweep=combo_sweep,
        finisher=finisher,
        darted=darted,
        dart_crash=darted & (dist0 == 0) & jnp.any(up),
    )


class Care(NamedTuple):
    """The player's buffs and heal (:func:`buff_and_heal`)."""

    buff_timer: jax.Array  #: int32[5]
    cooldowns: jax.Array  #: int32[19]
    up: jax.Array  #: bool[5]: the buffs up after this step's cast
    healed: jax.Array  #: int32: hp the heal restored
    cap_ignored: jax.Array  #: bool: the heal ignored the hp cap (bug 5's condition)
    double_heal: jax.Array  #: bool: bug 16


def buff_and_heal(state: EnvState, ticked: EnvState, turn: Turn, params: EnvParams) -> Care:
    """Buffs (12-16) are up for :data:`BUFF_TIME` steps; the heal (11) restores ``heal_amount`` up
    to the maximum, past it with ``bug_buffs[1]`` up (bug 5) and twice over on floor 2 at distance 4
    or more in phase 2 or 3 (bug 16); every used action from 5 on starts its cooldown."""
    buff_id = turn.action - BUFF0
    cast = (buff_id >= 0) & (buff_id < NUM_BUFFS) & turn.ready
    buff_timer = jnp.where(cast & (jnp.arange(NUM_BUFFS) == buff_id), BUFF_TIME, ticked.buff_timer)
    up = buff_timer > 0
    healing = turn.use(HEAL)
    cap_ignored = healing & up[params.bug_buffs[1]]
    double_heal = healing & (state.pos[0] == 2) & (turn.dist0 >= 4) & turn.late
    heal = jnp.where(double_heal, 2 * params.heal_amount, params.heal_amount)
    headroom = jnp.maximum(params.player_max_hp - state.player_hp, 0)
    capped = jnp.where(cap_ignored | double_heal, heal, jnp.minimum(heal, headroom))
    used = (turn.action >= THRUST) & turn.ready & (jnp.arange(NUM_ACTIONS) == turn.action)
    return Care(
        buff_timer=buff_timer,
        cooldowns=jnp.where(used, jnp.asarray(COOLDOWN), ticked.cooldowns),
        up=up,
        healed=jnp.where(healing, capped, 0),
        cap_ignored=cap_ignored,
        double_heal=double_heal,
    )


class BossHp(NamedTuple):
    """The boss's hp after the player's turn (:func:`hurt_boss`)."""

    boss_hp: jax.Array  #: int32
    dealt: jax.Array  #: int32: the hp the player took off (negative on bug 8's overflow)
    overflow: jax.Array  #: bool: bug 8's condition
    killed: jax.Array  #: bool: the boss died (and the dart did not crash the game)


def hurt_boss(boss_hp: jax.Array, blow: Blow, up: jax.Array, phase, params: EnvParams) -> BossHp:
    """The damage, at most the boss's hp left; in a step without damage ``boss_regen`` hp back, up
    to the phase the boss is in. Bug 8: the burst on an exposed boss in phase 3 with Fury up
    overflows and heals the boss by the damage, no higher than phase 3's threshold."""
    overflow = blow.finisher & up[FURY] & (phase == 3)
    damage = jnp.minimum(blow.damage, jnp.maximum(boss_hp, 0))
    hit_hp = jnp.where(overflow, boss_hp + damage, boss_hp - damage)
    regen = jnp.where(damage > 0, 0, params.boss_regen)
    bounds = phase_bounds(params.phase_thresholds, params.boss_max_hp)
    cap = regen_cap(bounds, hit_hp, params.boss_max_hp)
    regenerated = jnp.minimum(hit_hp + regen, jnp.maximum(cap, hit_hp))
    new_hp = jnp.where(overflow, jnp.minimum(hit_hp, bounds[1]), regenerated)
    dealt = jnp.where(overflow, boss_hp - new_hp, damage)
    return BossHp(new_hp, dealt, overflow, ~blow.dart_crash & (new_hp <= 0))


def player_bugs(
    state: EnvState,
    turn: Turn,
    move: Move,
    blow: Blow,
    care: Care,
    wound: BossHp,
    new_phase,
    params,
) -> jax.Array:
    """``bool[21]``: the bugs the player's turn triggers, by id (:class:`NSHArena`); bug 1, the
    boss's hit, is set in the boss's turn."""
    use, up, phase, late = turn.use, care.up, turn.phase, turn.late
    floor, dist0, on_arena = state.pos[0], turn.dist0, turn.on_arena
    moved = jnp.any(move.pos != state.pos)
    flick, leap = turn.action == FLICK, use(LEAP)

    def at(k):  # arrived at bug cell k
        return moved & jnp.all(move.pos == params.bug_cells[k])

    near_start = [
        blow.dart_crash,
        jnp.bool_(False),  # bug 1: the boss's hit
        at(0) & up[params.bug_buffs[0]],
        leap & jnp.all(state.pos == params.bug_cells[1]),
        move.dashed & at(2),
        care.cap_ignored & (state.player_hp + care.healed > params.player_max_hp),
        flick & ~on_arena & (dist0 <= 3),
    ]
    damage_path = [
        wound.killed & jnp.all(up[params.death_buffs]),
        wound.overflow & (wound.boss_hp > state.boss_hp),
        blow.combo_sweep & up[FURY] & (phase == 1) & (new_phase >= 2),
        (phase < 3) & (new_phase == 3) & ~wound.killed & on_arena & (move.dist == 0),
        blow.thrusted & late & (state.stagger > 1),
        blow.darted & (dist0 == 1) & up[params.bug_buffs[2]] & late,
        wound.killed & move.dashed,
    ]
    off_path = [
        at(3) & up[params.bug_buffs[3]] & late,
        flick & on_arena & (dist0 >= 7) & (phase == 3),
        care.double_heal,
        leap & (floor == 1) & (state.away >= AWAY) & late,
        leap & on_arena & (dist0 >= 6) & late,
        at(4) & up[params.bug_buffs[4]] & (phase == 3),
        move.dashed & move.dash_blocked & (floor == 2) & (dist0 >= 4) & late,
    ]
    return jnp.stack(near_start + damage_path + off_path)


class NSHArena(ArenaGame):
    """Wuji's NSH-scale combat scenario.

    World: ``levels`` floors (default 3) of ``rows x cols`` cells (default 11 x 11). The boss
    keeps to floor 0, the arena; floors 1 and 2 are ledges the player reaches by the leap and
    leaves by the drop. From another floor no attack reaches the boss and the boss cannot reach
    the player. The player starts at ``(0, rows - 2, cols // 2)``, the boss at ``(1, cols // 2)``.

    Actions (``Discrete(19)``, :data:`ACTION_NAMES`; a traced out-of-range action is clipped; an
    action whose cooldown (:data:`COOLDOWN`) runs does nothing): moves, dash, leap and drop
    (:func:`move_player`); strike, thrust, sweep, burst, dart, dash and flick (:func:`attack`);
    heal and the buffs Iron, Ward, Guard (each takes :data:`REDUCTION` off every boss hit), Fury
    (damage x 1.5) and Swift (moves go two cells), each up for the boss's next 4 turns
    (:func:`buff_and_heal`). The combo thrust, sweep, burst deals 60 in three steps, against 24
    for three strikes.

    Boss: 400 hp in three phases cut at ``phase_thresholds`` (default 0.6 and 0.3 of its hp); each
    phase hits harder (attack 6..12 plus ``boss_atk_per_phase`` a phase); it regenerates 5 hp in a
    step without damage, only up to the phase it is in (:func:`hurt_boss`). It chases and attacks
    within distance 1 (probability 0.5 each, :func:`jgtest.envs.arena.boss_turn`), only while the
    player is on floor 0. The player has 150 hp; an episode lasts at most 300 steps.

    Bugs (:data:`BUG_KINDS`, :func:`player_bugs`), each firing the first time per episode: near the
    start, any player reaches them (0-6); on the damage path, gated on the boss's phase, a player
    who wins passes by them (7-13); designed off the damage path, every one of them also gated on
    the phase, they ask for a run of choices a fighter does not make (14-20). The probes put all
    of 7-20 on a learner's path (:data:`REACH_CLASSES`): a noisy fighter that retreats to a ledge
    to heal, and plain A2C, reach them in long phase-2 and phase-3 fights.

    0. crash, L10's (§V-D): the dart at distance 0 with any buff up.
    1. logical, L10's (§V-D): Iron, Ward and Guard up and a phase-1 boss hit rolling 6 or 7 heal
       the player (:func:`jgtest.envs.arena.boss_hurt`).
    2. stuck: arriving at ``bug_cells[0]`` (floor 1) with ``bug_buffs[0]`` (Swift) up.
    3. crash: leaping from ``bug_cells[1]`` (floor 0).
    4. stuck: a dash ending at ``bug_cells[2]`` (floor 2).
    5. logical: a heal with ``bug_buffs[1]`` (Guard) up passes the hp cap.
    6. crash: the flick aimed at the boss from another floor within its reach.
    7. crash, NSH's (§V-D): the boss dies with both ``death_buffs`` (Fury, Guard) up.
    8. logical: the burst on an exposed boss in phase 3 with Fury up heals the boss; the step's
       reward is negative by as much.
    9. crash: a sweep follow-up with Fury up breaks the first phase.
    10. stuck: the boss enters phase 3, not killed, while the player stands on its cell.
    11. logical: a thrust on a staggered boss in phase 2 or 3 stacks the stagger past its cap.
    12. crash: the dart at distance 1 with ``bug_buffs[2]`` (Fury) up, in phase 2 or 3.
    13. crash: the boss killed by a dash.
    14. stuck: arriving at ``bug_cells[3]`` (floor 2) with ``bug_buffs[3]`` (Swift) up, phase 2+.
    15. crash: the flick at distance 7 or more on floor 0, phase 3.
    16. logical: a heal on floor 2 at distance 4 or more, phase 2+, applies twice.
    17. stuck: leaping from floor 1 after :data:`AWAY` steps in a row off floor 0, phase 2+.
    18. crash: leaping from floor 0 at distance 6 or more, phase 2+.
    19. stuck: arriving at ``bug_cells[4]`` (floor 0) with ``bug_buffs[4]`` (Ward) up, phase 3.
    20. crash: a dash into the border on floor 2 at distance 4 or more, phase 2+.

    A crash terminates the episode (a kill that crashes earns its damage, not the win's 1); a
    stuck player's world stops changing until the time limit; a logical bug is what its developer
    assertion reports (§III).

    Observation ``float32[36]``: ``[0:3]`` floor, row, col (scaled to [0, 1]), ``[3:5]`` boss row,
    col, ``[5]`` player hp / max (up to 2), ``[6]`` boss hp / max, ``[7:12]`` buff timers /
    :data:`BUFF_TIME`, ``[12:25]`` cooldowns of :data:`COOLDOWN_ACTIONS` / their length, ``[25]``
    stagger / 4, ``[26]`` exposure / 3, ``[27]`` planar distance / (rows + cols - 2), ``[28]`` on
    floor 0, ``[29:32]`` phase one-hot, ``[32:36]`` facing one-hot.

    Reward: damage dealt / boss max hp (negative on bug 8), +1 on a win, -1 on a loss. Wuji's game
    state (:meth:`state_features`): floor, both cells, both hps, distance, phase and the buffs up
    (16 features). Coverage cell: (floor, cell, phase, distance bucket 0, 1, 2-4, 5+, or another
    floor).

    Args:
      levels: floors (at least 3: bugs sit on floors 0, 1 and 2).
      rows: each floor's height (at least 7).
      cols: each floor's width (at least 7).
      randomize_bugs: :meth:`randomize` redraws the bug cells and buffs per run (default: the
        bugs stay where they were injected, as the paper's).

    Example:
      >>> import jax, jgtest
      >>> env, params = jgtest.make("NSHArena-v0")
      >>> obs, state = env.reset(jax.random.key(0), params)
      >>> env.num_bugs, obs.shape
      (21, (36,))
    """

    env_id = "NSHArena-v0"
    bug_kinds = BUG_KINDS
    reach_classes = REACH_CLASSES
    action_names = ACTION_NAMES
    num_actions = NUM_ACTIONS
    state_type = EnvState
    position_field = "pos"
    num_buffs, num_cooldowns = NUM_BUFFS, NUM_ACTIONS
    obs_size, hp_slot = OBS_SIZE, 5
    #: Observation slots of Wuji's game state: floor, cells, hps, distance and phase (and buffs).
    state_slots, buff_slots = np.r_[0:7, 27, 29:32], slice(7, 12)
    start_zeros = (("stagger", jnp.int32), ("away", jnp.int32), ("exposed", jnp.int32))

    def __init__(
        self, levels: int = 3, rows: int = 11, cols: int = 11, randomize_bugs: bool = False
    ):
        super().__init__()
        self.levels, self.rows, self.cols = int(levels), int(rows), int(cols)
        self.randomize_bugs = bool(randomize_bugs)
        if self.levels < 3:
            raise ValueError(
                f"{self.env_id}: levels must be at least 3 (bugs sit on floors 0, 1 and 2), "
                f"got {levels}"
            )
        if self.rows < 7 or self.cols < 7:
            raise ValueError(
                f"{self.env_id}: each floor must be at least 7x7, got {self.rows}x{self.cols}"
            )
        r, c = self.rows, self.cols
        # bugs 2, 3, 4 (near the start), 14, 19 (off the path): corners and edges away from the
        # straight line between the two starts
        bug_cells = [[1, r - 3, 2], [0, r - 2, c - 2], [2, 0, 0], [2, 1, c - 2], [0, r - 1, 0]]
        self._default_params = EnvParams(
            player_start=jnp.array([0, r - 2, c // 2], jnp.int32),
            boss_start=jnp.array([1, c // 2], jnp.int32),
            bug_cells=jnp.array(bug_cells, jnp.int32),
            bug_buffs=jnp.array([SWIFT, GUARD, FURY, SWIFT, WARD], jnp.int32),
            death_buffs=jnp.array([FURY, GUARD], jnp.int32),
            phase_thresholds=jnp.array([0.6, 0.3], jnp.float32),
        )

    @property
    def map_shape(self) -> tuple[int, int]:
        return (self.levels * self.rows * self.cols, 12)

    def phase(self, boss_hp, params: EnvParams) -> jax.Array:
        """The boss's phase, 1, 2 or 3, at ``boss_hp``."""
        frac = jnp.asarray(boss_hp, jnp.float32) / params.boss_max_hp
        return (1 + jnp.sum(frac <= params.phase_thresholds)).astype(jnp.int32)

    # ----- dynamics ---------------------------------------------------------
    def step_env(self, key, state: EnvState, action, params: EnvParams):
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
        keys = jax.random.split(key, 3)
        ticked = tick(state)
        turn = start_turn(state, ticked, action, self.phase(state.boss_hp, params))
        move = move_player(state, turn, (self.levels, self.rows, self.cols))
        blow = attack(ticked, turn, move)
        care = buff_and_heal(state, ticked, turn, params)
        wound = hurt_boss(state.boss_hp, blow, care.up, turn.phase, params)
        new_phase = self.phase(wound.boss_hp, params)
        fired = player_bugs(state, turn, move, blow, care, wound, new_phase, params)
        crashed = jnp.any(fired & jnp.asarray(_IS_CRASH))
        won = wound.killed & ~crashed
        stuck = jnp.any(fired & jnp.asarray(_IS_STUCK))

        # The boss's turn: only while the player is on floor 0, the fight goes on, nobody is stuck.
        boss_acts = (move.pos[0] == 0) & ~(crashed | won | stuck)
        boss = boss_turn(keys, state.boss_pos, move.pos[1:], boss_acts, 1, params)
        atk = boss.atk + params.boss_atk_per_phase * (new_phase - 1)
        hurt = boss_hurt(boss.hit, atk, care.up, jnp.asarray(REDUCTION))
        fired = fired.at[1].set(boss.hit & (hurt < 0))
        player_hp = state.player_hp + care.healed - hurt
        lost = ~won & ~crashed & (player_hp <= 0)
        fired = fired & ~state.bugs_seen

        reward = (
            wound.dealt / params.boss_max_hp + jnp.where(won, 1.0, 0.0) - jnp.where(lost, 1.0, 0.0)
        ).astype(jnp.float32)
        new_state = EnvState(
            pos=move.pos,
            boss_pos=boss.boss_pos,
            player_hp=player_hp.astype(jnp.int32),
            boss_hp=wound.boss_hp.astype(jnp.int32),
            facing=move.facing.astype(jnp.int32),
            buff_timer=care.buff_timer.astype(jnp.int32),
            cooldowns=care.cooldowns.astype(jnp.int32),
            stagger=blow.stagger.astype(jnp.int32),
            away=jnp.where(move.pos[0] > 0, state.away + 1, 0).astype(jnp.int32),
            exposed=blow.exposed.astype(jnp.int32),
            frozen=stuck,
            crashed=crashed,
            bugs_seen=state.bugs_seen | fired,
            time=state.time + 1,
        )
        held = state.replace(time=state.time + 1)
        return self.finish_step(state, held, new_state, fired, reward, crashed | won | lost, params)

    def cell_id(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Coverage cell: (floor, row, col) x (phase, distance bucket 0 / 1 / 2-4 / 5+)."""
        flat = (state.pos[0] * self.rows + state.pos[1]) * self.cols + state.pos[2]
        dist = distance(state.pos[1:], state.boss_pos)
        near = jnp.sum(dist >= jnp.array([1, 2, 5]))  # a searchsorted would be a loop
        bucket = jnp.where(state.pos[0] > 0, 3, near)
        return flat * 12 + (self.phase(state.boss_hp, params) - 1) * 4 + bucket

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        params = self.default_params if params is None else params
        scale = jnp.array([self.levels - 1, self.rows - 1, self.cols - 1], jnp.float32)
        lengths = jnp.asarray(COOLDOWN[list(COOLDOWN_ACTIONS)], jnp.float32)
        dist = distance(state.pos[1:], state.boss_pos)
        cooldowns = state.cooldowns[jnp.asarray(COOLDOWN_ACTIONS)] / lengths
        obs = jnp.concatenate(
            [
                state.pos / scale,
                state.boss_pos / scale[1:],
                jnp.clip(jnp.stack([state.player_hp / params.player_max_hp]), 0.0, 2.0),
                jnp.clip(jnp.stack([state.boss_hp / params.boss_max_hp]), 0.0, 1.0),
                jnp.clip(state.buff_timer / BUFF_TIME, 0.0, 1.0),
                jnp.clip(cooldowns, 0.0, 1.0),
                jnp.clip(jnp.stack([state.stagger / STAGGER, state.exposed / EXPOSE]), 0.0, 1.0),
                jnp.stack(
                    [dist / (self.rows + self.cols - 2), (state.pos[0] == 0).astype(jnp.float32)]
                ),
                jax.nn.one_hot(self.phase(state.boss_hp, params) - 1, 3),
                jax.nn.one_hot(state.facing, 4),
            ]
        )
        return obs.astype(jnp.float32)

    # ----- testing hooks ----------------------------------------------------
    def randomize(self, key, params: EnvParams) -> EnvParams:
        """With ``randomize_bugs``: each cell bug on its floor at a cell drawn uniformly among
        those that are neither start cell, the buff of each buff-gated bug drawn uniformly, and
        bug 7's two buffs drawn as a pair of different ones.
        Without (the default), ``params`` unchanged: the scenario's bugs are injected once, as
        the paper's are (§V-A)."""
        if not self.randomize_bugs:
            return params
        k_cell, k_buff, k_death = jax.random.split(key, 3)
        cols = self.cols
        ids = jnp.arange(self.rows * cols)
        start = params.player_start[1] * cols + params.player_start[2]
        boss = params.boss_start[0] * cols + params.boss_start[1]
        noise = jax.random.gumbel(k_cell, (params.bug_cells.shape[0], ids.size))
        flat = jnp.argmax(noise + jnp.where((ids == start) | (ids == boss), -1e9, 0.0), axis=-1)
        floors = params.bug_cells[:, 0]
        cells = jnp.stack([floors, flat // cols, flat % cols], axis=-1).astype(jnp.int32)
        buffs = jax.random.randint(k_buff, params.bug_buffs.shape, 0, NUM_BUFFS).astype(jnp.int32)
        death = jax.random.permutation(k_death, NUM_BUFFS)[:2].astype(jnp.int32)
        return params.replace(bug_cells=cells, bug_buffs=buffs, death_buffs=death)

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        self._check_cells(params)
        name = self.name
        for what, shape in (("bug_buffs", (5,)), ("death_buffs", (2,))):
            buffs = np.asarray(getattr(params, what))
            if buffs.shape != shape or np.any((buffs < 0) | (buffs >= NUM_BUFFS)):
                raise ValueError(
                    f"{name}: {what} must be {shape[0]} buff indices in 0..{NUM_BUFFS - 1}, "
                    f"got {buffs.tolist()}"
                )
        death = np.asarray(params.death_buffs)
        if death[0] == death[1]:
            raise ValueError(
                f"{name}: death_buffs must be two different buffs, got {death.tolist()}"
            )
        phases = np.asarray(params.phase_thresholds)
        if (
            phases.shape != (2,)
            or np.any((phases <= 0) | (phases >= 1))
            or not phases[0] > phases[1]
        ):
            raise ValueError(
                f"{name}: phase_thresholds must be two boss hp fractions in (0, 1), the first the "
                f"larger, got {phases.tolist()}"
            )
        max_hp = int(np.asarray(params.boss_max_hp))
        bounds = np.floor(phases * max_hp).astype(int)
        if bounds[1] < 1 or bounds[0] == bounds[1]:
            raise ValueError(
                f"{name}: phase_thresholds {phases.tolist()} leave a phase without hp at "
                f"boss_max_hp {max_hp}"
            )
        check_range(name, params, ("player_max_hp", "boss_max_hp"), 1)
        check_boss(name, params)
        check_range(name, params, ("boss_atk_per_phase", "boss_regen", "heal_amount"), 0)

    def _check_cells(self, params: EnvParams) -> None:
        """Refuses start and bug cells off the arena or on the wrong floor, and a shared start."""
        levels, rows, cols, name = self.levels, self.rows, self.cols, self.name
        start = np.asarray(params.player_start)
        if start.shape != (3,) or not (
            0 <= start[0] < levels and 0 <= start[1] < rows and 0 <= start[2] < cols
        ):
            raise ValueError(
                f"{name}: player_start {start.tolist()} is outside the {levels}x{rows}x{cols} arena"
            )
        boss = np.asarray(params.boss_start)
        if boss.shape != (2,) or not (0 <= boss[0] < rows and 0 <= boss[1] < cols):
            raise ValueError(
                f"{name}: boss_start {boss.tolist()} is outside the {rows}x{cols} floor"
            )
        if start[0] == 0 and start[1:].tolist() == boss.tolist():
            raise ValueError(
                f"{name}: player_start and boss_start are the same cell {boss.tolist()} of floor 0"
            )
        cells = np.asarray(params.bug_cells)
        if cells.shape != (5, 3):
            raise ValueError(
                f"{name}: bug_cells must have shape (5, 3) (floor, row, col), got {cells.shape}"
            )
        for k, (f, r, c) in enumerate(cells.tolist()):
            if not (0 <= f < levels and 0 <= r < rows and 0 <= c < cols):
                raise ValueError(
                    f"{name}: bug cell {k} at (floor {f}, {r}, {c}) is outside the "
                    f"{levels}x{rows}x{cols} arena"
                )
            if f != BUG_CELL_FLOORS[k]:
                raise ValueError(
                    f"{name}: bug cell {k} (bug {BUG_CELL_BUGS[k]}) must be on floor "
                    f"{BUG_CELL_FLOORS[k]}, got floor {f}"
                )
