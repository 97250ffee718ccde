"""Object tests in the park: trigger, the scripted 360° walk, its outcome, and its replay.

Inspector and PPGTA explore until an object of interest (OOI) comes into view,
then run a test behaviour on it (PPGTA §IV, §VI-A; Inspector's
"investigation"): for texture bugs, "moving around an OOI 360 degrees to cover
all its faces" (§V-B). :func:`ooi_step` wraps one ``ParkWorld`` step of one
game:

* **trigger**: when exploring, an object not tested yet that shows at least
  ``trigger_pixels`` pixels in the frame (near enough to walk around; the
  detector's ground truth, ``info["objects"]``) starts a test of it;
* **test**: while testing, the scripted walk's action
  (:func:`jgtest.envs.park_experts.circle_action`, no noise) replaces the
  explorer's; the explorer's action is ignored (from its side the game ignores
  actions while a test runs, an unbiased on-policy transition);
* **outcome**: the walk succeeds once it has swept a full turn around the
  object; it fails when ``test_budget`` steps pass first (an object behind an
  invisible wall or blocked in can be seen but not walked around). Either way
  the object counts as tested and is not triggered again.

PPGTA judges a test's success by the Jensen–Shannon divergence of its actions
to the demonstrations' (its §VI-B, the next issue); here a test succeeds by
completing the walk.

A completed test of a texture-bugged object is a bug: its record holds the
episode's executed actions up to the test's last step, and :func:`replay_test`
re-runs them on the bare game and checks the walk around that object again.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jgtest.envs.park_experts import CIRCLE_RADIUS, circle_action

EXPLORING, TESTING = 0, 1


@dataclasses.dataclass(frozen=True)
class OOITestSettings:
    """When a test starts and how long it may take.

    Attributes:
      trigger_pixels: pixels an untested object must show to start a test (at 64×64 an object
        about 3 cells away).
      test_budget: steps the 360° walk may take before the test fails.
    """

    trigger_pixels: int = 100
    test_budget: int = 240

    def __post_init__(self):
        if self.trigger_pixels < 1 or self.test_budget < 1:
            raise ValueError(f"trigger_pixels and test_budget must be at least 1, got {self.trigger_pixels}, {self.test_budget}")


@struct.dataclass
class OOITesterState:
    """One game's test bookkeeping (carried across its episodes)."""

    mode: jax.Array  # int32 EXPLORING / TESTING
    target: jax.Array  # int32 object under test (-1 none)
    steps: jax.Array  # int32 steps of the running test
    swept: jax.Array  # float32 angle swept around the target so far
    last_angle: jax.Array  # float32 bearing of the player from the target at the last step
    tested: jax.Array  # bool[K] objects tested (by this game, or shared by the campaign)


def init_tester(num_oois: int) -> OOITesterState:
    return OOITesterState(
        mode=jnp.int32(EXPLORING), target=jnp.int32(-1), steps=jnp.int32(0), swept=jnp.float32(0),
        last_angle=jnp.float32(0), tested=jnp.zeros((num_oois,), bool),
    )  # fmt: skip


def _bearing(params, target, pos):
    rel = pos - params.ooi_pos[target]
    return jnp.arctan2(rel[1], rel[0])


def ooi_step(env, settings: OOITestSettings, params, tester: OOITesterState, state, action, key):
    """One step of one game under the tester (module docstring).

    Args:
      env: the ``ParkWorld``.
      tester, state: the game's tester and state.
      action: the explorer's action.

    Returns:
      ``(tester, frame, state, info, executed action, event)``: ``event`` holds ``done`` (the object
      whose test ended this step, −1 none), ``success`` and ``testing`` (whether this step was a
      test's).
    """
    testing = tester.mode == TESTING
    target = jnp.maximum(tester.target, 0)
    executed = jnp.where(testing, circle_action(params, state, target, key, epsilon=0.0), action).astype(jnp.int32)
    frame, next_state, _, _, next_info = env.step_env(key, state, executed, params)
    angle = _bearing(params, target, next_state.pos)
    turn = jnp.arctan2(jnp.sin(angle - tester.last_angle), jnp.cos(angle - tester.last_angle))
    near = jnp.linalg.norm(next_state.pos - params.ooi_pos[target]) < CIRCLE_RADIUS + 1.0
    swept = jnp.where(testing, tester.swept + jnp.where(near, turn, 0.0), 0.0)
    steps = jnp.where(testing, tester.steps + 1, 0)
    success = testing & (jnp.abs(swept) >= 2 * jnp.pi)
    failed = testing & ~success & (steps >= settings.test_budget)
    finished = success | failed
    tested = tester.tested.at[target].set(tester.tested[target] | finished)

    # A new test: the visible untested object with the most pixels, if it shows enough of them.
    objects = next_info["objects"]
    ids = jnp.maximum(objects["id"], 0)
    candidate = objects["visible"] & (objects["pixels"] >= settings.trigger_pixels) & ~tested[ids]
    pick = jnp.argmax(jnp.where(candidate, objects["pixels"], -1))
    start = ((~testing) | finished) & candidate[pick]
    new_target = ids[pick]
    mode = jnp.where(start, TESTING, jnp.where(finished, EXPLORING, tester.mode))
    tester = OOITesterState(
        mode=mode.astype(jnp.int32),
        target=jnp.where(start, new_target, jnp.where(finished, -1, tester.target)).astype(jnp.int32),
        steps=jnp.where(start | finished, 0, steps).astype(jnp.int32),
        swept=jnp.where(start | finished, 0.0, swept).astype(jnp.float32),
        last_angle=jnp.where(start, _bearing(params, new_target, next_state.pos), angle).astype(jnp.float32),
        tested=tested,
    )
    event = {"done": jnp.where(finished, target, -1).astype(jnp.int32), "success": success, "testing": testing}
    return tester, frame, next_state, next_info, executed, event


def replay_test(env, params, start_state, actions: np.ndarray, target: int, settings: OOITestSettings = OOITestSettings()) -> bool:
    """Whether the executed ``actions`` from ``start_state`` end with a completed 360° walk around
    ``target``: for some start within the last ``test_budget`` steps (the test's longest; where it
    began is not recorded), the turns around it from there to the end, counted on the steps that end
    near it (within ``CIRCLE_RADIUS + 1``, as :func:`ooi_step` counts them), add up to a full turn."""
    positions = [np.asarray(start_state.pos)]
    step = jax.jit(env.step_env)
    state = start_state
    for t, action in enumerate(np.asarray(actions, np.int32)):
        _, state, _, _, _ = step(jax.random.key(t), state, jnp.int32(action), params)
        positions.append(np.asarray(state.pos))
    window = np.asarray(positions)[-(settings.test_budget + 1) :]
    centre = np.asarray(params.ooi_pos[target])
    near = np.linalg.norm(window - centre, axis=-1) < CIRCLE_RADIUS + 1.0
    angles = np.arctan2(window[:, 1] - centre[1], window[:, 0] - centre[0])
    turns = np.arctan2(np.sin(np.diff(angles)), np.cos(np.diff(angles)))
    from_each_start = np.cumsum((turns * near[1:])[::-1])[::-1]
    return bool(from_each_start.size and np.abs(from_each_start).max() >= 2 * np.pi)
