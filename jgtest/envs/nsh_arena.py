"""NSH Arena: Wuji's large combat scenario, at the scale of its game NSH (Zheng et al., ASE 2019).

Wuji's two commercial games each test one scenario in which "a game character fights against an
opponent", "is equipped with skills" and "can move in four directions"; "the goals of the games
are to win the fighting by discovering a combination of skills that damage the opponent to the
largest extent" (§V-A "Datasets"). NSH is the larger one: "the improvement is even more obvious"
there (§V-B), its developers injected about twice L10's bugs (§V-A "Bug injection"; the counts are
lost from our copy of the paper, its Fig. 4 axes reach 20 for NSH and 10 for L10), and no strategy
found them all in 10 hours (Table III's averages are fractional in every cell). ``CombatArena-v0``
(:mod:`jgtest.envs.combat`) is the small, L10-sized scenario; this one is NSH-sized. Every design
choice below was fixed from the paper's lines and calibrated with probe policies only
(:mod:`jgtest.envs.nsh_probes`) before any Wuji strategy ran on it.

World (NSH is a three-dimensional game, §V-A; attacks land only within reach):

* ``levels`` floors (default 3) of ``rows × cols`` cells (default 11 × 11). The boss keeps to
  floor 0, the arena floor; floors 1 and 2 are ledges above it that the player reaches by the
  leap skill and leaves by the drop skill (NSH's characters fly and leap). From another floor no
  attack reaches the boss and the boss cannot reach the player: the damage path is on floor 0.
* The player starts at ``(0, rows - 2, cols // 2)``, the boss at ``(1, cols // 2)``, as in
  ``CombatArena-v0``.

Actions (``Discrete(19)``), "4 moves plus many skills":

====  ==========  ================================================================================
 id   name        effect (cooldown in steps)
====  ==========  ================================================================================
 0-3  N S E W     move one cell (two with Swift up); blocked by the border and the boss's cell
 4    strike      8 damage within distance 1
 5    thrust      setup: 4 damage within 1, and the boss is staggered for the next 3 steps (3)
 6    sweep       follow-up: within 1, 20 damage on a staggered boss (it ends the stagger and
                  exposes the boss for the next 2 steps), else 6 (3)
 7    burst       finisher: within 2, 36 damage on an exposed boss (it ends the exposure), else 6 (6)
 8    dart        ranged: ``24 // distance`` within 5 (3)
 9    dash        two cells in the facing direction, through the boss; 6 damage if it ends within 1 (4)
 10   flick       a weak skill: 1 damage within 3
 11   heal        ``+25`` hp, up to the maximum (10)
12-16 buffs       Iron, Ward, Guard (each takes 2, 3, 3 off every boss hit), Fury (damage × 1.5),
                  Swift (moves go two cells); each is up for the boss's next 4 turns (the cast
                  step's included) and the player's next 3 actions (8)
 17   leap        up one floor (2)
 18   drop        down one floor (2); not onto the boss's cell in phase 1
====  ==========  ================================================================================

The combo thrust → sweep → burst deals 60 in three steps, against 24 for three strikes: the
"combination of skills that damage the opponent to the largest extent" (§V-A) a winner must find.
Fury on the combo adds half again. A skill whose cooldown runs does nothing (a wasted step);
a cooldown of ``n`` makes a skill usable every ``n`` steps. A traced out-of-range action is clipped.

Boss: 400 hp in three phases cut at ``phase_thresholds`` (default 60% and 30%; "a boss with
phases"): each phase hits harder (attack ``6..12`` plus 2 a phase), and once worn past a threshold
the boss regenerates only up to it, as ``CombatArena-v0``'s phase lock does; it regenerates 5 hp in
every step in which it takes no damage, so that only sustained fighting wears it down (§V-B: in the
large games random "cannot effectively accomplish the game intermediate missions"). It steps
toward the player (probability 0.5) and attacks within distance 1 (probability 0.5), only while
the player is on floor 0. The player has 150 hp. An episode lasts at most 300 steps.

Injected bugs: 21, of the paper's three kinds (§V-A: "crash bugs, stuck bugs and logical bugs"),
in the conditions §V-D describes, fixed per scenario (the paper's bugs are injected once;
``randomize_bugs=True`` redraws the cells and buffs per run instead). A third each in three
**reach classes** (:data:`REACH_CLASSES`):

*near the start* (any player can reach them without fighting):

0. crash, L10's (§V-D, "will crash if distance == 0" under ``if player.buff_time``): the dart at
   distance 0 (on the boss's cell: by dashing onto it, or dropping onto it in phase 2 or 3) while
   any buff is up.
1. logical, L10's (§V-D): "hurt becomes negative only when the initial damage is within a certain
   range and three specific buffs exist simultaneously": Iron, Ward and Guard up together
   (reductions 2 + 3 + 3 = 8; no two of them reach 7) and a phase-1 boss hit rolling 6 or 7 heal
   the player (the fix ``hurt = max(hurt, 0)`` missing).
2. stuck: arriving at ``bug_cells[0]`` (floor 1) with ``bug_buffs[0]`` (Swift) up traps the player.
3. crash: leaping from ``bug_cells[1]`` (floor 0) clips the ceiling.
4. stuck: a dash ending at ``bug_cells[2]`` (floor 2) lodges the player in the wall.
5. logical: a heal with ``bug_buffs[1]`` (Guard) up ignores the hp cap (the assertion "hp ≤ max").
6. crash: the flick aimed at the boss from another floor within its reach (a target on no floor).

*on the damage path, gated on the boss's phase* (a player who wins passes by them):

7. crash, NSH's (§V-D): "triggered when ... the boss is dead with multiple specific buffs": the
   boss dies with both ``death_buffs`` (Fury and Guard) up.
8. logical: the burst on an exposed boss in phase 3 with Fury up overflows and heals the boss by
   the damage it would have dealt (up to the boss's hp left, and no higher than phase 3's
   threshold; the assertion "a player's hit never heals the boss"); the step's reward is
   negative by the same amount.
9. crash: a sweep follow-up with Fury up is the hit that breaks the first phase.
10. stuck: the boss enters phase 3, not killed, while the player stands on its cell (dist 0).
11. logical: a thrust on a boss still staggered, in phase 2 or 3, stacks the stagger past its cap
    (the assertion "stagger ≤ 4").
12. crash: the dart at distance 1 (its strongest use) with ``bug_buffs[2]`` (Fury) up, in phase 2
    or 3.
13. crash: the boss killed by a dash.

*off the damage path, gated on the boss's phase* (states a pure damage-maximiser avoids: far from
the boss, a weak skill late in the fight, another floor; §V-B: a policy that "cannot accomplish
the mission" cannot explore the states after it, and one that only accomplishes it does not):

14. stuck: arriving at ``bug_cells[3]`` (floor 2) with ``bug_buffs[3]`` (Swift) up, phase 2 or 3.
15. crash: the flick at distance 7 or more on floor 0, phase 3.
16. logical: a heal on floor 2 at distance 4 or more, phase 2 or 3, applies twice, past the cap
    (the assertion "one heal restores at most ``heal_amount``").
17. stuck: leaping from floor 1 after :data:`AWAY` (12) steps in a row off floor 0, phase 2 or 3.
18. crash: leaping from floor 0 at distance 6 or more, phase 2 or 3.
19. stuck: arriving at ``bug_cells[4]`` (floor 0) with ``bug_buffs[4]`` (Ward) up, phase 3.
20. crash: a dash into the border on floor 2 at distance 4 or more, phase 2 or 3.

The off-path bugs ask for a run of choices a fighter does not make (several moves away from the
boss, or lingering off floor 0), so that a noisy fighter, which closes in again at once, does not
stumble on them, while a policy that fights to a phase and then explores reaches each in a few
steps.

Each bug fires the first time per episode; a crash terminates the episode (``telemetry.crashed``;
a kill that crashes earns its damage but not the win's bonus),
a stuck player's world stops changing until the time limit (Wuji's stuck oracle, §III), a logical
bug is what its developer assertion reports (§III: logical bugs "require specific assertions").

Observation: ``float32[36]``: ``[0:3]`` floor, row, col (scaled to [0, 1]), ``[3:5]`` boss row,
col, ``[5]`` player hp / max (clipped to [0, 2]), ``[6]`` boss hp / max, ``[7:12]`` buff timers /
duration, ``[12:25]`` cooldowns of actions 5..9, 11..18 / their length, ``[25]`` stagger / 4,
``[26]`` exposure / 3, ``[27]`` planar distance / (rows + cols - 2), ``[28]`` same floor as the
boss, ``[29:32]`` phase one-hot, ``[32:36]`` facing one-hot.

Wuji's game state (:meth:`NSHArena.state_features`, Def. 3, fixed before any run): floor, both
cells, both hps, the distance, the phase and which buffs are up (16 features). Coverage cell:
(floor, cell, phase, distance bucket: 0, 1, 2-4, or 5+ and any cell on another floor):
``map_shape`` ``(levels · rows · cols, 12)``.

Reward: damage dealt / boss max hp (negative on bug 8's overflow), ``+1`` on a win, ``-1`` on a loss.

Calibration (:mod:`jgtest.envs.nsh_probes`, :data:`FULL_BUDGET_STEPS` env steps, 1,000 games in
parallel, run seed 0; ``tests/envs/test_nsh_arena.py::test_probe_calibration`` checks it). The
free parameters (boss and player hp, attack, regeneration, the bugs' conditions) were set with
these probes alone, before any Wuji strategy ran here:

===================  ========  =====  ========  ========  =====  =====  ====  ============
probe                episodes  wins   phase 2   phase 3   start  path   off   phase-gated
===================  ========  =====  ========  ========  =====  =====  ====  ============
random               106,778   0%     0.02%     0%        7/7    0/7    0/7   0/14
fighter              268,203   83.0%  100%      100%      0/7    0/7    0/7   0/14
fighter, 30% random  207,618   37.1%  99.3%     88.7%     6/7    7/7    0/7   7/14
===================  ========  =====  ========  ========  =====  =====  ====  ============

(Phase rates are of the episodes that ended within the budget. With run seed 1: random finds two
off-path bugs, 16 and 20, in the 19 or so fights in which it breaks the first phase; the fighters
find what they find with seed 0.)

Tried and dropped while calibrating: regeneration 2 to 4 let random break the first phase in 0.1–0.6%
of its fights and so reach off-path bugs; 120 player hp and 3 attack a phase let the fighter win
only 25% of its fights; a sweep that breaks the first phase without Fury crashed nearly every
fight of the fighter, who then never won; off-path bugs that asked only for floor 2, or for
distance 5, were found by the noisy fighter; reductions of 3, 3 and 4 let two buffs, not three,
turn a low roll into a heal (bug 1). A first version of the fighter read timers and cooldowns one
step late and stood above the boss trying to drop in phase 1; the table is the fixed fighter's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest.envs.base import TestingEnv
from jgtest.envs.combat import _distance, _inside
from jgtest.envs.grid import NSEW
from jgtest.types import Telemetry

N_, S_, E_, W_ = 0, 1, 2, 3
STRIKE, THRUST, SWEEP, BURST, DART, DASH, FLICK, HEAL = range(4, 12)
IRON, WARD, GUARD, FURY, SWIFT = range(5)
BUFF0 = 12
LEAP, DROP = 17, 18
NUM_ACTIONS = 19
NUM_BUFFS = 5
ACTION_NAMES = ("N", "S", "E", "W", "strike", "thrust", "sweep", "burst", "dart", "dash", "flick", "heal",
                "iron", "ward", "guard", "fury", "swift", "leap", "drop")  # fmt: skip
#: Actions with a cooldown, in the observation's order.
COOLDOWN_ACTIONS = (THRUST, SWEEP, BURST, DART, DASH, HEAL, 12, 13, 14, 15, 16, LEAP, DROP)
#: Damage each buff takes off a boss hit (Iron, Ward, Guard; Fury and Swift none): no two of the
#: first three reach the lowest phase-1 roll, 6; all three, 8, exceed it (bug 1).
REDUCTION = (2, 3, 3, 0, 0)
OBS_SIZE = 36
NUM_BUGS = 21
BUG_KINDS = (
    "crash", "logical", "stuck", "crash", "stuck", "logical", "crash",
    "crash", "logical", "crash", "stuck", "logical", "crash", "crash",
    "stuck", "crash", "logical", "stuck", "crash", "stuck", "crash",
)  # fmt: skip
#: Reach class of each bug (module docstring): ``start``, ``path`` (damage path, phase-gated),
#: ``off`` (off the damage path, phase-gated).
REACH_CLASSES = ("start",) * 7 + ("path",) * 7 + ("off",) * 7
STAGGER, EXPOSE, BUFF_TIME = 4, 3, 4
#: The bugs at ``bug_cells`` and the floor each must be on (leaps need a floor above, the ledges
#: are floors 1 and 2).
BUG_CELL_BUGS, BUG_CELL_FLOORS = (2, 3, 4, 14, 19), (1, 0, 2, 2, 0)
#: Steps in a row off floor 0 after which the boss has lost the player (bug 17).
AWAY = 12
#: The comparison's env-step budget: Wuji's 30 generations at most 294k steps each (30 learners ×
#: 8 A2C rounds × 1,000 steps, and twice 30 policies × m = 3 evaluation runs × 300 steps), rounded up.
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


class NSHArena(TestingEnv):
    """Wuji's NSH-scale combat scenario (module docstring).

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

    def __init__(self, levels: int = 3, rows: int = 11, cols: int = 11, randomize_bugs: bool = False):
        super().__init__()
        self.levels, self.rows, self.cols, self.randomize_bugs = int(levels), int(rows), int(cols), bool(randomize_bugs)
        if self.levels < 3:
            raise ValueError(f"{self.env_id}: levels must be at least 3 (bugs sit on floors 0, 1 and 2), got {levels}")
        if self.rows < 7 or self.cols < 7:
            raise ValueError(f"{self.env_id}: each floor must be at least 7x7, got {self.rows}x{self.cols}")
        r, c = self.rows, self.cols
        self._default_params = EnvParams(
            player_start=jnp.array([0, r - 2, c // 2], jnp.int32),
            boss_start=jnp.array([1, c // 2], jnp.int32),
            # bugs 2, 3, 4 (near the start), 14, 19 (off the path): corners and edges away from
            # the straight line between the two starts
            bug_cells=jnp.array([[1, r - 3, 2], [0, r - 2, c - 2], [2, 0, 0], [2, 1, c - 2], [0, r - 1, 0]], jnp.int32),
            bug_buffs=jnp.array([SWIFT, GUARD, FURY, SWIFT, WARD], jnp.int32),
            death_buffs=jnp.array([FURY, GUARD], jnp.int32),
            phase_thresholds=jnp.array([0.6, 0.3], jnp.float32),
        )

    # ----- metadata ---------------------------------------------------------
    @property
    def default_params(self) -> EnvParams:
        return self._default_params

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def map_shape(self) -> tuple[int, int]:
        return (self.levels * self.rows * self.cols, 12)

    def observation_space(self, params) -> spaces.Box:
        high = np.ones((OBS_SIZE,), np.float32)
        high[5] = 2.0
        return spaces.Box(jnp.zeros((OBS_SIZE,), jnp.float32), jnp.asarray(high), (OBS_SIZE,), jnp.float32)

    # ----- dynamics ---------------------------------------------------------
    def reset_env(self, key, params: EnvParams):
        state = EnvState(
            pos=jnp.asarray(params.player_start, jnp.int32),
            boss_pos=jnp.asarray(params.boss_start, jnp.int32),
            player_hp=jnp.asarray(params.player_max_hp, jnp.int32),
            boss_hp=jnp.asarray(params.boss_max_hp, jnp.int32),
            facing=jnp.int32(0),
            buff_timer=jnp.zeros((NUM_BUFFS,), jnp.int32),
            cooldowns=jnp.zeros((NUM_ACTIONS,), jnp.int32),
            stagger=jnp.int32(0),
            away=jnp.int32(0),
            exposed=jnp.int32(0),
            frozen=jnp.bool_(False),
            crashed=jnp.bool_(False),
            bugs_seen=jnp.zeros((NUM_BUGS,), bool),
            time=0,
        )
        return self.get_obs(state, params), state

    def phase(self, boss_hp, params: EnvParams) -> jax.Array:
        """The boss's phase, 1, 2 or 3, at ``boss_hp``."""
        frac = jnp.asarray(boss_hp, jnp.float32) / params.boss_max_hp
        return (1 + jnp.sum(frac <= params.phase_thresholds)).astype(jnp.int32)

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, NUM_ACTIONS - 1)
        k_move, k_attack, k_roll = jax.random.split(key, 3)
        moves = jnp.asarray(NSEW)
        rows, cols = self.rows, self.cols
        floor, cell = state.pos[0], state.pos[1:]
        on_arena = floor == 0
        phase = self.phase(state.boss_hp, params)
        late = phase >= 2

        buff_timer = jnp.maximum(state.buff_timer - 1, 0)
        cooldowns = jnp.maximum(state.cooldowns - 1, 0)
        stagger, exposed = jnp.maximum(state.stagger - 1, 0), jnp.maximum(state.exposed - 1, 0)
        ready = cooldowns[action] == 0
        up = buff_timer > 0
        use = lambda a: (action == a) & ready  # noqa: E731
        dist0 = _distance(cell, state.boss_pos)
        reach = lambda r: on_arena & (dist0 <= r)  # noqa: E731

        # Movement: one cell, two with Swift; the boss's cell blocks on floor 0.
        is_move = action < STRIKE
        step1 = cell + moves[jnp.clip(action, 0, 3)]
        free = lambda p: _inside(p, rows, cols) & ~(on_arena & jnp.all(p == state.boss_pos))  # noqa: E731
        step2 = step1 + moves[jnp.clip(action, 0, 3)]
        walk_to = jnp.where(up[SWIFT] & free(step1) & free(step2), step2, jnp.where(free(step1), step1, cell))
        facing = jnp.where(is_move, action, state.facing)
        aim = cell + 2 * moves[state.facing]
        dash_to = jnp.stack([jnp.clip(aim[0], 0, rows - 1), jnp.clip(aim[1], 0, cols - 1)])
        dashed = use(DASH)
        new_cell = jnp.where(is_move, walk_to, jnp.where(dashed, dash_to, cell))
        leapt = use(LEAP) & (floor < self.levels - 1)
        dropping = use(DROP) & (floor > 0)
        onto_boss = (floor == 1) & jnp.all(cell == state.boss_pos)
        dropped = dropping & ~(onto_boss & ~late)  # in phase 1 the boss's cell blocks a drop onto it
        new_floor = floor + leapt.astype(jnp.int32) - dropped.astype(jnp.int32)
        pos = jnp.concatenate([new_floor[None], new_cell]).astype(jnp.int32)
        dist = _distance(new_cell, state.boss_pos)

        # Attacks: only from floor 0, within reach.
        thrusted = use(THRUST) & reach(1)
        swept = use(SWEEP) & reach(1)
        combo_sweep = swept & (stagger > 0)
        bursted = use(BURST) & reach(2)
        finisher = bursted & (exposed > 0)
        darted = use(DART) & on_arena & (dist0 <= 5)
        dart_crash = darted & (dist0 == 0) & jnp.any(up)
        flicked = (action == FLICK) & on_arena & (dist0 <= 3)
        damage = (
            jnp.where((action == STRIKE) & reach(1), 8, 0)
            + jnp.where(thrusted, 4, 0)
            + jnp.where(swept, jnp.where(combo_sweep, 20, 6), 0)
            + jnp.where(bursted, jnp.where(finisher, 36, 6), 0)
            + jnp.where(darted & (dist0 > 0), 24 // jnp.maximum(dist0, 1), 0)
            + jnp.where(dashed & on_arena & (dist <= 1), 6, 0)
            + jnp.where(flicked, 1, 0)
        )
        damage = jnp.where(up[FURY], damage * 3 // 2, damage)
        stagger = jnp.where(thrusted, jnp.where(late & (stagger > 0), stagger + STAGGER, STAGGER), jnp.where(combo_sweep, 0, stagger))
        exposed = jnp.where(combo_sweep, EXPOSE, jnp.where(finisher, 0, exposed))

        # Buffs and heal.
        buff_id = action - BUFF0
        cast = (buff_id >= 0) & (buff_id < NUM_BUFFS) & ready
        buff_timer = jnp.where(cast & (jnp.arange(NUM_BUFFS) == buff_id), BUFF_TIME, buff_timer)
        up = buff_timer > 0
        healing = use(HEAL)
        cap_ignored = healing & up[params.bug_buffs[1]]
        double_heal = healing & (floor == 2) & (dist0 >= 4) & late
        heal = jnp.where(double_heal, 2 * params.heal_amount, params.heal_amount)
        headroom = jnp.maximum(params.player_max_hp - state.player_hp, 0)
        healed = jnp.where(healing, jnp.where(cap_ignored | double_heal, heal, jnp.minimum(heal, headroom)), 0)
        used = (action >= THRUST) & ready
        cooldowns = jnp.where(used & (jnp.arange(NUM_ACTIONS) == action), jnp.asarray(COOLDOWN), cooldowns)

        # The boss's hp: damage, the overflow bug, regeneration up to the phase it is in.
        overflow = finisher & up[FURY] & (phase == 3)
        damage = jnp.minimum(damage, jnp.maximum(state.boss_hp, 0))
        hit_hp = jnp.where(overflow, state.boss_hp + damage, state.boss_hp - damage)
        regen = jnp.where(damage > 0, 0, params.boss_regen)
        bounds = jnp.floor(params.phase_thresholds * params.boss_max_hp).astype(jnp.int32)
        cap = jnp.min(jnp.where(bounds >= hit_hp, bounds, params.boss_max_hp))
        boss_hp = jnp.where(overflow, jnp.minimum(hit_hp, bounds[1]), jnp.minimum(hit_hp + regen, jnp.maximum(cap, hit_hp)))
        new_phase = self.phase(boss_hp, params)
        killed = ~dart_crash & (boss_hp <= 0)

        moved = jnp.any(pos != state.pos)
        at = lambda k: moved & jnp.all(pos == params.bug_cells[k])  # noqa: E731
        here = lambda k: jnp.all(state.pos == params.bug_cells[k])  # noqa: E731
        border_dash = dashed & jnp.any(dash_to != aim)
        fired = jnp.stack([
            dart_crash,
            jnp.bool_(False),  # bug 1: the boss's hit, below
            at(0) & up[params.bug_buffs[0]],
            use(LEAP) & here(1),
            dashed & at(2),
            cap_ignored & (state.player_hp + healed > params.player_max_hp),
            (action == FLICK) & ~on_arena & (dist0 <= 3),
            killed & jnp.all(up[params.death_buffs]),
            overflow & (boss_hp > state.boss_hp),
            combo_sweep & up[FURY] & (phase == 1) & (new_phase >= 2),
            (phase < 3) & (new_phase == 3) & ~killed & on_arena & (dist == 0),
            thrusted & late & (state.stagger > 1),
            darted & (dist0 == 1) & up[params.bug_buffs[2]] & late,  # Fury by default
            killed & dashed,
            at(3) & up[params.bug_buffs[3]] & late,
            (action == FLICK) & on_arena & (dist0 >= 7) & (phase == 3),
            double_heal,
            use(LEAP) & (floor == 1) & (state.away >= AWAY) & late,
            use(LEAP) & on_arena & (dist0 >= 6) & late,
            at(4) & up[params.bug_buffs[4]] & (phase == 3),
            border_dash & (floor == 2) & (dist0 >= 4) & late,
        ])  # fmt: skip
        crashed = jnp.any(fired & jnp.asarray(_IS_CRASH))
        won = killed & ~crashed
        stuck = jnp.any(fired & jnp.asarray(_IS_STUCK))

        # The boss's turn: only while the player is on floor 0, the fight goes on and nobody is stuck.
        boss_acts = (pos[0] == 0) & ~(crashed | won | stuck)
        gap = new_cell - state.boss_pos
        along_rows = jnp.abs(gap[0]) >= jnp.abs(gap[1])
        boss_step = jnp.where(along_rows, jnp.array([1, 0]), jnp.array([0, 1])) * jnp.sign(gap)
        boss_moves = boss_acts & (dist > 1) & (jax.random.uniform(k_move) < params.boss_move_prob)
        boss_pos = jnp.where(boss_moves, state.boss_pos + boss_step, state.boss_pos).astype(jnp.int32)
        boss_hit = boss_acts & (_distance(new_cell, boss_pos) <= 1) & (jax.random.uniform(k_attack) < params.boss_attack_prob)
        bonus = params.boss_atk_per_phase * (new_phase - 1)
        atk = jax.random.randint(k_roll, (), params.boss_atk_min, params.boss_atk_max + 1) + bonus
        hurt = jnp.where(boss_hit, atk - jnp.sum(jnp.where(up, jnp.asarray(REDUCTION), 0)), 0)  # no max(hurt, 0)
        fired = fired.at[1].set(boss_hit & (hurt < 0))
        player_hp = state.player_hp + healed - hurt
        lost = ~won & ~crashed & (player_hp <= 0)
        fired = fired & ~state.bugs_seen

        dealt = jnp.where(overflow, state.boss_hp - boss_hp, damage)  # the overflow's heal counts against the player
        reward = (dealt / params.boss_max_hp + jnp.where(won, 1.0, 0.0) - jnp.where(lost, 1.0, 0.0)).astype(jnp.float32)
        new_state = EnvState(
            pos=pos, boss_pos=boss_pos, player_hp=player_hp.astype(jnp.int32), boss_hp=boss_hp.astype(jnp.int32),
            facing=facing.astype(jnp.int32), buff_timer=buff_timer.astype(jnp.int32), cooldowns=cooldowns.astype(jnp.int32),
            stagger=stagger.astype(jnp.int32), away=jnp.where(pos[0] > 0, state.away + 1, 0).astype(jnp.int32), exposed=exposed.astype(jnp.int32), frozen=stuck, crashed=crashed,
            bugs_seen=state.bugs_seen | fired, time=state.time + 1,
        )  # fmt: skip
        # A stuck player's world no longer changes (only the clock runs): Wuji's stuck oracle (§III).
        new_state = jax.tree.map(lambda a, b: jnp.where(state.frozen, a, b), state.replace(time=state.time + 1), new_state)
        fired = jnp.where(state.frozen, False, fired)
        reward = jnp.where(state.frozen, 0.0, reward).astype(jnp.float32)
        terminated = ~state.frozen & (crashed | won | lost)
        telemetry = Telemetry.make(
            position=new_state.pos[1:], cell=self.cell_id(new_state, params), bugs_fired=fired, game_reward=reward, crashed=new_state.crashed,
        )  # fmt: skip
        return self.get_obs(new_state, params), new_state, reward, terminated, {"telemetry": telemetry}

    def cell_id(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Coverage cell: (floor, row, col) × (phase, distance bucket 0 / 1 / 2-4 / 5+)."""
        flat = (state.pos[0] * self.rows + state.pos[1]) * self.cols + state.pos[2]
        dist = _distance(state.pos[1:], state.boss_pos)
        bucket = jnp.where(state.pos[0] > 0, 3, jnp.searchsorted(jnp.array([1, 2, 5]), dist, side="right"))
        return flat * 12 + (self.phase(state.boss_hp, params) - 1) * 4 + bucket

    def get_obs(self, state: EnvState, params: EnvParams = None, key=None) -> jax.Array:
        params = self.default_params if params is None else params
        scale = jnp.array([self.levels - 1, self.rows - 1, self.cols - 1], jnp.float32)
        lengths = jnp.asarray(COOLDOWN[list(COOLDOWN_ACTIONS)], jnp.float32)
        dist = _distance(state.pos[1:], state.boss_pos)
        obs = jnp.concatenate([
            state.pos / scale,
            state.boss_pos / scale[1:],
            jnp.clip(jnp.stack([state.player_hp / params.player_max_hp]), 0.0, 2.0),
            jnp.clip(jnp.stack([state.boss_hp / params.boss_max_hp]), 0.0, 1.0),
            jnp.clip(state.buff_timer / BUFF_TIME, 0.0, 1.0),
            jnp.clip(state.cooldowns[jnp.asarray(COOLDOWN_ACTIONS)] / lengths, 0.0, 1.0),
            jnp.clip(jnp.stack([state.stagger / STAGGER, state.exposed / EXPOSE]), 0.0, 1.0),
            jnp.stack([dist / (self.rows + self.cols - 2), (state.pos[0] == 0).astype(jnp.float32)]),
            jax.nn.one_hot(self.phase(state.boss_hp, params) - 1, 3),
            jax.nn.one_hot(state.facing, 4),
        ])  # fmt: skip
        return obs.astype(jnp.float32)

    #: Observation slots of Wuji's game state: floor, cells, hps, distance and phase.
    _STATE_SLOTS = np.r_[0:7, 27, 29:32]

    def state_features(self, obs: jax.Array) -> jax.Array:
        """Wuji's game state (Def. 3): floor, both cells, both hps, the planar distance, the phase
        and which buffs are up, ``float32[..., 16]``. As ``CombatArena-v0``'s, without the timers,
        cooldowns and facing, which tick or flip nearly every step."""
        return jnp.concatenate([obs[..., self._STATE_SLOTS], (obs[..., 7:12] > 0).astype(jnp.float32)], axis=-1)

    def state_feature_bounds(self, params) -> tuple[np.ndarray, np.ndarray]:
        low, high = super().state_feature_bounds(params)
        return np.r_[low[self._STATE_SLOTS], np.zeros(NUM_BUFFS, np.float32)], np.r_[high[self._STATE_SLOTS], np.ones(NUM_BUFFS, np.float32)]

    def is_terminated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.crashed | (state.boss_hp <= 0) | (state.player_hp <= 0)

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
        ids = jnp.arange(self.rows * self.cols)
        start = params.player_start[1] * self.cols + params.player_start[2]
        boss = params.boss_start[0] * self.cols + params.boss_start[1]
        scores = jax.random.gumbel(k_cell, (params.bug_cells.shape[0], ids.size)) + jnp.where((ids == start) | (ids == boss), -1e9, 0.0)
        flat = jnp.argmax(scores, axis=-1)
        cells = jnp.stack([params.bug_cells[:, 0], flat // self.cols, flat % self.cols], axis=-1).astype(jnp.int32)
        buffs = jax.random.randint(k_buff, params.bug_buffs.shape, 0, NUM_BUFFS).astype(jnp.int32)
        death = jax.random.permutation(k_death, NUM_BUFFS)[:2].astype(jnp.int32)
        return params.replace(bug_cells=cells, bug_buffs=buffs, death_buffs=death)

    def validate_params(self, params: EnvParams) -> None:
        super().validate_params(params)
        levels, rows, cols = self.levels, self.rows, self.cols
        start = np.asarray(params.player_start)
        if start.shape != (3,) or not (0 <= start[0] < levels and 0 <= start[1] < rows and 0 <= start[2] < cols):
            raise ValueError(f"{self.name}: player_start {start.tolist()} is outside the {levels}x{rows}x{cols} arena")
        boss = np.asarray(params.boss_start)
        if boss.shape != (2,) or not (0 <= boss[0] < rows and 0 <= boss[1] < cols):
            raise ValueError(f"{self.name}: boss_start {boss.tolist()} is outside the {rows}x{cols} floor")
        if start[0] == 0 and start[1:].tolist() == boss.tolist():
            raise ValueError(f"{self.name}: player_start and boss_start are the same cell {boss.tolist()} of floor 0")
        cells = np.asarray(params.bug_cells)
        if cells.shape != (5, 3):
            raise ValueError(f"{self.name}: bug_cells must have shape (5, 3) (floor, row, col), got {cells.shape}")
        for k, (f, r, c) in enumerate(cells.tolist()):
            if not (0 <= f < levels and 0 <= r < rows and 0 <= c < cols):
                raise ValueError(f"{self.name}: bug cell {k} at (floor {f}, {r}, {c}) is outside the {levels}x{rows}x{cols} arena")
            if f != BUG_CELL_FLOORS[k]:
                raise ValueError(f"{self.name}: bug cell {k} (bug {BUG_CELL_BUGS[k]}) must be on floor {BUG_CELL_FLOORS[k]}, got floor {f}")
        for what, shape in (("bug_buffs", (5,)), ("death_buffs", (2,))):
            buffs = np.asarray(getattr(params, what))
            if buffs.shape != shape or np.any((buffs < 0) | (buffs >= NUM_BUFFS)):
                raise ValueError(f"{self.name}: {what} must be {shape[0]} buff indices in 0..{NUM_BUFFS - 1}, got {buffs.tolist()}")
        death = np.asarray(params.death_buffs)
        if death[0] == death[1]:
            raise ValueError(f"{self.name}: death_buffs must be two different buffs, got {death.tolist()}")
        phases = np.asarray(params.phase_thresholds)
        if phases.shape != (2,) or np.any((phases <= 0) | (phases >= 1)) or not phases[0] > phases[1]:
            raise ValueError(f"{self.name}: phase_thresholds must be two boss hp fractions in (0, 1), the first the larger, got {phases.tolist()}")
        bounds = np.floor(phases * int(np.asarray(params.boss_max_hp))).astype(int)
        if bounds[1] < 1 or bounds[0] == bounds[1]:
            raise ValueError(f"{self.name}: phase_thresholds {phases.tolist()} leave a phase without hp at boss_max_hp {int(np.asarray(params.boss_max_hp))}")
        for what in ("player_max_hp", "boss_max_hp"):
            if int(np.asarray(getattr(params, what))) < 1:
                raise ValueError(f"{self.name}: {what} must be at least 1, got {int(np.asarray(getattr(params, what)))}")
        atk_min, atk_max = int(np.asarray(params.boss_atk_min)), int(np.asarray(params.boss_atk_max))
        if atk_min < 0 or atk_max < atk_min:
            raise ValueError(f"{self.name}: boss attack range [{atk_min}, {atk_max}] must satisfy 0 <= boss_atk_min <= boss_atk_max")
        for what in ("boss_atk_per_phase", "boss_regen", "heal_amount"):
            if int(np.asarray(getattr(params, what))) < 0:
                raise ValueError(f"{self.name}: {what} must be non-negative, got {int(np.asarray(getattr(params, what)))}")
        for what in ("boss_move_prob", "boss_attack_prob"):
            value = float(np.asarray(getattr(params, what)))
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{self.name}: {what} must be a probability in [0, 1], got {value}")
