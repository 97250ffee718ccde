"""Object-testing campaigns over a bridged game: PPGTA's trained models driving an Unreal game through UnrealCV.

A host game (:class:`envs_bridge.unreal.UnrealEnv`) cannot run inside ``jit``, so the
campaign is a host loop over one jitted step of the agent: the explorer (``"ppgta"``: the
path-following imitation policy PPGTA's actor starts from, §V-D; ``"random"``: uniform
actions) acts on the FE's features of the last K frames; when the game's objects
(``info["objects"]``, from the object mask) show an untested one with ``trigger_pixels``
pixels, the learned 360° behaviour runs for ``test_steps`` steps and is judged by JS
(§VI-B), the tester's bookkeeping being the on-device one
(:func:`jgtest.methods.ooi_testing.tester_transition`); the texture oracle reads the test's
frames. Each flagged object is a ``texture`` bug record, written the moment its test ends.

A fault of the wire ends the game's episode (the bridge records it in ``env.faults``); the
campaign goes on with the next episode and keeps every record already written; the faults
are listed in ``summary.json``. The explorer does not learn here (PPO on the device twin is
:mod:`jgtest.methods.ppgta`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.envs.wrappers import od_mask
from jgtest.methods.ooi_testing import TESTING, OOITestSettings, executed_action, init_tester, tester_transition
from jgtest.report.records import BugRecord, BugRecordWriter, jsonable

AGENTS = ("ppgta", "random")


def _agent_step(models, settings: OOITestSettings, agent: str):
    """The jitted step: ``(loop, frame, objects, position, ooi_pos, key) -> (loop, executed, event, bug_prob)``
    given the game's new frame and objects after the previous action."""
    policy = models.imitation_config().network
    fe = {"params": {"fe": models.policies["path"]["params"]["fe"]}}
    path, circle = models.policies["path"], models.policies["circle"]
    judge = (models.js["circle"]["reference"], models.js["circle"]["threshold"])
    encode = lambda frame, box: policy.apply(fe, od_mask(frame, box)[None], method="encode")[0]
    roll = lambda window, features: jnp.concatenate([window[1:], features[None]])

    @jax.jit
    def step(loop, frame, objects, key):
        k_act, k_test = jax.random.split(key)
        tester = loop["tester"]
        largest = jnp.argmax(jnp.where(objects["visible"], objects["pixels"], -1))
        od_box = jnp.where(objects["visible"][largest], objects["box"][largest], 0)
        window = roll(loop["window"], encode(frame, od_box))
        test_window = roll(loop["test_window"], encode(frame, tester.box))
        logits, _, carry = policy.apply(path, window[None], loop["carry"], method="step")
        test_logits, _, test_carry = policy.apply(circle, test_window[None], loop["test_carry"], method="step")
        explore = jax.random.categorical(k_act, logits[0]) if agent == "ppgta" else jax.random.randint(k_act, (), 0, logits.shape[-1])
        executed = executed_action(tester, explore, jax.random.categorical(k_test, test_logits[0]))
        return {**loop, "window": window, "test_window": test_window, "carry": carry, "test_carry": test_carry}, executed

    @jax.jit
    def observe(loop, executed, frame, objects, position, ooi_pos):
        tester, event = tester_transition(settings, loop["tester"], executed, position, ooi_pos, objects, judge)
        started = (tester.mode == TESTING) & (tester.steps == 0)
        test_window = jnp.where(started, encode(frame, tester.box)[None], loop["test_window"])
        test_carry = jnp.where(started, 0.0, loop["test_carry"])
        bug_prob = models.oracle.probabilities(frame[None], event["target_box"][None])[0]
        return {**loop, "tester": tester, "test_window": test_window, "test_carry": test_carry}, event, bug_prob

    def fresh(num_oois):
        features = jnp.zeros((models.config.k, policy.cnn_dense))
        return {"tester": init_tester(num_oois, policy.num_actions), "window": features, "test_window": features,
                "carry": policy.initial_carry(1), "test_carry": policy.initial_carry(1)}  # fmt: skip

    return fresh, step, observe


def run_bridged(env, models, out_dir: str | Path, agent: str = "ppgta", episodes: int = 1, episode_steps: int = 2000, seed: int = 0,
                trigger_pixels: int = 100) -> dict:  # fmt: skip
    """Runs a campaign of ``episodes`` episodes of game 0 of ``env`` (module docstring) in ``out_dir``:
    ``bugs.jsonl`` (each flagged object as its test ends), ``summary.json`` (objects tested, their
    outcomes and oracle verdicts, the wire's faults)."""
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS} over a bridged game, got {agent!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = OOITestSettings(trigger_pixels=trigger_pixels, test_steps=models.config.circle_steps)
    fresh, step, observe = _agent_step(models, settings, agent)
    to_jax = lambda objects: {k: jnp.asarray(v[0]).astype(jnp.bool_ if k == "visible" else jnp.int32) for k, v in objects.items()}
    start, outcomes, key, played = time.perf_counter(), {}, jax.random.key(seed), []
    with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
        for episode in range(episodes):
            try:
                frames, info = env.reset(seed + episode)
            except RuntimeError:  # the bridge's BridgeError: no game answered (its fault is in env.faults)
                continue
            catalogue = env.objects[0]
            if catalogue is None:
                continue
            ooi_pos = jnp.asarray(catalogue["location"][:, :2] / env.units_per_cell, jnp.float32)
            loop = fresh(len(catalogue["names"]))
            faults_before = len(env.faults)
            loop = {**loop, "tester": loop["tester"].replace(tested=jnp.asarray([o in outcomes for o in range(len(catalogue["names"]))]))}
            evidence, actions = {}, []
            played.append(0)
            for t in range(episode_steps):
                key, k = jax.random.split(key)
                loop, executed = step(loop, jnp.asarray(frames[0]), to_jax(info["objects"]), k)
                actions.append(int(executed))
                frames, _, _, truncated, info = env.step(np.array([int(executed)]))
                if len(env.faults) > faults_before:
                    break  # a fault ended the episode; what is written stays
                played[-1] += 1
                position = jnp.asarray(info["telemetry"].position[0], jnp.float32)
                loop, event, bug_prob = observe(loop, executed, jnp.asarray(frames[0]), to_jax(info["objects"]), position, ooi_pos)
                event = jax.device_get(event)
                target = int(event["target"])
                if target >= 0 and event["target_pixels"] >= models.oracle.config.min_pixels:
                    evidence.setdefault(target, []).append(np.asarray(bug_prob))
                done = int(event["done"])
                if done >= 0 and done not in outcomes:
                    probs = np.asarray(evidence.get(done, np.zeros((0, 3))))
                    flagged, bug, score = models.oracle.judge(probs, np.ones(len(probs), bool))
                    outcomes[done] = {"success": bool(event["success"]), "flagged": flagged, "episode": episode, "step": t}
                    if flagged:
                        writer.write(BugRecord(
                            kind="texture", game=env.name, bug_id=done, step=t, episode=episode, seed=seed, env_index=0,
                            actions=tuple(actions), position=tuple(float(v) for v in info["telemetry"].position[0]),
                            wall_s=round(time.perf_counter() - start, 3),
                            detail=f"{agent} over the bridge: texture oracle flags object {catalogue['names'][done]} (P(bug) {score:.2f})",
                        ))  # fmt: skip
    summary = {"game": env.name, "agent": agent, "episodes": episodes, "steps_played": played, "ooi_tested": len(outcomes),
               "ooi_success": sum(o["success"] for o in outcomes.values()), "texture_flagged": sum(o["flagged"] for o in outcomes.values()),
               "outcomes": {str(k): v for k, v in sorted(outcomes.items())}, "faults": list(env.faults),
               "wall_s": round(time.perf_counter() - start, 2)}  # fmt: skip
    (out_dir / "summary.json").write_text(json.dumps(jsonable(summary), indent=2))
    return summary
