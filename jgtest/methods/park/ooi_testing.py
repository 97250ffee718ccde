"""Object tests in the park: trigger, scripted 360° walk, outcome and replay (PPGTA §IV, §V-B).

An object of interest in view is tested by walking around it, "360 degrees to cover all its faces"
(§V-B). :func:`ooi_step` wraps one game step with the tester; PPGTA's learned test is judged by JS
divergence (§VI-B); :func:`replay_test` checks a bug record's walk again.

* chosen: a test starts at ``trigger_pixels`` pixels of an untested object (set with the probes);
* chosen: a scripted walk fails after ``test_budget`` steps: some objects can be seen, not circled.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jgtest.envs.park_experts import CIRCLE_RADIUS, circle_action, object_in_view, walk_around
from jgtest.novelty.preference import js_divergence

EXPLORING, TESTING = 0, 1


@dataclasses.dataclass(frozen=True)
class OOITestSettings:
    """When a test starts and how long it may take.

    Attributes:
      trigger_pixels: pixels an untested object must show to start a test (of 64×64 with the 90°
        view: an object within about 3 cells; set with the park's probes,
        :mod:`jgtest.methods.park.probes`).
      test_budget: steps the scripted 360° walk may take before the test fails (a full walk takes
        55–70 steps at ``ParkWorld``'s speeds; a failed one costs the whole budget).
      test_steps: when positive, a test is a learned behaviour that runs exactly this many steps
        (a pixel agent cannot measure the angle it swept) and is judged by the JS divergence of its
        actions (PPGTA §VI-B); 0: the scripted walk, judged by completing the turn.
    """

    trigger_pixels: int = 60
    test_budget: int = 80
    test_steps: int = 0

    def __post_init__(self):
        if self.trigger_pixels < 1 or self.test_budget < 1:
            raise ValueError(
                f"trigger_pixels and test_budget must be at least 1, got {self.trigger_pixels}, "
                f"{self.test_budget}"
            )
        if self.test_steps < 0:
            raise ValueError(f"test_steps must be non-negative, got {self.test_steps}")


@struct.dataclass
class OOITesterState:
    """One game's test bookkeeping (carried across its episodes)."""

    mode: jax.Array  # int32 EXPLORING / TESTING
    target: jax.Array  # int32 object under test (-1 none)
    steps: jax.Array  # int32 steps of the running test
    swept: jax.Array  # float32 angle swept around the target so far
    last_angle: jax.Array  # float32 bearing of the player from the target at the last step
    tested: jax.Array  # bool[K] objects tested (by this game, or shared by the campaign)
    counts: jax.Array  # float32[A] actions executed by the running test
    box: jax.Array  # int32[4] the target's box in the latest frame (zeros out of view)


def init_tester(num_oois: int, num_actions: int = 9) -> OOITesterState:
    return OOITesterState(
        mode=jnp.int32(EXPLORING),
        target=jnp.int32(-1),
        steps=jnp.int32(0),
        swept=jnp.float32(0),
        last_angle=jnp.float32(0),
        tested=jnp.zeros((num_oois,), bool),
        counts=jnp.zeros((num_actions,), jnp.float32),
        box=jnp.zeros((4,), jnp.int32),
    )


def ooi_step(
    env,
    settings: OOITestSettings,
    params,
    tester: OOITesterState,
    state,
    action,
    key,
    test_action=None,
    judge=None,
    see=None,
):
    """One step of one game under the tester.

    * **trigger**: when exploring, an object not tested yet that shows at least ``trigger_pixels``
      pixels (near enough to walk around; ``info["objects"]``, or ``see``'s) starts a test of it;
    * **test**: while testing, the test's action (``test_action``, else the scripted walk's,
      :func:`jgtest.envs.park_experts.circle_action` without noise) replaces the explorer's, which
      is ignored (``event["testing"]`` marks the step, so a learner can leave it out);
    * **outcome**: the scripted walk succeeds once it has swept a full turn around the object and
      fails when ``test_budget`` steps pass first (an object behind an invisible wall or blocked in
      can be seen but not walked around); a learned test (``settings.test_steps`` > 0) runs that
      many steps and is judged by ``judge``. Either way the object counts as tested.

    A completed test of a texture-bugged object is a bug: its record holds the episode's executed
    actions up to the test's last step (:func:`replay_test` re-runs them).

    Args:
      env: the ``ParkWorld``.
      tester: the game's tester.
      state: the game's state.
      action: the explorer's action.
      test_action: the learned test behaviour's action (used while testing; default the scripted
        walk's).
      judge: ``(reference [A], threshold)`` with ``settings.test_steps``: a test succeeds when the
        JS divergence of its executed actions to ``reference`` is below ``threshold`` (§VI-B).
      see: ``see(frame, info) -> objects``, the objects the new frame shows as the agent sees them
        (``id``, ``box``, ``pixels``, ``visible``; e.g. a detector's,
        :func:`jgtest.vision.detector.detected_objects`); default the renderer's ground truth.

    Returns:
      ``(tester, frame, state, info, executed action, event)``: ``event`` holds ``done`` (the object
      whose test ended this step, −1 none), ``success``, ``walked`` (the test swept a full turn
      around it), ``js`` (a learned test's JS divergence as it ends, else NaN), ``testing`` (whether
      this step was a test's), ``target`` (the object under test after this step's frame, −1 none)
      and ``target_box``, ``target_pixels`` (its box and pixels in that frame).
    """
    target = jnp.maximum(tester.target, 0)
    test_action = (
        circle_action(params, state, target, key, epsilon=0.0)
        if test_action is None
        else test_action
    )
    executed = executed_action(tester, action, test_action)
    frame, next_state, _, _, next_info = env.step_env(key, state, executed, params)
    objects = next_info["objects"] if see is None else see(frame, next_info)
    tester, event = tester_transition(
        settings, tester, executed, next_state.pos, params.ooi_pos, objects, judge
    )
    return tester, frame, next_state, next_info, executed, event


def executed_action(tester: OOITesterState, action, test_action):
    """The action a game executes: the test's while a test runs, else the explorer's."""
    return jnp.where(tester.mode == TESTING, test_action, action).astype(jnp.int32)


def tester_transition(
    settings: OOITestSettings,
    tester: OOITesterState,
    executed,
    position,
    ooi_pos,
    objects,
    judge=None,
):
    """The tester's bookkeeping after a step, from what any game reports (on device, or a bridged
    game's host arrays): the ``executed`` action, the player's new ``position`` ``(x, y)`` in cells,
    the objects' positions ``ooi_pos [K, 2]`` and the ``objects`` the new frame shows (``id``,
    ``box``, ``pixels``, ``visible``). Returns ``(tester, event)`` (:func:`ooi_step`). Jittable."""
    testing = tester.mode == TESTING
    target = jnp.maximum(tester.target, 0)
    bearing = lambda obj: jnp.arctan2(position[1] - ooi_pos[obj][1], position[0] - ooi_pos[obj][0])
    angle = bearing(target)
    turn = jnp.arctan2(jnp.sin(angle - tester.last_angle), jnp.cos(angle - tester.last_angle))
    near = jnp.linalg.norm(position - ooi_pos[target]) < CIRCLE_RADIUS + 1.0
    swept = jnp.where(testing, tester.swept + jnp.where(near, turn, 0.0), 0.0)
    steps = jnp.where(testing, tester.steps + 1, 0)
    counts = tester.counts + testing * jax.nn.one_hot(executed, tester.counts.shape[0])
    if settings.test_steps:
        finished = testing & (steps >= settings.test_steps)
        reference, threshold = judge
        js = js_divergence(counts, reference)
        success = finished & (js < threshold)
    else:
        success = testing & (jnp.abs(swept) >= 2 * jnp.pi)
        finished = success | (testing & (steps >= settings.test_budget))
        js = jnp.float32(jnp.nan)
    tested = tester.tested.at[target].set(tester.tested[target] | finished)

    # A new test: the visible untested object with the most pixels, if it shows enough of them.
    ids = jnp.maximum(objects["id"], 0)
    candidate = (
        objects["visible"]
        & (objects["id"] >= 0)
        & (objects["pixels"] >= settings.trigger_pixels)
        & ~tested[ids]
    )
    pick = jnp.argmax(jnp.where(candidate, objects["pixels"], -1))
    start = ((~testing) | finished) & candidate[pick]
    new_target = ids[pick]
    mode = jnp.where(start, TESTING, jnp.where(finished, EXPLORING, tester.mode))
    now = jnp.where(start, new_target, jnp.where(finished, -1, tester.target)).astype(jnp.int32)
    hit = (objects["id"] == now) & objects["visible"] & (now >= 0)
    box = jnp.where(hit.any(), objects["box"][jnp.argmax(hit)], 0).astype(jnp.int32)
    pixels = jnp.where(hit.any(), objects["pixels"][jnp.argmax(hit)], 0)
    tester = OOITesterState(
        mode=mode.astype(jnp.int32),
        target=now,
        steps=jnp.where(start | finished, 0, steps).astype(jnp.int32),
        swept=jnp.where(start | finished, 0.0, swept).astype(jnp.float32),
        last_angle=jnp.where(start, bearing(new_target), angle).astype(jnp.float32),
        tested=tested,
        counts=jnp.where(start | finished, 0.0, counts).astype(jnp.float32),
        box=box,
    )
    event = {
        "done": jnp.where(finished, target, -1).astype(jnp.int32),
        "success": success,
        "walked": finished & (jnp.abs(swept) >= 2 * jnp.pi),
        "js": jnp.where(finished, js, jnp.nan),
        "testing": testing,
        "target": now,
        "target_box": box,
        "target_pixels": pixels,
    }
    return tester, event


def _replay(env, params, start_state, actions, target: int):
    """Positions ``[T + 1, 2]`` and the target's visible pixels ``[T + 1]`` along the replayed
    ``actions`` (one ``lax.scan`` per game, over the actions padded to the next power of two: a
    campaign's records, each of its own length, compile a handful of times, not once each)."""
    actions = np.asarray(actions, np.int32)
    padded = np.zeros(max(64, 1 << (len(actions) - 1).bit_length()), np.int32)
    padded[: len(actions)] = actions
    first, (positions, pixels) = _replay_scan(env)(
        params, start_state, jnp.asarray(padded), jnp.int32(target)
    )
    positions, pixels = np.asarray(positions)[: len(actions)], np.asarray(pixels)[: len(actions)]
    return np.concatenate([np.asarray(start_state.pos)[None], positions]), np.concatenate(
        [[int(first)], pixels]
    )


@functools.lru_cache(maxsize=8)
def _replay_scan(env):
    @jax.jit
    def run(params, state, actions, target):
        def body(state, ta):
            t, action = ta
            _, state, _, _, info = env.step_env(jax.random.key(t), state, action, params)
            return state, (state.pos, object_in_view(info["objects"], target)[1])

        first = object_in_view(env.observe(state, params)[1]["objects"], target)[1]
        return first, jax.lax.scan(body, state, (jnp.arange(actions.shape[0]), actions))[1]

    return run


def replay_test(
    env,
    params,
    start_state,
    actions: np.ndarray,
    target: int,
    settings: OOITestSettings = OOITestSettings(),
) -> bool:
    """Whether the executed ``actions`` from ``start_state`` end with a completed 360° walk around
    ``target``: for some start within the last ``test_budget`` steps (the test's longest; where it
    began is not recorded), the turns around it from there to the end, counted on the steps that end
    near it (within ``CIRCLE_RADIUS + 1``, as :func:`ooi_step` counts them), add up to a full
    turn."""
    positions, _ = _replay(env, params, start_state, actions, target)
    window = positions[-(settings.test_budget + 1) :]
    centre = np.asarray(params.ooi_pos[target])
    near = np.linalg.norm(window - centre, axis=-1) < CIRCLE_RADIUS + 1.0
    angles = np.arctan2(window[:, 1] - centre[1], window[:, 0] - centre[0])
    turns = np.arctan2(np.sin(np.diff(angles)), np.cos(np.diff(angles)))
    from_each_start = np.cumsum((turns * near[1:])[::-1])[::-1]
    return bool(from_each_start.size and np.abs(from_each_start).max() >= 2 * np.pi)


def replay_seen(
    env, params, start_state, actions: np.ndarray, target: int, position, settings: OOITestSettings
) -> bool:
    """Whether the executed ``actions`` from ``start_state`` reproduce a test whose frames an oracle
    judged: the replay ends at the recorded ``position`` and shows ``target`` with at least
    ``trigger_pixels`` pixels within the test's last ``max(test_steps, test_budget)`` steps."""
    positions, pixels = _replay(env, params, start_state, actions, target)
    window = max(settings.test_steps, settings.test_budget) + 1
    return bool(
        np.allclose(positions[-1], position, atol=1e-3)
        and (pixels[-window:] >= settings.trigger_pixels).any()
    )


def host_episode(
    env,
    seed: int,
    actions,
    settings: OOITestSettings,
    ooi_pos,
    judge=None,
    test_actions=None,
    walk_turn_deg: float | None = None,
) -> list[dict]:
    """Object tests over one episode of a bridged game (a host env:
    :class:`envs_bridge.unreal.UnrealEnv`), the tester's bookkeeping the same jitted
    :func:`tester_transition` as on device: game 0 plays ``actions`` from ``env.reset(seed)``; while
    a test runs, ``test_actions`` when given, else with ``walk_turn_deg`` the scripted 360° walk
    steered by the game's position and yaw (:func:`jgtest.envs.park_experts.walk_around`, a turn key
    turning ``walk_turn_deg``), else ``actions``.

    Returns:
      one ``event`` per step (:func:`ooi_step`'s), as numpy values, with the ``executed`` action.
    """
    transition = _host_transition(settings)
    ooi_pos = jnp.asarray(ooi_pos, jnp.float32)
    tester = init_tester(int(ooi_pos.shape[0]), env.num_actions)
    _, info = env.reset(seed)
    events = []
    for t, action in enumerate(np.asarray(actions, np.int32)):
        position = jnp.asarray(info["telemetry"].position[0], jnp.float32)
        if test_actions is not None:
            test_action = int(test_actions[t])
        elif walk_turn_deg is not None:
            test_action = int(
                walk_around(
                    position, info["yaw"][0], ooi_pos[jnp.maximum(tester.target, 0)], walk_turn_deg
                )
            )
        else:
            test_action = action
        executed = int(executed_action(tester, jnp.int32(action), jnp.int32(test_action)))
        _, _, _, truncated, info = env.step(np.array([executed]))
        if truncated[0]:
            raise RuntimeError(
                f"{env.name}: the episode ended at step {t} (faults: {env.faults[-3:]})"
            )
        position = jnp.asarray(info["telemetry"].position[0], jnp.float32)
        tester, event = transition(
            tester, jnp.int32(executed), position, ooi_pos, host_objects(info["objects"]), judge
        )
        events.append({**jax.device_get(event), "executed": executed})
    return events


def host_objects(objects: dict) -> dict:
    """Game 0's objects of a host game's batched ``info["objects"]`` as the tester's jax arrays."""
    return {
        k: jnp.asarray(v[0]).astype(jnp.bool_ if k == "visible" else jnp.int32)
        for k, v in objects.items()
    }


@functools.lru_cache(maxsize=8)
def _host_transition(settings: OOITestSettings):
    return jax.jit(
        lambda tester, executed, position, ooi_pos, objects, judge: tester_transition(
            settings, tester, executed, position, ooi_pos, objects, judge
        )
    )
