"""PPGTA (Abdelfattah, Brown & Zhang): preference-conditioned exploration and learned tests in ``ParkWorld-v0``.

The agent (§IV-C, §V-D, Fig. 1) explores with PPO on the combined reward
``r^c = α·r^p + (1 − α)·r^e``:

* ``r^e`` — the ensemble-variance novelty of the next frame, downsized to 64×64 and OD-masked
  (:class:`jgtest.novelty.RND`, 8 predictors; the FE's convolutions, as the path policy's
  imitation left them, are the fixed backbone shared by target and predictors, §V-D);
* ``r^p = −KL(π^e_{1:t}, π^p_{1:t})`` — the exploration policy against the path-following imitation
  policy, "between action distributions ... till time point t" (§IV-C), each policy carrying its
  memory of the trajectory so far. We read it as the KL between the two policies' distributions of
  the actions 1…t, by the chain rule the sum of the per-step KLs since the episode began
  (``preference="trajectory"``, the default; :func:`jgtest.novelty.trajectory_preference_reward`); a
  test's steps add nothing (they are not the explorer's, below). ``preference="step"`` reads it as the
  current step's ``−KL(π^e_t ‖ π^p_t)`` alone (:func:`jgtest.novelty.preference_reward`), our default
  until the 3-seed comparison showed what it does: the novelty pulled the explorer off the path
  policy's behaviour (its per-step KL rose from 0.003 to 0.19 within 15 episodes, in a 25-episode run
  of campaign seed 2) until, on seeds 0 and 2, from episode 21 on it stood still on a median 80% and
  87% of its steps (20% and 28% in its first 10 episodes) and walked a median 128 and 81 cells an
  episode, against 387–545 in its first 10 (the traces of that comparison's runs). It found little
  after episode 21 and ended at 57.6% and 57.5% of the reachable pathway. With the sum, a step's
  deviation is paid again at every later step (about 1/(1 − γ) = 100 times the per-step weight in
  the return; the sum before a step is not among the critic's inputs, and it adds the same to every
  action's return from that step, so it costs the value's accuracy, not the gradient's direction); the explorer's per-step KL stayed near 0.01, it pressed forward on 83–93% of its steps
  to the end, stood still on a median 26% and 23% of its steps from episode 21 on, and the same two
  seeds reached 91.0% and 87.7% (``benchmarks/results/ppgta_compare_45.json`` for all three seeds);
* ``α`` — adapted every step (:func:`jgtest.novelty.adapt_alpha`: 0.8, −0.05 down to 0.5 while
  ``r^e_t − r^e_{t−1} < −0.1``, +0.1 up to 0.8 when it rises), one α per game, back to 0.8 at
  each episode's start; ``r^e`` is the novelty divided by its running standard deviation, so
  ε = −0.1 is a tenth of its typical spread (the paper does not give r^e's scale).

"For the PPO actor-critic networks, we follow the same architecture of the
imitation learning policy with two different heads ... We also initialize actor
and critic networks using the parameter values of the path-following imitation
learning policy": the actor is a copy of the path policy; the critic a copy
with a one-unit value head in place of the action head. Both read the last K
frames (OD-masked around the largest object in view, as the policies were
trained), and each carries its own global GRU state. Their FE: the paper does
not say whether PPO trains it. Our default keeps the path policy's FE fixed
under both (each imitation policy fine-tuned its own, so the FE is fine-tuned,
before PPO); ``fine_tune_fe=True`` gives each network its own copy for PPO to
train. On seed 0 that copy stalled the explorer: after episode 18 it found
almost nothing new, ending at 28.8% of the reachable pathway and 65 objects
tested over 45 episodes, against 42.0% and 89 with the fixed FE (seed 0 of
``benchmarks/results/ppgta_compare_45.json``);
with one FE shared by actor and critic, and twice the updates, it stalled at 21.2%. PPO's
update reads each step's stored window (its FE features when the FE is fixed, encoded once as the
frames were seen; its frames, re-encoded, when PPO fine-tunes the FE) and restarts from its stored GRU
states (no back-propagation through time across steps).

While a learned test drives the game the explorer does not act, and the paper does not say what its
learner makes of those steps. Ours: they are not the explorer's. PPO skips them (GAE runs over the
explorer's own steps, each bootstrapping from its next one, and the loss masks the rest:
:func:`jgtest.losses.gae`'s ``valid_t``), and the global memories of the actor, the critic and the
path policy (their GRU states) wait through the test; their windows of frames keep rolling, so when
the test hands back they see where it left the player. Otherwise PPO would learn from actions the game
ignored, and a 70-step walk around an object would enter the path-following memory as if the explorer
had walked it. The path policy that gives ``r^p`` and the test
behaviour keep their own fine-tuned FEs, fixed. PPO's hyperparameters are
Inspector's (the paper: "the same PPO hyper-parameter setup as the Inspector's"),
with AdamW, but for the learning rate (:data:`PPGTA_PPO`); one update every ``rollout_steps`` steps of the ``num_envs`` games.
Inspector's paper gives no values; ours are PureJaxRL's Atari ones, whose learning rate, 2.5e-4, is
for a network trained from scratch. Starting from the imitation policy it undid the path following:
on seed 0, with models whose imitation learned the demonstrations' executed (10% random) actions, the
explorer found no new object in the 5 episodes after its first 10 updates, tested 53 objects by episode
18 and covered 39.5% of the reachable pathway, where the imitation policy alone (learning rate 0)
tested 84 and covered 81.8%. PPGTA trains at 2.5e-5, the rate at which RL fine-tunes an
imitation-trained policy (VPT, Baker et al. 2022: 2e-5): 98 objects and 69.1% on those models. With
the imitation learning the experts' intended actions (the default now) but the learner and the memories
still running through tests, seed 0 gave 88 objects by episode 18 and 83.9% at 2.5e-5, 93 and 88.3% for
the imitation alone, 53 and 41.1% at 2.5e-4. With tests' steps left alone (above) and the tests' frames
masked as their demonstrations were (below): 102 and 82.7% at 2.5e-5, 101 and 91.4% for the imitation
alone; success 33.6% and 38.5% of the objects (earlier runs of ``benchmarks/ppgta_explorer_variants.py``;
all of these under the per-step reading of ``r^p``, above). With the defaults (the sum, on the
comparison's seed-0 models; ``benchmarks/results/ppgta_explorer_variants_s0.json``): 133 objects by
episode 18 and 91.0% at 2.5e-5, 106 and 89.5% for the imitation alone, 112 and 79.4% at 2.5e-4;
success 42.5%, 42.5% and 38.5%. PPO at 2.5e-5 is what adds the 27 objects by episode 18.
The 3-seed comparison (``benchmarks/results/ppgta_compare_45.json``: the defaults, one set of models
trained with seed 0 for campaign seeds 0–2) gives 88.7% of the reachable pathway (91.0%, 87.3%,
87.7%), 119.0 objects tested by episode 18 (133, 116, 108) and 42.4% success, against the paper's
80%, 192 and 71%; under the per-step reading, 65.3% (57.6%, 80.9%, 57.5%), 103.7 and 31.4%. The
comparison before that, run on another machine and install with the same training code (and the
360° imitation's shorter patience), gave 79.9%, 103.7 and 36.7%. Its models were not the ones this
code trains here (its path imitation stopped after 22 epochs, here after 23): XLA's floats differ
between CPUs and library releases, and learning amplifies them. The random agent, which learns
nothing, gave the same figures on both. On one machine and install a run repeats to the digit.

When an object of interest shows ``trigger_pixels`` pixels — from the renderer's ground
truth or from the learned detector (``detector="learned"``,
:func:`jgtest.vision.detector.detected_objects`) — the **learned 360° test
behaviour** (the circle imitation policy, its own memory reset) runs for ``test_steps`` steps (the demonstrations' length) and
its outcome is judged by the JS divergence of its executed actions to all the
demonstrations' (§VI-B, the threshold from :mod:`jgtest.methods.park.models`). The
texture oracle (:mod:`jgtest.oracles.texture`) reads the test's frames. The test policy sees its
frames OD-masked as its demonstrations were (:mod:`jgtest.agents.imitation`): around the largest object
in view, the explorer's mask, which is not always the object under test (a nearer object, or the
target out of view on a turn). Masking around the target, an input it never trained on, greyed the
whole frame whenever the target left the view, where the demonstrations showed the objects around.
The paper masks around "the OOI under test" (§IV-A). A circle policy retrained and played that way (the
target's box, the frame grey while it is out of view; from seed 0's circle policy, 100 tests of each
kind of ``benchmarks/ppgta_test_policy.py``'s starts) passed as often from 2–3 cells (70% against
69%) and less often from 3–4 (47% against 65%), so the explorer's mask stays. A failed test has lost
its object, whichever object the mask shows: it presses forward on 48–58% of its steps and sees the
object on 15–23% of them, where a passed one sees it on 86–96%
(``benchmarks/results/ppgta_test_policy_s0.json``; 71–73%, 9–17% and 80–92% on models whose imitation
stopped with a patience of 5, :mod:`jgtest.methods.park.models`). The test samples its actions, as the
explorer does. Played greedily (its most likely action at every step; the same models and starts, a
scratch run) it passed 79%, 63% and 61% of the near, farther and wider tests, against 72%, 61% and 66%
sampled: no better.

The host loop, files, checkpoints and summary are :mod:`jgtest.methods.park.campaign`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from jgtest.agents import ppo
from jgtest.checkpoint import strongly_typed
from jgtest.envs.registration import make
from jgtest.envs.wrappers import od_mask
from jgtest.methods.park.campaign import oracle_outputs, run_campaign
from jgtest.methods.park.inspector import PAPER_PPO
from jgtest.methods.park.models import PPGTAModels, PPGTAModelsConfig
from jgtest.methods.park.ooi_testing import TESTING, OOITestSettings, init_tester, ooi_step
from jgtest.nets.recurrent import ImitationPolicy
from jgtest.novelty import RND, AlphaSchedule, RNDConfig, adapt_alpha, combined_reward, preference_reward, trajectory_preference_reward
from jgtest.rollout import episode_key, reset_key
from jgtest.seeds import check_seed
from jgtest.types import Transition
from jgtest.vision.detector import detected_objects

DETECTORS = ("ground-truth", "learned")
PREFERENCES = ("step", "trajectory")
#: PPGTA's PPO: Inspector's (:data:`jgtest.methods.park.inspector.PAPER_PPO`, AdamW) with the learning rate at which RL
#: fine-tunes a policy pre-trained by imitation (VPT, Baker et al. 2022: 2e-5), a tenth of PureJaxRL's 2.5e-4 (module docstring).
PPGTA_PPO = dataclasses.replace(PAPER_PPO, learning_rate=2.5e-5)


@dataclasses.dataclass(frozen=True)
class PPGTAConfig:
    """One PPGTA campaign (module docstring; the rest as :class:`jgtest.methods.park.inspector.InspectorConfig`).

    Attributes:
      detector: ``"ground-truth"`` (the renderer's objects) or ``"learned"`` (the trained detector).
      test_steps: steps of a learned test (0: the models' ``circle_steps``).
      rnd: the novelty (8 predictors, their variance; its backbone is the FE's convolutions, whatever ``channels`` it gives).
      rnd_updates: the predictors' AdamW steps after each rollout (4: the paper gives no schedule for its ensemble,
        and the comparison's figures were measured with 4; Inspector's, one pass over the rollout's frames, is 16).
      hparams: PPO's (:data:`PPGTA_PPO`).
      fine_tune_fe: whether PPO fine-tunes the actor's and the critic's FEs (each their own copy) or
        both read the path policy's, fixed (the default; module docstring).
      preference: ``r^p``'s reading (module docstring): ``"trajectory"`` (the default), the KL of the
        episode's actions so far, the sum of its per-step KLs; ``"step"``, the current step's KL.
      alpha: α's schedule.
      models: the learned models' settings (:class:`jgtest.methods.park.models.PPGTAModelsConfig`).
    """

    episodes: int = 45
    num_envs: int = 5
    episode_steps: int = 2000
    rollout_steps: int = 200
    seed: int = 0
    detector: str = "ground-truth"
    trigger_pixels: int = 60
    test_steps: int = 0
    rnd: RNDConfig = RNDConfig(members=8, reward="variance", shared_backbone=True)
    rnd_updates: int = 4
    fine_tune_fe: bool = False
    preference: str = "trajectory"
    alpha: AlphaSchedule = AlphaSchedule()
    hparams: ppo.PPOHyperparams = PPGTA_PPO
    models: PPGTAModelsConfig = PPGTAModelsConfig()

    def __post_init__(self):
        check_seed(self.seed)
        if self.preference not in PREFERENCES:
            raise ValueError(f"preference must be one of {PREFERENCES}, got {self.preference!r}")
        if self.detector not in DETECTORS:
            raise ValueError(f"detector must be one of {DETECTORS}, got {self.detector!r}")
        for name in ("episodes", "num_envs", "episode_steps", "rollout_steps", "rnd_updates", "trigger_pixels"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.test_steps < 0:
            raise ValueError(f"test_steps must be non-negative, got {self.test_steps}")
        if self.episodes % self.num_envs:
            raise ValueError(f"episodes ({self.episodes}) must be a multiple of num_envs ({self.num_envs})")
        if self.episode_steps % self.rollout_steps:
            raise ValueError(f"rollout_steps ({self.rollout_steps}) must divide episode_steps ({self.episode_steps})")
        if self.rnd.reward != "variance" or not self.rnd.shared_backbone:
            raise ValueError("PPGTA's novelty is the ensemble variance over the FE backbone (rnd.reward='variance', shared_backbone=True)")

    @property
    def rounds(self) -> int:
        return self.episodes // self.num_envs

    @property
    def game_kwargs(self) -> dict:
        return self.models.game_kwargs

    @property
    def tests(self) -> OOITestSettings:
        return OOITestSettings(trigger_pixels=self.trigger_pixels, test_steps=self.test_steps or self.models.circle_steps)


@dataclasses.dataclass(frozen=True)
class ExplorerNetwork:
    """The actor and the critic, each the imitation policy's network with its own head, on stored inputs:
    ``obs = {"frames" uint8[..., K, H, W, 3] (OD-masked), "carry_actor" [..., G], "carry_critic" [..., G]}``;
    what :func:`jgtest.agents.ppo.make_update` calls. With ``fe`` (``{"fe": parameters}``) both read that
    fixed FE and their parameters hold none, and ``obs`` may hold the frames' features in their place
    (``"features" [..., K, F]``, encoded once when the frames were seen, not again in every epoch of every
    update); without, each has its own FE among its parameters, trained with the rest."""

    actor: ImitationPolicy
    critic: ImitationPolicy
    fe: dict | None = None

    def act(self, params, frames, carry):
        """The actor alone (what a bridged game's explorer plays): ``(logits [B, A], next carry)`` from
        ``frames [B, K, H, W, 3]``."""
        return self._head(self.actor, params["actor"], self._encode(self.actor, params["actor"], frames), carry)

    def step(self, params, obs):
        """``(logits, value, next actor carry, next critic carry)``."""
        flat = lambda x, keep: x.reshape(-1, *x.shape[x.ndim - keep :])
        if "features" in obs:  # the fixed FE's, encoded when the frames were seen
            lead, features = obs["features"].shape[:-2], flat(obs["features"], 2)
            features_critic = features
        else:
            lead, frames = obs["frames"].shape[:-4], flat(obs["frames"], 4)
            features = self._encode(self.actor, params["actor"], frames)
            # each its own FE; else the fixed one encodes the frames once for both
            features_critic = features if self.fe is not None else self._encode(self.critic, params["critic"], frames)
        logits, carry_a = self._head(self.actor, params["actor"], features, flat(obs["carry_actor"], 1))
        value, carry_c = self._head(self.critic, params["critic"], features_critic, flat(obs["carry_critic"], 1))
        back = lambda x: x.reshape(*lead, *x.shape[1:])
        return back(logits), back(value[:, 0]), back(carry_a), back(carry_c)

    def apply(self, params, obs):
        logits, value, _, _ = self.step(params, obs)
        return logits, value

    def _encode(self, network: ImitationPolicy, params, frames):
        """``[B, K, F]``: the frames through the network's own FE, or the fixed one."""
        return network.apply(params if self.fe is None else {"params": self.fe}, frames, method="encode")

    @staticmethod
    def _head(network: ImitationPolicy, params, features, carry):
        out, _, carry = network.apply(params, features, carry, method="step")
        return out, carry


def explorer_params(path_policy: dict, critic: ImitationPolicy, key, fine_tune_fe: bool) -> dict:
    """Actor and critic initialised from the path-following policy (§V-D): the actor is its copy, the
    critic its copy with a zero one-unit value head; their FE with them when PPO fine-tunes it."""
    actor = path_policy if fine_tune_fe else {"params": {k: v for k, v in path_policy["params"].items() if k != "fe"}}
    features = jnp.zeros((1, 1, critic.cnn_dense))
    fresh = critic.init(key, features, critic.initial_carry(1), method="step")["params"]
    head = jax.tree.map(jnp.zeros_like, fresh["head"])
    return {"actor": actor, "critic": {"params": {**actor["params"], "head": head}}}


class PPGTACampaign:
    """The jitted pieces of a PPGTA campaign (:mod:`jgtest.methods.park.campaign`)."""

    def __init__(self, config: PPGTAConfig, models: PPGTAModels):
        self.config = c = config
        self.models = models
        self.oracle = models.oracle
        self.env, self.params = make("ParkWorld-v0", **c.game_kwargs, max_steps_in_episode=c.episode_steps)
        im = models.imitation_config(self.env.num_actions)
        self.k = im.k
        self.policy = im.network
        fixed_fe = None if c.fine_tune_fe else {"fe": models.policies["path"]["params"]["fe"]}
        self.network = ExplorerNetwork(self.policy, im.network.clone(num_actions=1), fixed_fe)
        channels, kernels, strides = (tuple(x) for x in zip(*c.models.cnn_layers))
        self.rnd = RND(dataclasses.replace(c.rnd, channels=channels, kernels=kernels, strides=strides))  # the FE's convolutions
        self.ppo_config = ppo.PPOConfig(game="ParkWorld-v0", num_envs=c.num_envs, num_steps=c.rollout_steps,
                                        total_timesteps=c.episodes * c.episode_steps, num_evals=1)  # fmt: skip
        self.update = ppo.make_update(self.ppo_config, self.network)
        self.init = jax.jit(self._init)  # compiled: eager initialisation dispatches op by op (seconds on CPU)
        self.start_round = jax.jit(lambda carry, round_index: strongly_typed(self._start_round(carry, round_index)))  # typed as a restored round
        self.rollout = jax.jit(self._rollout)

    # ----- pieces ------------------------------------------------------------
    def encode(self, behaviour: str, masked):
        """The ``behaviour`` imitation policy's FE features ``[N, F]`` of OD-masked frames ``[N, H, W, 3]``."""
        return self.policy.apply(self.models.policies[behaviour], masked, method="encode")

    @property
    def see(self):
        """The tester's view of a new frame (``ooi_step``'s ``see``): the learned detector's objects, or
        ``None`` for the renderer's ground truth."""
        if self.config.detector == "ground-truth":
            return None
        detector = self.models.detector
        return lambda frame, info: detected_objects(jax.tree.map(lambda x: x[0], detector.detect(frame[None])), info["objects"])

    def od_boxes(self, frames, info):
        """``[N, 4]``: each new frame's OD-mask box for the explorer (the largest object in view, or the
        detector's best detection; empty when none)."""
        if self.config.detector == "ground-truth":
            return jnp.where(info["od_visible"][:, None], info["od_box"], 0)
        detections = self.models.detector.detect(frames)
        best = jnp.argmax(jnp.where(detections["valid"], detections["score"], -1.0), axis=1)
        box = jnp.take_along_axis(detections["box"], best[:, None, None], axis=1)[:, 0]
        return jnp.where(detections["valid"].any(axis=1)[:, None], box, 0)

    def _explorer_view(self, frames_window, path_window) -> dict:
        """What the explorer's ``obs`` holds of its last K frames: with the path policy's FE fixed under
        both networks, that FE's features (the path policy's window, the same encoding); else the frames,
        for the networks' own FEs to encode."""
        return {"features": path_window} if self.network.fe is not None else {"frames": frames_window}

    def _init(self, key) -> dict:
        c, n = self.config, self.config.num_envs
        k_critic, k_rnd = jax.random.split(key)
        params = explorer_params(self.models.policies["path"], self.network.critic, k_critic, c.fine_tune_fe)
        path_fe = self.models.policies["path"]["params"]["fe"]
        rnd_state = self.rnd.init(k_rnd, backbone={"params": {k: v for k, v in path_fe.items() if k != "dense"}})
        testers = jax.vmap(lambda _: init_tester(self.env.num_oois, self.env.num_actions))(jnp.arange(n))
        # α typed float32: a weakly typed one would make start_round compile again for the next rounds' carry
        return {"ppo": (params, ppo.optimizer(c.hparams).init(params), jnp.int32(0)), "rnd": rnd_state, "testers": testers,
                "alpha": jnp.full((n,), c.alpha.start, jnp.float32), "r_e_last": jnp.zeros((n,)), "kl_so_far": jnp.zeros((n,))}  # fmt: skip

    def _start_round(self, carry: dict, round_index) -> dict:
        c, n = self.config, self.config.num_envs
        keys = jax.vmap(lambda i: reset_key(episode_key(c.seed, i, round_index)))(jnp.arange(n))
        frames, states = jax.vmap(self.env.reset_env, in_axes=(0, None))(keys, self.params)
        _, info = jax.vmap(self.env.observe, in_axes=(0, None))(states, self.params)
        masked = jax.vmap(od_mask)(frames, self.od_boxes(frames, info))
        first = lambda x: jnp.repeat(x[:, None], self.k, axis=1)  # the first frame repeated before the start
        zeros = self.policy.initial_carry(n)
        testers = carry["testers"].replace(mode=jnp.zeros_like(carry["testers"].mode), target=jnp.full_like(carry["testers"].target, -1))
        path_window = first(self.encode("path", masked))
        return {**carry, "frames": frames, "states": states, "testers": testers, "t": jnp.int32(0),
                "obs": {**self._explorer_view(first(masked), path_window), "carry_actor": zeros, "carry_critic": zeros},
                "path_window": path_window, "carry_path": zeros,
                "test_window": first(self.encode("circle", masked)), "carry_test": zeros,
                "alpha": jnp.full((n,), c.alpha.start), "r_e_last": jnp.zeros((n,)), "kl_so_far": jnp.zeros((n,))}  # fmt: skip

    def _rollout(self, carry: dict, key) -> tuple[dict, dict]:
        c, env, params, n = self.config, self.env, self.params, self.config.num_envs
        tests, judge = c.tests, (self.models.js["circle"]["reference"], self.models.js["circle"]["threshold"])
        path, circle = self.models.policies["path"], self.models.policies["circle"]
        ac_params = carry["ppo"][0]

        def body(loop, k):
            k_act, k_test, k_step = jax.random.split(k, 3)
            logits, value, carry_a, carry_c = self.network.step(ac_params, loop["obs"])
            logits_p, _, carry_path = self.policy.apply(path, loop["path_window"], loop["carry_path"], method="step")
            action = jax.random.categorical(k_act, logits)
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=-1)[:, 0]
            logits_t, _, carry_test = self.policy.apply(circle, loop["test_window"], loop["carry_test"], method="step")
            test_action = jax.random.categorical(k_test, logits_t)
            step_keys = jax.random.split(k_step, n)

            def one(tester, state, a, ta, kk):
                return ooi_step(env, tests, params, tester, state, a, kk, test_action=ta, judge=judge, see=self.see)

            testers, next_frames, states, info, executed, event = jax.vmap(one)(loop["testers"], loop["states"], action, test_action, step_keys)
            hold = lambda before, after: jnp.where(event["testing"][:, None], before, after)  # a test's step: memories as they were
            carry_a, carry_c = hold(loop["obs"]["carry_actor"], carry_a), hold(loop["obs"]["carry_critic"], carry_c)
            carry_path = hold(loop["carry_path"], carry_path)
            od_box = self.od_boxes(next_frames, info)
            testers = testers.replace(tested=jnp.broadcast_to(testers.tested.any(axis=0), testers.tested.shape))  # shared memory
            masked = jax.vmap(od_mask)(next_frames, od_box)
            roll = lambda window, new: jnp.concatenate([window[:, 1:], new[:, None]], axis=1)
            path_window = roll(loop["path_window"], self.encode("path", masked))
            frames_window = None if "features" in loop["obs"] else roll(loop["obs"]["frames"], masked)
            next_obs = {**self._explorer_view(frames_window, path_window), "carry_actor": carry_a, "carry_critic": carry_c}
            # The test's window: the frames masked as the explorer's (module docstring); memory reset when a test starts.
            started = (testers.mode == TESTING) & (testers.steps == 0)
            test_features = self.encode("circle", masked)
            test_window = jnp.where(started[:, None, None], test_features[:, None], roll(loop["test_window"], test_features))
            carry_test = jnp.where(started[:, None], 0.0, carry_test)
            last = loop["t"] + 1 == c.episode_steps
            out = {
                "transition": Transition(loop["obs"], action, jnp.zeros(n), jnp.zeros(n, bool), jnp.full(n, last), next_obs, value, log_prob),
                "r_p": preference_reward(logits, logits_p), "rnd_inputs": self.rnd.preprocess(next_frames, od_box),
                "position": info["telemetry"].position, "executed": executed, **event, **oracle_outputs(self.oracle, next_frames, event),
            }  # fmt: skip
            loop = {**loop, "frames": next_frames, "states": states, "testers": testers, "t": loop["t"] + 1, "obs": next_obs,
                    "path_window": path_window, "carry_path": carry_path, "test_window": test_window, "carry_test": carry_test}  # fmt: skip
            return loop, out

        k_run, k_ppo, k_rnd = jax.random.split(key, 3)
        names = ("frames", "states", "testers", "t", "obs", "path_window", "carry_path", "test_window", "carry_test")
        loop, out = jax.lax.scan(body, {k: carry[k] for k in names}, jax.random.split(k_run, c.rollout_steps))
        traj, inputs = out.pop("transition"), out.pop("rnd_inputs")
        r_e = self.rnd.reward(carry["rnd"], inputs)  # [T, N]

        def mix(state, r_e_t):
            alpha, r_e_last = state
            alpha = adapt_alpha(alpha, r_e_t, r_e_last, c.alpha)
            return (alpha, r_e_t), alpha

        (alpha, r_e_last), alphas = jax.lax.scan(mix, (carry["alpha"], carry["r_e_last"]), r_e)
        r_p, kl_so_far = out["r_p"], carry["kl_so_far"]
        if c.preference == "trajectory":  # the episode's exploring steps so far (a test's are not the explorer's)
            r_p, kl_so_far = trajectory_preference_reward(-out["r_p"], ~out["testing"], kl_so_far)
        reward = combined_reward(r_p, r_e, alphas)
        (ac_params, opt_state), _ = self.update(carry["ppo"], traj.replace(reward=reward), c.hparams, k_ppo, ~out["testing"])
        rnd_state = self.rnd.observe(carry["rnd"], inputs)
        rnd_state, _ = jax.lax.scan(lambda s, k: self.rnd.update(s, k), rnd_state, jax.random.split(k_rnd, c.rnd_updates))
        out.update(alpha=alphas, r_e=r_e)
        carry = {**carry, **loop, "ppo": (ac_params, opt_state, carry["ppo"][2] + 1), "rnd": rnd_state, "alpha": alpha, "r_e_last": r_e_last, "kl_so_far": kl_so_far}
        return carry, out


def run(config: PPGTAConfig, models: PPGTAModels, out_dir: str | Path, on_episode: Callable[[int, int, int], None] | None = None,
        resume: bool = False) -> dict:  # fmt: skip
    """Runs a PPGTA campaign in ``out_dir`` with trained ``models`` (:func:`jgtest.methods.park.models.train_models`)."""
    return run_campaign(PPGTACampaign(config, models), "ppgta", out_dir, models.oracle, on_episode, resume,
                        extra_config={"models_metrics": {k: v for k, v in models.metrics.items() if k in ("detector",)}})  # fmt: skip
