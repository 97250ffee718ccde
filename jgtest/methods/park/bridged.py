"""PPGTA, Inspector or the random agent, trained on ``ParkWorld-v0``, testing an Unreal game.

A game behind UnrealCV cannot run inside ``jit``: :func:`run_bridged` is a host loop over one
jitted step of the agent (:class:`BridgedAgent`); PPGTA's texture oracle reads every test's frames.

* chosen: the agents do not learn over the bridge, because their learning is the device campaigns';
* chosen: a fault of the wire ends its episode only; the campaign goes on and keeps its records.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.checkpoint import config_from_dict
from jgtest.envs.park import NUM_ACTIONS, EnvParams
from jgtest.envs.park_experts import walk_around
from jgtest.files import write_json_atomically
from jgtest.frames import od_mask
from jgtest.methods.park import inspector, ppgta
from jgtest.methods.park.campaign import restore_carry
from jgtest.methods.park.ooi_testing import (
    TESTING,
    OOITestSettings,
    executed_action,
    host_objects,
    init_tester,
    tester_transition,
)
from jgtest.records import BugRecord, BugRecordWriter, records_to_resume

AGENTS = ("ppgta", "inspector", "random")
#: The campaign's checkpoint in its run directory (:func:`run_bridged`).
PROGRESS = "progress.json"


def device_run(run_dir: str | Path, models=None):
    """``(campaign, carry)``: a device campaign (PPGTA's or Inspector's) rebuilt from its run
    directory's ``config.json`` and its learner restored from the last checkpoint, to drive a
    bridged game (:func:`run_bridged`'s ``trained``). A PPGTA run needs the ``models`` it was
    trained with.

    Raises:
      ValueError: a run of another agent, no checkpoint, or models other than the run's.
    """
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise ValueError(f"{run_dir}: no config.json (not a campaign's run directory)")
    saved = json.loads(path.read_text())
    method = saved.get("method")
    if method == "inspector":
        campaign = inspector.InspectorCampaign(config_from_dict(inspector.InspectorConfig, saved))
    elif method == "ppgta":
        config = config_from_dict(ppgta.PPGTAConfig, saved)
        if models is None or models.config != config.models:
            raise ValueError(
                f"{run_dir}: a PPGTA run drives the game with the models it was trained with (its "
                "config.json's 'models')"
            )
        campaign = ppgta.PPGTACampaign(config, models)
    else:
        raise ValueError(
            f"{run_dir}: a {method!r} run has no trained explorer (a ppgta or inspector campaign "
            "has)"
        )
    return campaign, restore_carry(campaign, run_dir)


def _ppgta_campaign(models, detector: str):
    """A PPGTA campaign's pieces (networks, OD boxes, detector view) without a run: its explorer is
    the path policy."""
    return ppgta.PPGTACampaign(
        ppgta.PPGTAConfig(
            episodes=1, num_envs=1, rollout_steps=2000, detector=detector, models=models.config
        ),
        models,
    )


class BridgedAgent:
    """The jitted pieces of one agent over a bridged game.

    * ``"ppgta"``: the explorer acts on the last K frames, OD-masked around the largest object in
      view (§IV-C): the PPO-trained actor of a device campaign (``trained``), or without one the
      path-following imitation policy it starts from (§V-D); its tests are the learned 360°
      behaviour, run ``test_steps`` steps and judged by JS (§VI-B); with ``detector="learned"`` the
      tester and the OD mask see the detector's objects instead of the object mask's;
    * ``"inspector"``: the PPO policy a device Inspector campaign learned (``trained`` is required:
      Inspector learns only on the twin), on the raw frames; its tests are the scripted 360° walk
      (:func:`jgtest.envs.park_experts.walk_around`), steered by the camera's location and yaw,
      judged by completing the turn;
    * ``"random"``: uniform actions and the scripted walk, as on the twin.

    The tester's bookkeeping is the device one
    (:func:`jgtest.methods.park.ooi_testing.tester_transition`): an untested object the game's
    object mask (``info["objects"]``) shows with ``trigger_pixels`` pixels starts its test.

    ``fresh(num_oois) -> loop``; ``act(loop, frame, objects, position, yaw, ooi_pos, key) -> (loop,
    executed action)`` before a step; ``observe(loop, executed, frame, objects, position, ooi_pos)
    -> (loop, event, bug_prob)`` after it (``event`` as :func:`ooi_testing.ooi_step`'s, ``bug_prob``
    the oracle's for the object under test in the new frame).

    Args:
      models: PPGTA's models (:func:`jgtest.methods.park.models.load_models`): its policies, and the
        texture oracle every agent's tests are read by.
      agent: ``"ppgta"``, ``"inspector"`` or ``"random"``.
      trained: :func:`device_run` of a device campaign of that agent (Inspector's is required).
      detector: what PPGTA's tester sees, ``"ground-truth"`` (the object mask) or ``"learned"``.
      trigger_pixels: pixels an untested object must show to start its test.
      turn_deg: how far a turn key turns the camera (the scripted walk steers by it).

    Raises:
      ValueError: an unknown agent, Inspector without its run, a run of another agent, the learned
        detector for an agent other than PPGTA or other than the run's.
    """

    def __init__(
        self,
        models,
        agent: str,
        trained=None,
        detector: str = "ground-truth",
        trigger_pixels: int = 60,
        turn_deg: float = EnvParams.turn_deg,
    ):
        if agent not in AGENTS:
            raise ValueError(f"agent must be one of {AGENTS} over a bridged game, got {agent!r}")
        if detector != "ground-truth" and agent != "ppgta":
            raise ValueError(
                f"the learned detector is PPGTA's; {agent} sees the object mask "
                "(detector='ground-truth')"
            )
        if agent == "inspector" and trained is None:
            raise ValueError(
                "Inspector drives a bridged game with the policy a device campaign trained: pass "
                "trained=device_run(DIR)"
            )
        expected = {"ppgta": ppgta.PPGTACampaign, "inspector": inspector.InspectorCampaign}.get(
            agent
        )
        if trained is not None and not isinstance(trained[0], expected or ()):
            raise ValueError(
                f"the trained run is a {type(trained[0]).__name__}, not a {agent} campaign"
            )
        self.models, self.agent, self.turn_deg, self.detector, self.trained = (
            models,
            agent,
            turn_deg,
            detector,
            trained is not None,
        )
        self.campaign, learner = trained if trained is not None else (None, None)
        # a trained run tests as it was trained; otherwise the paper's settings with
        # ``trigger_pixels``
        fresh = OOITestSettings(
            trigger_pixels=trigger_pixels,
            test_steps=models.config.circle_steps if agent == "ppgta" else 0,
        )
        self.settings = self.campaign.config.tests if trained is not None else fresh
        if agent == "ppgta":
            if self.campaign is None:
                self.campaign = _ppgta_campaign(models, detector)
            elif detector != self.campaign.config.detector:
                raise ValueError(
                    f"the trained PPGTA run saw objects with the {self.campaign.config.detector} "
                    f"detector, not {detector}"
                )
            self.explorer = (
                learner["ppo"][0] if learner is not None else {"actor": models.policies["path"]}
            )  # act() reads the actor
        elif agent == "inspector":
            self.explorer = learner["ppo"].params
        self.act = jax.jit(self._act)
        self.observe = jax.jit(self._observe)

    @property
    def frame_shape(self) -> tuple[int, ...] | None:
        """The frames the agent's networks take (the device twin's), or ``None`` (random: any
        size)."""
        return (
            None
            if self.campaign is None
            else tuple(self.campaign.env.observation_space(self.campaign.params).shape)
        )

    def check_game(self, env, frames: np.ndarray) -> None:
        """Refuses a game whose actions or frames differ from the twin the agent was trained on."""
        if env.num_actions != NUM_ACTIONS:
            raise ValueError(
                f"{env.name}: the agents play ParkWorld's {NUM_ACTIONS} keys; the game's key map "
                f"has {env.num_actions}"
            )
        if self.frame_shape is not None and tuple(frames.shape[1:]) != self.frame_shape:
            raise ValueError(
                f"{env.name}: the camera gives {tuple(frames.shape[1:])} frames; {self.agent}'s "
                f"networks take {self.frame_shape} "
                "(set the camera's resolution to the twin's)"
            )

    def fresh(self, num_oois: int) -> dict:
        tester = init_tester(num_oois, NUM_ACTIONS)
        if self.agent != "ppgta":
            return {"tester": tester}
        policy, k = self.campaign.policy, self.campaign.k
        zeros = policy.initial_carry(1)
        return {
            "tester": tester,
            "window": jnp.zeros((k, *self.frame_shape), jnp.uint8),
            "test_window": jnp.zeros((k, policy.cnn_dense)),
            "carry": zeros,
            "test_carry": zeros,
        }

    # ----- pieces ------------------------------------------------------------
    def _see(self, frame, objects):
        """The tester's objects in ``frame``: the mask's, or the detector's named after them."""
        see = self.campaign.see if self.agent == "ppgta" else None
        return objects if see is None else see(frame, {"objects": objects})

    def _od_box(self, frame, objects):
        """The explorer's OD-mask box: the largest object the agent sees (empty when none)."""
        if self.campaign.config.detector == "learned":
            return self.campaign.od_boxes(frame[None], None)[0]
        largest = jnp.argmax(jnp.where(objects["visible"], objects["pixels"], -1))
        return jnp.where(objects["visible"][largest], objects["box"][largest], 0)

    def _test_features(self, masked):
        """The test behaviour's FE features of a ``masked`` frame (OD-masked as the explorer's, as
        its demonstrations were)."""
        return self.campaign.encode("circle", masked[None])[0]

    def _act(self, loop, frame, objects, position, yaw, ooi_pos, key):
        k_act, k_test = jax.random.split(key)
        tester = loop["tester"]
        if self.agent == "random":
            explore = jax.random.randint(k_act, (), 0, NUM_ACTIONS)
        elif self.agent == "inspector":
            explore = self.campaign.ppo.act(self.explorer, frame[None], k_act).action[0]
        else:
            policy, roll = (
                self.campaign.policy,
                lambda window, features: jnp.concatenate([window[1:], features[None]]),
            )
            masked = od_mask(frame, self._od_box(frame, objects))
            window, test_window = (
                roll(loop["window"], masked),
                roll(loop["test_window"], self._test_features(masked)),
            )
            logits, carry = self.campaign.network.act(self.explorer, window[None], loop["carry"])
            carry = jnp.where(
                tester.mode == TESTING, loop["carry"], carry
            )  # a test's step: the explorer's memory waits (PPGTACampaign's)
            test_logits, _, test_carry = policy.apply(
                self.models.policies["circle"], test_window[None], loop["test_carry"], method="step"
            )
            explore = jax.random.categorical(k_act, logits[0])
            loop = {
                **loop,
                "window": window,
                "test_window": test_window,
                "carry": carry,
                "test_carry": test_carry,
            }
            return loop, executed_action(
                tester, explore, jax.random.categorical(k_test, test_logits[0])
            )
        walk = walk_around(position, yaw, ooi_pos[jnp.maximum(tester.target, 0)], self.turn_deg)
        return loop, executed_action(tester, explore, walk)

    def _observe(self, loop, executed, frame, objects, position, ooi_pos):
        judge = (
            (self.models.js["circle"]["reference"], self.models.js["circle"]["threshold"])
            if self.agent == "ppgta"
            else None
        )
        tester, event = tester_transition(
            self.settings,
            loop["tester"],
            executed,
            position,
            ooi_pos,
            self._see(frame, objects),
            judge,
        )
        loop = {**loop, "tester": tester}
        if (
            self.agent == "ppgta"
        ):  # a test starts: its window restarts on the object, its memory empty
            started = (tester.mode == TESTING) & (tester.steps == 0)
            loop["test_window"] = jnp.where(
                started,
                self._test_features(od_mask(frame, self._od_box(frame, objects)))[None],
                loop["test_window"],
            )
            loop["test_carry"] = jnp.where(started, 0.0, loop["test_carry"])
        bug_prob = self.models.oracle.probabilities(frame[None], event["target_box"][None])[0]
        return loop, event, bug_prob


def run_bridged(
    env,
    bridged: BridgedAgent,
    out_dir: str | Path,
    episodes: int = 1,
    episode_steps: int = 2000,
    seed: int = 0,
    resume: bool = False,
) -> dict:
    """Runs a campaign of ``episodes`` episodes of game 0 of ``env`` with the agent ``bridged`` in
    ``out_dir``: ``bugs.jsonl`` (each flagged object as its test ends), ``progress.json`` after
    every episode, ``summary.json`` (objects tested, their outcomes and oracle verdicts, the wire's
    faults).

    A fault of the wire ends the game's episode (the bridge records it in ``env.faults``); the
    campaign goes on with the next. The campaign keeps no device state between episodes (its agents
    do not learn; episode ``e`` resets with ``seed + e``, its key ``fold_in(key(seed), e)``), so its
    checkpoint is host data: ``progress.json`` (episodes done, steps played, each tested object's
    outcome, the faults), replaced atomically after every episode. ``resume`` starts at the first
    episode not done; an episode a kill cut short is played again from its start, and a record
    already in ``bugs.jsonl`` is not written twice."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    progress_path = out_dir / PROGRESS
    progress = {"episodes_done": 0, "steps_played": [], "outcomes": {}, "faults": [], "wall_s": 0.0}
    if resume and progress_path.exists():
        progress = json.loads(progress_path.read_text())
    outcomes, played = (
        {int(k): v for k, v in progress["outcomes"].items()},
        progress["steps_played"],
    )
    faults = progress["faults"]  # those of the runs before this one
    written = {r.bug_id for r in records_to_resume(out_dir, resume)}
    start = time.perf_counter() - progress["wall_s"]
    with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
        for episode in range(progress["episodes_done"], episodes):
            played.append(
                _episode(
                    env, bridged, writer, episode, episode_steps, seed, outcomes, written, start
                )
            )
            progress = {
                "episodes_done": episode + 1,
                "steps_played": played,
                "outcomes": {str(k): v for k, v in sorted(outcomes.items())},
                "faults": faults + list(env.faults),
                "wall_s": round(time.perf_counter() - start, 2),
            }
            write_json_atomically(progress_path, progress)
    summary = {
        "game": env.name,
        "agent": bridged.agent,
        "trained": bridged.trained,
        "detector": bridged.detector,
        "episodes": episodes,
        "steps_played": [p for p in played if p is not None],
        "ooi_tested": len(outcomes),
        "ooi_success": sum(o["success"] for o in outcomes.values()),
        "texture_flagged": sum(o["flagged"] for o in outcomes.values()),
        "outcomes": {str(k): v for k, v in sorted(outcomes.items())},
        "faults": faults + list(env.faults),
        "wall_s": round(time.perf_counter() - start, 2),
    }
    write_json_atomically(out_dir / "summary.json", summary)
    return summary


def _episode(
    env, bridged, writer, episode, episode_steps, seed, outcomes, written, start
) -> int | None:
    """Plays episode ``episode`` (``seed + episode``): records each tested object's outcome in
    ``outcomes`` and writes each flagged one not in ``written``; the steps played, ``None`` when the
    game did not restart."""
    models, agent = bridged.models, bridged.agent
    faults_before = len(env.faults)
    try:
        frames, info = env.reset(seed + episode)
    except RuntimeError:  # the bridge's BridgeError: no game answered (its fault is in env.faults)
        return None
    if len(env.faults) > faults_before or env.objects[0] is None:
        return None  # the game did not restart: the next episode tries again
    bridged.check_game(env, frames)
    catalogue = env.objects[0]
    ooi_pos = jnp.asarray(catalogue["location"][:, :2] / env.units_per_cell, jnp.float32)
    loop = bridged.fresh(len(catalogue["names"]))
    loop["tester"] = loop["tester"].replace(
        tested=jnp.asarray([o in outcomes for o in range(len(catalogue["names"]))], bool)
    )
    evidence, actions, played = {}, [], 0
    key = jax.random.fold_in(jax.random.key(seed), episode)
    for t in range(episode_steps):
        key, k = jax.random.split(key)
        position = jnp.asarray(info["telemetry"].position[0], jnp.float32)
        loop, executed = bridged.act(
            loop,
            jnp.asarray(frames[0]),
            host_objects(info["objects"]),
            position,
            jnp.float32(info["yaw"][0]),
            ooi_pos,
            k,
        )
        actions.append(int(executed))
        frames, _, _, truncated, info = env.step(np.array([int(executed)]))
        if len(env.faults) > faults_before or truncated[0]:
            break  # a fault (or the game's episode cap) ended the episode; what is written stays
        played += 1
        position = jnp.asarray(info["telemetry"].position[0], jnp.float32)
        loop, event, bug_prob = bridged.observe(
            loop, executed, jnp.asarray(frames[0]), host_objects(info["objects"]), position, ooi_pos
        )
        event = jax.device_get(event)
        target = int(event["target"])
        if target >= 0 and event["target_pixels"] >= models.oracle.config.min_pixels:
            evidence.setdefault(target, []).append(np.asarray(bug_prob))
        done = int(event["done"])
        if done >= 0 and done not in outcomes:
            probs = np.asarray(evidence.get(done, np.zeros((0, 3))))
            flagged, bug, score = models.oracle.judge(probs, np.ones(len(probs), bool))
            outcomes[done] = {
                "success": bool(event["success"]),
                "walked": bool(event["walked"]),
                "flagged": flagged,
                "episode": episode,
                "step": t,
            }
            if flagged and done not in written:
                writer.write(
                    BugRecord(
                        kind="texture",
                        game=env.name,
                        bug_id=done,
                        step=t,
                        episode=episode,
                        seed=seed,
                        env_index=0,
                        actions=tuple(actions),
                        position=tuple(float(v) for v in info["telemetry"].position[0]),
                        wall_s=round(time.perf_counter() - start, 3),
                        detail=(
                            f"{agent} over the bridge: texture oracle flags object "
                            f"{catalogue['names'][done]} (P(bug) {score:.2f})"
                        ),
                    )
                )
    return played
