"""The 360° object test on a real level, steered by the labels buffer (PPGTA §V-B).

A level gives no object positions, only each thing's box on the screen and the player's angle:
:class:`LabelWalk` reads those, as a tester at the screen would.

* chosen: trigger at 400 pixels, a thing about 20 × 20 of the 160 × 120 screen, a few metres off;
* chosen: close in to a box 40 pixels high; give up after 15 steps out of view;
* chosen: a budget of 150 steps, above a full circle's length at Doom's speeds.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: Labels that are not things a tester walks around: transient effects of the game.
NOT_OBJECTS = frozenset(
    {"Blood", "BulletPuff", "TeleportFog", "ItemFog", "DoomUnusedStates", "RocketSmokeTrail"}
)
#: The buttons the walk presses (a level's, :data:`envs_bridge.vizdoom.LEVEL_BUTTONS`).
WALK_BUTTONS = ("MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT", "MOVE_LEFT")
EXPLORING, TESTING = 0, 1


@dataclasses.dataclass(frozen=True)
class LabelWalkSettings:
    """When a test starts, how the walk steers, and when it ends (:class:`LabelWalk`):
    ``trigger_pixels`` of a thing's box to start, ``near_height`` pixels of box height to stop
    closing in, ``test_budget`` steps at most, ``lost_steps`` steps out of view (or strafing without
    turning) before giving up."""

    trigger_pixels: int = 400
    near_height: int = 40
    test_budget: int = 150
    lost_steps: int = 15

    def __post_init__(self):
        for name in ("trigger_pixels", "near_height", "test_budget", "lost_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


class LabelWalk:
    """The tests of ``num_envs`` games, sharing the campaign's memory of things tested.

    * **trigger**: while exploring, a thing of interest not tested yet whose box covers at least
      ``trigger_pixels`` pixels (transient effects such as blood and bullet puffs are not things of
      interest, :data:`NOT_OBJECTS`) starts its test;
    * **walk**: keep the thing's box centred (turn toward it when its centre is more than an eighth
      of the screen off), come closer while its box is lower than ``near_height`` pixels, then
      strafe: strafing moves the thing off centre, turning brings it back, and the player circles
      it;
    * **outcome**: success once the player's angle has swept a full turn (circling a thing while
      facing it turns the player through 360°); failure when ``test_budget`` steps pass first, or
      the thing stays out of view for ``lost_steps`` steps (behind a wall, or a monster that moved
      off), or the player strafes that many steps without turning (held by a wall). Either way the
      thing counts as tested and is not triggered again.

    Args:
      action_names: the game's buttons, one an action; the walk needs :data:`WALK_BUTTONS`.
      screen_width: the frame's width in pixels.
      settings: :class:`LabelWalkSettings`.

    Raises:
      ValueError: a game without the buttons the walk presses.
    """

    def __init__(
        self,
        num_envs: int,
        action_names: tuple[str, ...],
        screen_width: int,
        settings: LabelWalkSettings = LabelWalkSettings(),
    ):
        missing = [b for b in WALK_BUTTONS if b not in action_names]
        if missing:
            raise ValueError(
                f"the 360° walk presses {', '.join(WALK_BUTTONS)}; this game has no "
                f"{', '.join(missing)} (a full level, "
                "vizdoom:WAD/MAP, has them; a Gymnasium game names its actions with --game-arg "
                "action_names=A,B,…)"
            )
        self.forward, self.left, self.right, self.strafe = (
            action_names.index(b) for b in WALK_BUTTONS
        )
        self.width, self.settings = int(screen_width), settings
        self.mode = np.zeros(num_envs, np.int32)
        self.target = np.full(num_envs, -1, np.int64)
        self.steps = np.zeros(num_envs, np.int32)
        self.lost = np.zeros(num_envs, np.int32)
        self.swept = np.zeros(num_envs, np.float64)
        self.last_angle = np.zeros(num_envs, np.float64)
        self.turn_side = np.zeros(num_envs, np.int32)  # the side the target was last seen on
        self.strafing = np.zeros(num_envs, bool)  # the walk's last action strafed
        self.stalled = np.zeros(
            num_envs, np.int32
        )  # strafing steps in a row that turned the player less than a degree
        #: Each thing tested: its id → ``(name, succeeded)``.
        self.outcomes: dict[int, tuple[str, bool]] = {}

    def testing(self) -> np.ndarray:
        return self.mode == TESTING

    def actions(
        self, chosen: np.ndarray, objects: list[list[tuple]], angle: np.ndarray
    ) -> np.ndarray:
        """The actions to play: the explorer's ``chosen`` ones, the walk's where a test runs (the
        frame's ``objects``, per game ``(name, id, x, y, width, height)``, and the player's
        ``angle`` are what the last step showed); starts the tests this frame triggers first."""
        out = np.asarray(chosen).copy()
        for i, seen in enumerate(objects):
            if self.mode[i] == EXPLORING:
                self._trigger(i, seen, float(angle[i]))
            if self.mode[i] == TESTING:
                out[i] = self._walk(i, seen)
        return out

    def observe(
        self, objects: list[list[tuple]], angle: np.ndarray, autoreset: np.ndarray
    ) -> list[tuple[int, int, bool]]:
        """Advances the running tests after a step: ``[(game, thing id, succeeded)]`` for the tests
        that ended. An episode that ended mid-test ends its test as failed."""
        ended = []
        for i in np.flatnonzero(self.mode == TESTING):
            if autoreset[i]:
                ended.append(self._end(i, False))
                continue
            delta = (float(angle[i]) - self.last_angle[i] + 180.0) % 360.0 - 180.0
            self.swept[i] += delta
            self.last_angle[i] = float(angle[i])
            self.steps[i] += 1
            visible = any(obj[1] == self.target[i] for obj in objects[i])
            self.lost[i] = 0 if visible else self.lost[i] + 1
            self.stalled[i] = self.stalled[i] + 1 if self.strafing[i] and abs(delta) < 1.0 else 0
            if abs(self.swept[i]) >= 360.0:
                ended.append(self._end(i, True))
            elif (
                self.steps[i] >= self.settings.test_budget
                or max(self.lost[i], self.stalled[i]) >= self.settings.lost_steps
            ):
                ended.append(self._end(i, False))
        return ended

    def _trigger(self, i: int, seen: list[tuple], angle: float) -> None:
        candidates = [
            (w * h, oid, name)
            for name, oid, _, _, w, h in seen
            if name not in NOT_OBJECTS
            and oid not in self.outcomes
            and w * h >= self.settings.trigger_pixels
            and oid not in self.target[self.mode == TESTING]
        ]
        if candidates:
            _, oid, name = max(candidates)
            (
                self.mode[i],
                self.target[i],
                self.steps[i],
                self.lost[i],
                self.stalled[i],
                self.swept[i],
            ) = TESTING, oid, 0, 0, 0, 0.0
            self.last_angle[i] = angle
            self.outcomes[oid] = (name, False)  # pending: claimed, so no other game triggers it

    def _walk(self, i: int, seen: list[tuple]) -> int:
        action = self._steer(i, seen)
        self.strafing[i] = action == self.strafe
        return action

    def _steer(self, i: int, seen: list[tuple]) -> int:
        box = next((obj for obj in seen if obj[1] == self.target[i]), None)
        if box is None:  # out of view: turn toward where it was last seen
            return self.left if self.turn_side[i] < 0 else self.right
        _, _, x, _, w, h = box
        off = (x + w / 2) - self.width / 2
        self.turn_side[i] = -1 if off < 0 else 1
        if abs(off) > self.width / 8:
            return self.left if off < 0 else self.right
        return self.forward if h < self.settings.near_height else self.strafe

    def _end(self, i: int, succeeded: bool) -> tuple[int, int, bool]:
        oid = int(self.target[i])
        self.outcomes[oid] = (self.outcomes[oid][0], succeeded)
        self.mode[i], self.target[i] = EXPLORING, -1
        return i, oid, succeeded
