"""PPGTA (Abdelfattah, Brown & Zhang): preference-conditioned exploration and learned object tests.

The explorer (§IV-C, §V-D) is PPO on ``r^c = α·r^p + (1 − α)·r^e``: ``r^e`` the ensemble RND
novelty of the next frame, ``r^p = −KL(π^e_{1:t}, π^p_{1:t})`` to the path-following imitation
policy it starts as, ``α`` adapted every step. An object in view starts the learned 360° test,
judged by the JS divergence of its actions (§VI-B). Details: :class:`PPGTACampaign`.

* chosen: ``r^p`` as the sum of the per-step KLs, because §IV-C's KL runs "till time point t";
* chosen: the path policy's FE fixed under PPO, because a PPO-trained one stalled the explorer;
* chosen: PPO at 2.5e-5 (VPT's fine-tuning rate), because 2.5e-4 undid the path following;
* chosen: PPO skips a test's steps, because the game ignored the explorer's actions there;
* chosen: the test's frames masked as the explorer's, as its demonstrations were;
* chosen: ``r^e`` over its running standard deviation, because the paper gives no scale.

Why, and what was tried: ``docs/methods/park.md``. Usage::

    summary = ppgta.run(ppgta.PPGTAConfig(), "runs/park-ppgta")  # trains its models first
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp

from jgtest.agents import ppo
from jgtest.envs.registration import make
from jgtest.frames import od_mask
from jgtest.methods.park.campaign import (
    CampaignPieces,
    check_rounds,
    oracle_outputs,
    run_campaign,
)
from jgtest.methods.park.inspector import PAPER_PPO
from jgtest.methods.park.models import PPGTAModels, PPGTAModelsConfig, load_or_train
from jgtest.methods.park.ooi_testing import TESTING, OOITestSettings, init_tester, ooi_step
from jgtest.nets.recurrent import ImitationPolicy
from jgtest.novelty import (
    RND,
    AlphaSchedule,
    RNDConfig,
    adapt_alpha,
    combined_reward,
    preference_reward,
    trajectory_preference_reward,
)
from jgtest.rollout import episode_key, reset_key
from jgtest.seeds import check_seed
from jgtest.types import Progress, Transition
from jgtest.vision.detector import detected_objects

DETECTORS = ("ground-truth", "learned")
PREFERENCES = ("step", "trajectory")
#: PPGTA's PPO: Inspector's (:data:`jgtest.methods.park.inspector.PAPER_PPO`, AdamW; §V-D: "the same
#: PPO hyper-parameter setup as the Inspector's") with the learning rate at which RL fine-tunes a
#: policy pre-trained by imitation (VPT, Baker et al. 2022: 2e-5), a tenth of PureJaxRL's 2.5e-4.
PPGTA_PPO = dataclasses.replace(PAPER_PPO, learning_rate=2.5e-5)


@dataclasses.dataclass(frozen=True)
class PPGTAConfig:
    """One PPGTA campaign (:class:`PPGTACampaign`).

    The attributes it shares with :class:`jgtest.methods.park.inspector.InspectorConfig` mean the
    same.

    Attributes:
      detector: ``"ground-truth"`` (the renderer's objects) or ``"learned"`` (the trained detector).
      test_steps: steps of a learned test (0: the models' ``circle_steps``).
      rnd: the novelty (8 predictors, their variance; its backbone is the FE's convolutions,
        whatever ``channels`` it gives).
      rnd_updates: the predictors' AdamW steps after each rollout (4: the paper gives no schedule
        for its ensemble; Inspector's, one pass over the rollout's frames, is 16).
      hparams: PPO's (:data:`PPGTA_PPO`).
      fine_tune_fe: whether PPO fine-tunes the actor's and the critic's FEs (each their own copy) or
        both read the path policy's, fixed (the default).
      preference: ``r^p``'s reading: ``"trajectory"`` (the default), the KL of the
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
        for name in (
            "episodes",
            "num_envs",
            "episode_steps",
            "rollout_steps",
            "rnd_updates",
            "trigger_pixels",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.test_steps < 0:
            raise ValueError(f"test_steps must be non-negative, got {self.test_steps}")
        check_rounds(self)
        if self.rnd.reward != "variance" or not self.rnd.shared_backbone:
            raise ValueError(
                "PPGTA's novelty is the ensemble variance over the FE backbone "
                "(rnd.reward='variance', shared_backbone=True)"
            )

    @property
    def rounds(self) -> int:
        return self.episodes // self.num_envs

    @property
    def game_kwargs(self) -> dict:
        return self.models.game_kwargs

    @property
    def tests(self) -> OOITestSettings:
        return OOITestSettings(
            trigger_pixels=self.trigger_pixels,
            test_steps=self.test_steps or self.models.circle_steps,
        )


@dataclasses.dataclass(frozen=True)
class ExplorerNetwork:
    """The actor and the critic, each the imitation policy's network with its own head, on stored
    inputs: ``obs = {"frames" uint8[..., K, H, W, 3] (OD-masked), "carry_actor" [..., G],
    "carry_critic" [..., G]}``; what :func:`jgtest.agents.ppo.make_update` calls. With ``fe``
    (``{"fe": parameters}``) both read that fixed FE and their parameters hold none, and ``obs`` may
    hold the frames' features in their place (``"features" [..., K, F]``, encoded once when the
    frames were seen, not again in every epoch of every update); without, each has its own FE among
    its parameters, trained with the rest."""

    actor: ImitationPolicy
    critic: ImitationPolicy
    fe: dict | None = None

    def act(self, params, frames, carry):
        """The actor alone (what a bridged game's explorer plays): ``(logits [B, A], next carry)``
        from ``frames [B, K, H, W, 3]``."""
        return self._head(
            self.actor, params["actor"], self._encode(self.actor, params["actor"], frames), carry
        )

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
            features_critic = (
                features
                if self.fe is not None
                else self._encode(self.critic, params["critic"], frames)
            )
        logits, carry_a = self._head(
            self.actor, params["actor"], features, flat(obs["carry_actor"], 1)
        )
        value, carry_c = self._head(
            self.critic, params["critic"], features_critic, flat(obs["carry_critic"], 1)
        )
        back = lambda x: x.reshape(*lead, *x.shape[1:])
        return back(logits), back(value[:, 0]), back(carry_a), back(carry_c)

    def apply(self, params, obs):
        logits, value, _, _ = self.step(params, obs)
        return logits, value

    def _encode(self, network: ImitationPolicy, params, frames):
        """``[B, K, F]``: the frames through the network's own FE, or the fixed one."""
        return network.apply(
            params if self.fe is None else {"params": self.fe}, frames, method="encode"
        )

    @staticmethod
    def _head(network: ImitationPolicy, params, features, carry):
        out, _, carry = network.apply(params, features, carry, method="step")
        return out, carry


def explorer_params(path_policy: dict, critic: ImitationPolicy, key, fine_tune_fe: bool) -> dict:
    """Actor and critic initialised from the path-following policy (§V-D): the actor is its copy,
    the critic its copy with a zero one-unit value head; their FE with them when PPO fine-tunes
    it."""
    actor = (
        path_policy
        if fine_tune_fe
        else {"params": {k: v for k, v in path_policy["params"].items() if k != "fe"}}
    )
    features = jnp.zeros((1, 1, critic.cnn_dense))
    fresh = critic.init(key, features, critic.initial_carry(1), method="step")["params"]
    head = jax.tree.map(jnp.zeros_like, fresh["head"])
    return {"actor": actor, "critic": {"params": {**actor["params"], "head": head}}}


class PPGTACampaign(CampaignPieces):
    """The jitted pieces of a PPGTA campaign (:mod:`jgtest.methods.park.campaign`).

    Each step the actor and the critic (:class:`ExplorerNetwork`) read the last K frames, OD-masked
    around the largest object in view, each with its own global GRU state; the path policy, on the
    same frames, gives ``r^p`` (:func:`jgtest.novelty.trajectory_preference_reward`, or
    :func:`jgtest.novelty.preference_reward` with ``preference="step"``). After each rollout,
    ``r^e`` is the variance of the RND predictors (the FE's convolutions their backbone; frames
    downsized to 64×64 and OD-masked) over its running standard deviation; ``α`` follows
    :class:`jgtest.novelty.AlphaSchedule` per game, back to its start each episode; one PPO update
    (:data:`PPGTA_PPO`) reads each step's stored window and GRU states (no back-propagation through
    time), then ``rnd_updates`` predictor steps.

    While a test runs the explorer does not act: PPO masks those steps (GAE over the explorer's own,
    :func:`jgtest.losses.gae`'s ``valid_t``) and the actor's, critic's and path policy's GRU states
    wait, while their frame windows keep rolling. The test is the circle imitation policy, its
    memory reset as the test starts, sampling ``test_steps`` actions; the texture oracle reads its
    frames.
    """

    def __init__(self, config: PPGTAConfig, models: PPGTAModels):
        self.config = c = config
        self.models = models
        self.oracle = models.oracle
        self.env, self.params = make(
            "ParkWorld-v0", **c.game_kwargs, max_steps_in_episode=c.episode_steps
        )
        im = models.imitation_config(self.env.num_actions)
        self.k = im.k
        self.policy = im.network
        fixed_fe = None if c.fine_tune_fe else {"fe": models.policies["path"]["params"]["fe"]}
        self.network = ExplorerNetwork(self.policy, im.network.clone(num_actions=1), fixed_fe)
        channels, kernels, strides = (tuple(x) for x in zip(*c.models.cnn_layers))
        self.rnd = RND(
            dataclasses.replace(c.rnd, channels=channels, kernels=kernels, strides=strides)
        )  # the FE's convolutions
        self.ppo_config = ppo.PPOConfig(
            game="ParkWorld-v0",
            num_envs=c.num_envs,
            num_steps=c.rollout_steps,
            total_timesteps=c.episodes * c.episode_steps,
            num_evals=1,
        )
        self.update = ppo.make_update(self.ppo_config, self.network)
        self.compile()

    # ----- pieces ------------------------------------------------------------
    def encode(self, behaviour: str, masked):
        """The ``behaviour`` imitation policy's FE features ``[N, F]`` of OD-masked frames
        ``[N, H, W, 3]``."""
        return self.policy.apply(self.models.policies[behaviour], masked, method="encode")

    @property
    def see(self):
        """The tester's view of a new frame (``ooi_step``'s ``see``): the learned detector's
        objects, or ``None`` for the renderer's ground truth."""
        if self.config.detector == "ground-truth":
            return None
        detector = self.models.detector
        return lambda frame, info: detected_objects(
            jax.tree.map(lambda x: x[0], detector.detect(frame[None])), info["objects"]
        )

    def od_boxes(self, frames, info):
        """``[N, 4]``: each new frame's OD-mask box for the explorer (the largest object in view, or
        the detector's best detection; empty when none)."""
        if self.config.detector == "ground-truth":
            return jnp.where(info["od_visible"][:, None], info["od_box"], 0)
        detections = self.models.detector.detect(frames)
        best = jnp.argmax(jnp.where(detections["valid"], detections["score"], -1.0), axis=1)
        box = jnp.take_along_axis(detections["box"], best[:, None, None], axis=1)[:, 0]
        return jnp.where(detections["valid"].any(axis=1)[:, None], box, 0)

    def _explorer_view(self, frames_window, path_window) -> dict:
        """What the explorer's ``obs`` holds of its last K frames: with the path policy's FE fixed
        under both networks, that FE's features (the path policy's window, the same encoding); else
        the frames, for the networks' own FEs to encode."""
        return (
            {"features": path_window} if self.network.fe is not None else {"frames": frames_window}
        )

    def _init(self, key) -> dict:
        c, n = self.config, self.config.num_envs
        k_critic, k_rnd = jax.random.split(key)
        params = explorer_params(
            self.models.policies["path"], self.network.critic, k_critic, c.fine_tune_fe
        )
        path_fe = self.models.policies["path"]["params"]["fe"]
        rnd_state = self.rnd.init(
            k_rnd, backbone={"params": {k: v for k, v in path_fe.items() if k != "dense"}}
        )
        testers = jax.vmap(lambda _: init_tester(self.env.num_oois, self.env.num_actions))(
            jnp.arange(n)
        )
        # α typed float32: a weakly typed one would make start_round compile again for the next
        # rounds' carry
        return {
            "ppo": (params, ppo.optimizer(c.hparams).init(params), jnp.int32(0)),
            "rnd": rnd_state,
            "testers": testers,
            "alpha": jnp.full((n,), c.alpha.start, jnp.float32),
            "r_e_last": jnp.zeros((n,)),
            "kl_so_far": jnp.zeros((n,)),
        }

    def _start_round(self, carry: dict, round_index) -> dict:
        c, n = self.config, self.config.num_envs
        keys = jax.vmap(lambda i: reset_key(episode_key(c.seed, i, round_index)))(jnp.arange(n))
        frames, states = jax.vmap(self.env.reset_env, in_axes=(0, None))(keys, self.params)
        _, info = jax.vmap(self.env.observe, in_axes=(0, None))(states, self.params)
        masked = jax.vmap(od_mask)(frames, self.od_boxes(frames, info))
        first = lambda x: jnp.repeat(
            x[:, None], self.k, axis=1
        )  # the first frame repeated before the start
        zeros = self.policy.initial_carry(n)
        testers = carry["testers"].replace(
            mode=jnp.zeros_like(carry["testers"].mode),
            target=jnp.full_like(carry["testers"].target, -1),
        )
        path_window = first(self.encode("path", masked))
        return {
            **carry,
            "frames": frames,
            "states": states,
            "testers": testers,
            "t": jnp.int32(0),
            "obs": {
                **self._explorer_view(first(masked), path_window),
                "carry_actor": zeros,
                "carry_critic": zeros,
            },
            "path_window": path_window,
            "carry_path": zeros,
            "test_window": first(self.encode("circle", masked)),
            "carry_test": zeros,
            "alpha": jnp.full((n,), c.alpha.start),
            "r_e_last": jnp.zeros((n,)),
            "kl_so_far": jnp.zeros((n,)),
        }

    def _rollout(self, carry: dict, key) -> tuple[dict, dict]:
        c, env, params, n = self.config, self.env, self.params, self.config.num_envs
        tests, judge = (
            c.tests,
            (self.models.js["circle"]["reference"], self.models.js["circle"]["threshold"]),
        )
        path, circle = self.models.policies["path"], self.models.policies["circle"]
        ac_params = carry["ppo"][0]

        def body(loop, k):
            k_act, k_test, k_step = jax.random.split(k, 3)
            logits, value, carry_a, carry_c = self.network.step(ac_params, loop["obs"])
            logits_p, _, carry_path = self.policy.apply(
                path, loop["path_window"], loop["carry_path"], method="step"
            )
            action = jax.random.categorical(k_act, logits)
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=-1)[
                :, 0
            ]
            logits_t, _, carry_test = self.policy.apply(
                circle, loop["test_window"], loop["carry_test"], method="step"
            )
            test_action = jax.random.categorical(k_test, logits_t)
            step_keys = jax.random.split(k_step, n)

            def one(tester, state, a, ta, kk):
                return ooi_step(
                    env,
                    tests,
                    params,
                    tester,
                    state,
                    a,
                    kk,
                    test_action=ta,
                    judge=judge,
                    see=self.see,
                )

            testers, next_frames, states, info, executed, event = jax.vmap(one)(
                loop["testers"], loop["states"], action, test_action, step_keys
            )
            hold = lambda before, after: jnp.where(
                event["testing"][:, None], before, after
            )  # a test's step: memories as they were
            carry_a, carry_c = (
                hold(loop["obs"]["carry_actor"], carry_a),
                hold(loop["obs"]["carry_critic"], carry_c),
            )
            carry_path = hold(loop["carry_path"], carry_path)
            od_box = self.od_boxes(next_frames, info)
            testers = testers.replace(
                tested=jnp.broadcast_to(testers.tested.any(axis=0), testers.tested.shape)
            )  # shared memory
            masked = jax.vmap(od_mask)(next_frames, od_box)
            roll = lambda window, new: jnp.concatenate([window[:, 1:], new[:, None]], axis=1)
            path_window = roll(loop["path_window"], self.encode("path", masked))
            frames_window = (
                None if "features" in loop["obs"] else roll(loop["obs"]["frames"], masked)
            )
            next_obs = {
                **self._explorer_view(frames_window, path_window),
                "carry_actor": carry_a,
                "carry_critic": carry_c,
            }
            # The test's window: the frames masked as the explorer's; memory reset when a test
            # starts.
            started = (testers.mode == TESTING) & (testers.steps == 0)
            test_features = self.encode("circle", masked)
            test_window = jnp.where(
                started[:, None, None],
                test_features[:, None],
                roll(loop["test_window"], test_features),
            )
            carry_test = jnp.where(started[:, None], 0.0, carry_test)
            last = loop["t"] + 1 == c.episode_steps
            out = {
                "transition": Transition(
                    loop["obs"],
                    action,
                    jnp.zeros(n),
                    jnp.zeros(n, bool),
                    jnp.full(n, last),
                    next_obs,
                    value,
                    log_prob,
                ),
                "r_p": preference_reward(logits, logits_p),
                "rnd_inputs": self.rnd.preprocess(next_frames, od_box),
                "position": info["telemetry"].position,
                "executed": executed,
                **event,
                **oracle_outputs(self.oracle, next_frames, event),
            }
            loop = {
                **loop,
                "frames": next_frames,
                "states": states,
                "testers": testers,
                "t": loop["t"] + 1,
                "obs": next_obs,
                "path_window": path_window,
                "carry_path": carry_path,
                "test_window": test_window,
                "carry_test": carry_test,
            }
            return loop, out

        k_run, k_ppo, k_rnd = jax.random.split(key, 3)
        names = (
            "frames",
            "states",
            "testers",
            "t",
            "obs",
            "path_window",
            "carry_path",
            "test_window",
            "carry_test",
        )
        loop, out = jax.lax.scan(
            body, {k: carry[k] for k in names}, jax.random.split(k_run, c.rollout_steps)
        )
        traj, inputs = out.pop("transition"), out.pop("rnd_inputs")
        r_e = self.rnd.reward(carry["rnd"], inputs)  # [T, N]

        def mix(state, r_e_t):
            alpha, r_e_last = state
            alpha = adapt_alpha(alpha, r_e_t, r_e_last, c.alpha)
            return (alpha, r_e_t), alpha

        (alpha, r_e_last), alphas = jax.lax.scan(mix, (carry["alpha"], carry["r_e_last"]), r_e)
        r_p, kl_so_far = out["r_p"], carry["kl_so_far"]
        if (
            c.preference == "trajectory"
        ):  # the episode's exploring steps so far (a test's are not the explorer's)
            r_p, kl_so_far = trajectory_preference_reward(-out["r_p"], ~out["testing"], kl_so_far)
        reward = combined_reward(r_p, r_e, alphas)
        (ac_params, opt_state), _ = self.update(
            carry["ppo"], traj.replace(reward=reward), c.hparams, k_ppo, ~out["testing"]
        )
        rnd_state = self.rnd.observe(carry["rnd"], inputs)
        rnd_state, _ = jax.lax.scan(
            lambda s, k: self.rnd.update(s, k), rnd_state, jax.random.split(k_rnd, c.rnd_updates)
        )
        out.update(alpha=alphas, r_e=r_e)
        carry = {
            **carry,
            **loop,
            "ppo": (ac_params, opt_state, carry["ppo"][2] + 1),
            "rnd": rnd_state,
            "alpha": alpha,
            "r_e_last": r_e_last,
            "kl_so_far": kl_so_far,
        }
        return carry, out


def run(
    config: PPGTAConfig,
    out_dir: str | Path,
    progress: Progress | None = None,
    resume: bool = False,
    models_dir: str | Path | None = None,
    log=print,
) -> dict:
    """The whole PPGTA experiment: its models of ``config.models`` loaded from ``models_dir``
    (default ``out_dir/models``) when trained there, else trained there first
    (:func:`jgtest.methods.park.models.load_or_train`), then the campaign in ``out_dir``
    (:func:`run_with_models`); the summary."""
    where = Path(models_dir) if models_dir is not None else Path(out_dir) / "models"
    return run_with_models(
        config, load_or_train(config.models, where, log), out_dir, progress, resume
    )


def run_with_models(
    config: PPGTAConfig,
    models: PPGTAModels,
    out_dir: str | Path,
    progress: Progress | None = None,
    resume: bool = False,
) -> dict:
    """Runs a PPGTA campaign in ``out_dir`` with trained ``models``
    (:func:`jgtest.methods.park.models.train_models`)."""
    return run_campaign(
        PPGTACampaign(config, models),
        "ppgta",
        out_dir,
        models.oracle,
        progress,
        resume,
        extra_config={
            "models_metrics": {k: v for k, v in models.metrics.items() if k in ("detector",)}
        },
    )
