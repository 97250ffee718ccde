"""Explicit plans on a real Doom level (``vizdoom:freedoom1/E1M1``), through the ViZDoom bridge: a
scripted walker reaches the level's doors, switches, exits and pickups, and each action is
validated by the engine event bound to it (:func:`run_plan`).

* chosen: no monsters, because a plan tests the level's mechanics.
* chosen: a door passes when its ceiling rose by the player's height (56 units): room to walk.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
import os
import re

import numpy as np

from jgtest.errors import PlanError
from jgtest.plans import doom_level
from jgtest.plans.failures import failure_text

SKILL = 2
GAME_ARGS = "-nomonsters"
#: Engine tics a step: 7° of turn a step, fine enough to steer through a door.
FRAME_SKIP = 2
#: A run's step budget when none is given (4,000 tics, about two minutes of game time).
DEFAULT_MAX_STEPS = 2000
#: Where the walker stands to use a line: this far in front of its middle (Doom's reach is 64
#: units).
USE_DISTANCE = 40.0
#: Steps the walker may take towards a line it is to use, once it faces it.
APPROACH_STEPS = 20
#: A waypoint is reached within this many units; the last one (where the action happens) within
#: :data:`ARRIVED`.
WAYPOINT, ARRIVED = 24.0, 12.0
#: Steps without closing in before the walker tries to get free, and before it plans again.
STUCK_STEPS, REPLAN_STEPS = 12, 60
#: The bridge's actions (:data:`envs_bridge.vizdoom.LEVEL_BUTTONS`).
FORWARD, BACKWARD, TURN_LEFT, TURN_RIGHT, STRAFE_LEFT, STRAFE_RIGHT, ATTACK, USE = range(8)
#: Timeouts of the validations (:func:`_validate`), in steps.
TIMEOUTS = {"door": 60, "switch": 60, "exit": 30, "pickup": 30}


@dataclasses.dataclass(frozen=True)
class Target:
    """One thing a node may name: what it is, where the walker stands, and what it faces."""

    kind: str  # door, switch, exit, pickup
    stand: tuple[tuple[float, float], ...]  # places to act from (the nearest reachable is taken)
    faces: tuple[tuple[float, float], ...]  # what the walker faces from each of them
    sector: int | None = None  # a door's
    tag: int | None = None  # a switch's
    thing: str | None = None  # a pickup's engine name
    key: str | None = None  # the key a door needs, or a pickup gives
    used: bool = True  # an exit used (a switch), or walked over


def actor_name(engine_name: str) -> str:
    """A pickup's plan name: its engine name in lower-case words (``BlueCard`` → ``blue card``)."""
    return " ".join(re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", engine_name)).lower()


#: Reading by meaning: the Doom actions in canonical phrases, their object an "it".
DOOM_ACTION_PHRASES = {
    "use": ("use it", "open it", "press it", "switch it on", "flip it"),
    None: ("go to it", "walk over it", "find it"),
}
#: What getting to a pickup is called: collecting it.
DOOM_PICKUP_PHRASES = ("pick it up", "collect it", "get it", "take it")
#: The names players give the targets whose plan names say otherwise (Doom's manual's).
TARGET_NAMES = {
    "medikit": ("the medkit", "the health pack"),
    "stimpack": ("the small health pack",),
    "health bonus": ("the health potion",),
    "armor bonus": ("the armor helmet",),
    "blue card": ("the blue key", "the blue keycard"),
    "yellow card": ("the yellow key", "the yellow keycard"),
    "red card": ("the red key", "the red keycard"),
    "exit": ("the end of the level", "the exit switch", "the switch that ends the level"),
    "shell": ("the shells", "the shotgun ammo", "the shotgun shells"),
    "shell box": ("the box of shells",),
    "clip": ("the bullet clip", "the bullets"),
    "clip box": ("the box of bullets",),
    "berserk": ("the berserk pack",),
    "cell": ("the energy cell",),
}


class DoomPlans:
    """The plan vocabulary of one level and its targets: ``ACTIONS``, ``ACTOR_TYPES``,
    ``EVENTS``, and :meth:`target` for a node.

    * ``door`` (open to anyone), ``blue door``, ``yellow door``, ``red door`` (locked): ``use``;
    * ``switch``: a line the player uses that moves its tagged sectors; ``use``;
    * ``exit``: the line that ends the level; ``use`` (a switch) or no action (walked over);
    * the things a player picks up, by their engine names in lower case, a word each
      (``shotgun``, ``blue card``, ``medikit``…): no action, the player walks onto them.

    ``instance`` counts things of one type in order of their walking distance from the player's
    start (``door`` 0 is the door nearest the start), so "the first door" is instance 0. Plans on a
    Doom level take neither rules nor locations.
    """

    RULES = LOCATIONS = False
    ACTION_PHRASES = DOOM_ACTION_PHRASES
    ACTIONS = {"use": USE}
    EVENTS = ("use", "crossing it", "reaching it")

    def __init__(self, level: str):
        self.level_name = level
        self.level = _read_level(level)
        grid = doom_level.WalkGrid(self.level)
        distance, _ = grid.distances(*self.level.start)
        far = lambda point: (distance[grid.cell(*point)], math.dist(point, self.level.start))
        targets: dict[str, list[Target]] = {}
        for door in self.level.doors:
            name = f"{door.key} door" if door.key else "door"
            targets.setdefault(name, []).append(
                Target(
                    "door",
                    tuple(line.before(USE_DISTANCE) for line in door.lines),
                    tuple(line.middle for line in door.lines),
                    sector=door.sector,
                    key=door.key,
                )
            )
        for line in self.level.switches:
            targets.setdefault("switch", []).append(
                Target("switch", (line.before(USE_DISTANCE),), (line.middle,), tag=line.tag)
            )
        for line in self.level.exits:
            used = line.special in doom_level.USED_EXITS
            stand = (
                line.before(USE_DISTANCE) if used else line.before(USE_DISTANCE, side=-1)
            )  # past a walked-over line
            targets.setdefault("exit", []).append(
                Target("exit", (stand,), (line.middle,), used=used)
            )
        for engine_name, thing in self.level.pickups(SKILL):
            targets.setdefault(actor_name(engine_name), []).append(
                Target(
                    "pickup",
                    ((thing.x, thing.y),),
                    ((thing.x, thing.y),),
                    thing=engine_name,
                    key=doom_level.KEY_COLOURS.get(engine_name),
                )
            )
        self.targets = {
            name: sorted(found, key=lambda t: min(far(p) for p in t.stand))
            for name, found in targets.items()
        }
        self.ACTOR_TYPES = tuple(self.targets)
        # reading by meaning (jgtest.plans.meaning): doors, switches and the exit are used, the
        # things a player picks up walked onto
        self.READINGS = tuple(
            ("use", name) if found[0].kind != "pickup" else (None, name)
            for name, found in self.targets.items()
        )
        self.READING_PHRASES = {
            reading: DOOM_PICKUP_PHRASES for reading in self.READINGS if reading[0] is None
        }
        self.ACTOR_PHRASES = {
            name: (f"the {name}", *TARGET_NAMES.get(name, ())) for name in self.targets
        }

    def target(self, node, where: str) -> Target:
        """The target of ``node`` (at ``where``, e.g. ``nodes[1]``), its action checked against it.

        Raises:
          PlanError: an instance beyond the level's count, or an action the target takes no
            validation for.
        """
        found = self.targets[node.actor]
        if node.instance >= len(found):
            raise PlanError(
                f"{where}.instance: {self.level_name} has {len(found)} {node.actor}(s), instances "
                f"0–{len(found) - 1}; got {node.instance}"
            )
        target = found[node.instance]
        wants_use = target.kind in ("door", "switch") or target.kind == "exit" and target.used
        if node.action is not None and not wants_use:
            raise PlanError(
                f"{where}.action: a {node.actor} is "
                f"{'walked over' if target.kind == 'exit' else 'picked up by walking onto it'}: "
                "no action"
            )
        return target


def level_of(game: str) -> str | None:
    """``WAD/MAP`` of a ``vizdoom:WAD/MAP`` game, or ``None`` for another game."""
    return game.removeprefix("vizdoom:") if game.startswith("vizdoom:") and "/" in game else None


@functools.cache
def plans_of(level: str) -> DoomPlans:
    """The vocabulary of ``level`` (``freedoom1/E1M1``), built once.

    Raises:
      PlanError: no ViZDoom installed, or no such WAD or map.
    """
    return DoomPlans(level)


def plan_targets(plan) -> list[Target]:
    """Each node's :class:`Target` on the plan's level (:meth:`DoomPlans.target`: an instance the
    level lacks, or an action its target takes no validation for, is a
    :class:`jgtest.errors.PlanError`)."""
    vocabulary = plans_of(level_of(plan.game))
    return [vocabulary.target(node, f"nodes[{i}]") for i, node in enumerate(plan.nodes)]


def _read_level(level: str) -> doom_level.Level:
    spec = importlib.util.find_spec("vizdoom")
    if spec is None or not spec.origin:
        raise PlanError(
            "game: plans on ViZDoom levels need ViZDoom (pip install 'jgtest[bridges]')"
        )
    wad, _, map_name = level.partition("/")
    path = os.path.join(os.path.dirname(spec.origin), f"{wad}.wad")
    if not os.path.exists(path):
        wads = sorted(
            f[:-4] for f in os.listdir(os.path.dirname(spec.origin)) if f.endswith(".wad")
        )
        raise PlanError(f"game: ViZDoom ships no WAD {wad!r}; WADs: {', '.join(wads)}")
    try:
        return doom_level.read_level(path, map_name)
    except ValueError as error:
        raise PlanError(f"game: {error}") from None


class _Walker:
    """One run of a plan on a bridged game: the scripted walker and the validations.

    The walker follows a shortest route on :class:`jgtest.plans.doom_level.WalkGrid` (with the keys
    picked up so far) with the bridge's own actions, one button a step (turn towards the next
    waypoint, else walk forward); a walker that stops closing in on its waypoint for
    :data:`STUCK_STEPS` presses ``use`` once (a door on its way: pressed again while it rises, a
    Doom door closes), then strafes, and after :data:`REPLAN_STEPS` plans its route again from
    where it stands.
    """

    def __init__(self, env, vocabulary: DoomPlans, seed: int, max_steps: int):
        self.env, self.vocabulary, self.max_steps = env, vocabulary, max_steps
        self.steps, self.keys, self.finished = 0, frozenset(), False
        _, self.info = env.reset(seed)
        self._grids: dict[frozenset, doom_level.WalkGrid] = {}

    @property
    def position(self) -> tuple[float, float]:
        x, y = self.info["features"][0, :2]
        return float(x), float(y)

    def act(self, action: int) -> None:
        _, _, _, _, self.info = self.env.step(np.array([action]))
        self.steps += 1
        self.finished |= bool(self.info["level_finished"][0])

    def out_of_steps(self) -> bool:
        return self.steps >= self.max_steps

    def heading_error(self, point) -> float:
        """Degrees to turn right to face ``point`` (negative: left)."""
        x, y = self.position
        want = math.degrees(math.atan2(point[1] - y, point[0] - x)) % 360
        return (float(self.info["angle"][0]) - want + 540) % 360 - 180

    def turn_towards(self, point, within: float) -> bool:
        """One turn step towards ``point``, or ``True`` (and no step) when already within ``within``
        degrees."""
        error = self.heading_error(point)
        if abs(error) <= within:
            return True
        self.act(TURN_RIGHT if error > 0 else TURN_LEFT)
        return False

    def face(self, point) -> None:
        """Turns to ``point``, then steps towards it while more than :data:`USE_DISTANCE` away (a
        route may end short of where the walker stands to use a line, in a recess narrower than its
        clearance)."""
        while not self.out_of_steps() and not self.turn_towards(point, 6.0):
            pass
        for _ in range(APPROACH_STEPS):
            if self.out_of_steps() or math.dist(self.position, point) <= USE_DISTANCE:
                break
            if self.turn_towards(point, 6.0):
                self.act(FORWARD)

    def grid(self) -> doom_level.WalkGrid:
        if self.keys not in self._grids:
            self._grids[self.keys] = doom_level.WalkGrid(self.vocabulary.level, self.keys)
        return self._grids[self.keys]

    def route(self, places) -> tuple[int, list] | None:
        """The nearest reachable of ``places`` (its index) and the waypoints there, or ``None``."""
        routes = [
            (r[0], i, r[1])
            for i, r in enumerate(self.grid().route(self.position, p) for p in places)
            if r is not None
        ]
        return min(routes)[1:] if routes else None

    def walk(self, places) -> int | None:
        """Walks to the nearest reachable of ``places``: its index, or ``None`` when it did not get
        there (no route, or out of steps)."""
        found = self.route(places)
        if found is None:
            return None
        place, waypoints = found
        goal, best, since, i = waypoints[-1], math.inf, 0, 0
        while not self.out_of_steps() and not self.finished:
            point = waypoints[i]
            distance = math.dist(self.position, point)
            if distance < (ARRIVED if i == len(waypoints) - 1 else WAYPOINT):
                if i == len(waypoints) - 1:
                    return place
                i, best, since = i + 1, math.inf, 0
                continue
            best, since = (distance, 0) if distance < best - 2 else (best, since + 1)
            if since >= REPLAN_STEPS:
                waypoints = (self.route([goal]) or (0, waypoints))[1]
                i, best, since = 0, math.inf, 0
            elif (
                since == STUCK_STEPS
            ):  # a door on the way: used once (used again while it rises, a door closes)
                self.act(USE)
            elif (
                since > 2 * STUCK_STEPS and since % STUCK_STEPS < 4
            ):  # a corner: strafe one way, then the other
                self.act(STRAFE_LEFT if since // STUCK_STEPS % 2 else STRAFE_RIGHT)
            elif self.turn_towards(point, 20.0):
                self.act(FORWARD)
        return None

    def wait_for(self, timeout: int, measure, done) -> tuple[float, bool]:
        """Waits up to ``timeout`` steps for ``done(measure())``: the last measure, and whether it
        came. A step of waiting turns left, then right (the bridge's actions are one button each,
        none idle)."""
        for waited in range(timeout):
            value = measure()
            if done(value) or self.finished or self.out_of_steps():
                return value, done(value)
            self.act(TURN_LEFT if waited % 2 == 0 else TURN_RIGHT)
        value = measure()
        return value, done(value)

    def thing_id(self, target: Target) -> int | None:
        """The engine's id of a pickup target's thing (the one of its name nearest its place),
        ``None`` when it is not in the level (any other target: ``None``)."""
        here = self.things_named(target.thing) if target.kind == "pickup" else []
        return min(here, key=lambda t: math.dist(t[1:], target.faces[0]))[0] if here else None

    def things_named(self, name: str) -> list[tuple[int, float, float]]:
        return [
            (thing_id, x, y)
            for thing_name, thing_id, x, y in self.info["things"][0]
            if thing_name == name
        ]

    def sector(self, index: int) -> np.ndarray:
        return self.info["sectors"][0][index]


def run_plan(plan, seed: int, max_steps: int = DEFAULT_MAX_STEPS, env=None) -> dict:
    """One run of ``plan`` (a :class:`jgtest.plans.model.Plan`) on its Doom level from ``seed``: a
    report in :func:`jgtest.plans.report.run_report`'s form. ``env``: a bridge to reuse (a one-game
    :class:`envs_bridge.vizdoom.VizDoomEnv` of the level with :data:`SKILL`, :data:`GAME_ARGS`,
    :data:`FRAME_SKIP` and ``level_info``), else one is made and closed.

    The nodes run in order. A node with an action, a pickup and a walked-over exit are validated; a
    node with no action on a door, a switch or an exit switch only gets there. The outcome:
    ``passed``, ``validation failed`` (the failure names the node, the actor, the variable and what
    was observed), ``unreachable`` (no route to the target), ``out of steps`` (``max_steps``), or
    ``level ended before the plan`` (the exit came before the last node).

    Raises:
      PlanError: the plan's level is unknown, or a node names an instance the level lacks or an
        action its target takes no validation for.
    """
    vocabulary = plans_of(level_of(plan.game))
    targets = plan_targets(plan)
    own = env is None
    env = env or make_env(vocabulary.level_name, seed)
    try:
        walker = _Walker(env, vocabulary, seed, max_steps)
        validations, outcome, nodes_done = [], "passed", 0
        for i, (node, target) in enumerate(zip(plan.nodes, targets)):
            if walker.finished:
                outcome = "level ended before the plan"
                break
            thing = walker.thing_id(
                target
            )  # the pre-action measure of a pickup: before it is reached
            place = walker.walk(target.stand)
            if place is None and not (
                walker.finished and target.kind == "exit"
            ):  # a walked-over exit ends the walk to it
                outcome = (
                    "level ended before the plan"
                    if walker.finished
                    else "out of steps"
                    if walker.out_of_steps()
                    else "unreachable"
                )
                break
            if (
                node.action is not None
                or target.kind == "pickup"
                or target.kind == "exit"
                and not target.used
            ):  # else: only get there
                validation = _validate(walker, node, target, target.faces[place or 0], thing)
                validations.append({"source": f"node {i}", "node": i, "rule": -1, **validation})
                if validation["status"] != "passed":
                    outcome = "validation failed"
                    break
            nodes_done += 1
            if (
                target.kind == "pickup" and target.key
            ):  # a key picked up (a door's key is the one it needs)
                walker.keys = walker.keys | {target.key}
            walker.wait_for(node.wait, lambda: 0.0, lambda _: False)
        report = {
            "plan": plan.name or f"{len(plan.nodes)} nodes, {len(plan.rules)} rules",
            "seed": seed,
            "passed": outcome == "passed",
            "outcome": outcome,
            "steps": walker.steps,
            "nodes_done": nodes_done,
            "validations": validations,
            "failure": None,
        }
        if outcome == "validation failed":
            report["failure"] = failure_text(validations[-1], DoomPlans.EVENTS)
        elif outcome != "passed":
            node = plan.nodes[nodes_done]
            report["failure"] = (
                f"node {nodes_done} ({(node.action + ' ') if node.action else ''}{node.actor}): "
                f"{outcome}"
            )
        return report
    finally:
        if own:
            env.close()


def make_env(level: str, seed: int = 0):
    """The one-game bridge a plan runs on (:func:`run_plan`), through
    :func:`jgtest.host_loop.host_game`."""
    from jgtest.host_loop import host_game

    return host_game(
        f"vizdoom:{level}",
        num_envs=1,
        seed=seed,
        frame_skip=FRAME_SKIP,
        skill=SKILL,
        game_args=GAME_ARGS,
        level_info=True,
        max_steps_in_episode=10**9,
    )


def _validate(
    walker: _Walker, node, target: Target, face: tuple[float, float], thing: int | None
) -> dict:
    """Acts on ``target``, facing ``face``, and checks the event it is bound to: a validation entry
    (``thing``: a pickup's engine id, read before the walk to it).

    The value is read from the engine (the bridge's ``level_info``) before the action, and after it
    when the event comes, within :data:`TIMEOUTS` steps:

    * door: its sector's ceiling, +56, bound to ``use`` (Doom's doors rise 2 units a tic, so an open
      door passes in 28 tics; a locked door used without its key never rises and times out);
    * switch: its tagged sectors that moved, +1, bound to ``use``;
    * exit: the level finished, +1, bound to ``use`` or to crossing it;
    * pickup: the thing in the level, −1, bound to reaching it.
    """
    actor = f"{node.actor} #{node.instance}"
    timeout, start = TIMEOUTS[target.kind], walker.steps
    if target.kind == "pickup":
        count = lambda: float(
            thing is not None and any(t[0] == thing for t in walker.things_named(target.thing))
        )
        before = float(
            thing is not None
        )  # a thing gone before the walk (or never there) is not picked up now
        after, came = walker.wait_for(timeout, count, lambda c: before - c >= 1)
        entry = (
            f"{target.thing} at ({face[0]:g}, {face[1]:g})",
            -1.0,
            after - before,
            "reaching it",
        )
    elif target.kind == "exit":
        if target.used:
            walker.face(face)
            walker.act(USE)
        after, came = walker.wait_for(timeout, lambda: float(walker.finished), bool)
        entry = ("level finished", 1.0, after, "use" if target.used else "crossing it")
    else:
        walker.face(face)
        if target.kind == "door":
            before = float(walker.sector(target.sector)[1])
            walker.act(USE)
            rise = lambda: float(walker.sector(target.sector)[1]) - before
            after, came = walker.wait_for(timeout, rise, lambda r: r >= doom_level.PLAYER_HEIGHT)
            entry = (
                f"sector {target.sector} ceiling",
                float(doom_level.PLAYER_HEIGHT),
                after,
                "use",
            )
        else:
            tagged = np.flatnonzero(walker.vocabulary.level.tags == target.tag)
            before = np.array([walker.sector(s) for s in tagged])
            walker.act(USE)
            moved = lambda: float(np.any(np.array([walker.sector(s) for s in tagged]) != before))
            after, came = walker.wait_for(timeout, moved, bool)
            entry = (f"sectors tagged {target.tag} moved", 1.0, after, "use")
    variable, expected, observed, bound_to = entry
    return {
        "action": node.action or "go to",
        "actor": actor,
        "variable": variable,
        "expected_change": expected,
        "observed_change": observed,
        "bound_to": bound_to,
        "timeout": timeout,
        "step": start,
        "status": "passed" if came else "timeout",
    }
