"""Inspector (Liu et al., CoG 2022), PPGTA's baseline (§VI-A), and the random agent, in the park.

Inspector "follows visual novelty for exploration" (§I): PPO on the original one-predictor RND
novelty of its frames; an object in view starts the scripted 360° walk
(:mod:`jgtest.methods.park.ooi_testing`). The random agent and the probes play uniform or scripted
actions with the same tests. Details: :class:`InspectorCampaign`.

* chosen: PureJaxRL's Atari PPO, AdamW (:data:`PAPER_PPO`), as Inspector's is not in the text;
* chosen: 5 games, an update per 200 steps of each, as PureJaxRL's Atari PPO's 8 × 128 steps;
* chosen: 16 predictor steps a rollout (one pass over its frames), the original RND's share;
* chosen: no per-pixel observation whitening, because it did not help here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.agents import ppo
from jgtest.envs import park, park_experts
from jgtest.envs.registration import make
from jgtest.methods.park.campaign import (
    CampaignPieces,
    check_rounds,
    oracle_outputs,
    run_campaign,
)
from jgtest.methods.park.ooi_testing import (
    OOITestSettings,
    init_tester,
    ooi_step,
    replay_seen,
    replay_test,
)
from jgtest.novelty import RND, RNDConfig
from jgtest.records import BugRecord
from jgtest.report.replay import replayable
from jgtest.rollout import episode_key, reset_key
from jgtest.seeds import check_seed
from jgtest.types import Progress, Transition

AGENTS = ("inspector", "random", "follower", "walker", "demonstrator")
#: PPO as PPGTA trains it: AdamW "for all optimization objectives" (§V-D), weight decay 0.01
#: (PyTorch's default; the paper gives none); the rest PureJaxRL's Atari values (Inspector's own are
#: not in the text).
PAPER_PPO = ppo.PPOHyperparams(weight_decay=0.01)
#: Inspector's novelty: the original RND, one predictor, its error (the policy's reward).
INSPECTOR_RND = RNDConfig(members=1, reward="error", shared_backbone=False)
#: Inspector's predictor steps after each rollout: one pass over the rollout's frames (1,000 frames,
#: minibatches of 64), the original RND's share (Burda et al. train the predictor on 25% of each
#: rollout's frames for 4 epochs).
INSPECTOR_RND_UPDATES = 16
#: Inspector's policy CNN: Nature-DQN's shape at half the filters, for CPU.
INSPECTOR_CNN = ((16, 8, 4), (32, 4, 2), (32, 3, 1))
#: The walker probe's share of forward steps (the rest uniform over the 9 actions): the least a
#: learned explorer must beat to show it has learned to walk (PPGTA's issue with Inspector, which
#: "barely moves").
WALKER_FORWARD = 0.6
#: Steps between refreshes of the follower's guide to unwalked pathway (a flood fill of the park).
GUIDE_EVERY = 25


@dataclasses.dataclass(frozen=True)
class InspectorConfig:
    """One campaign (:class:`InspectorCampaign`).

    Attributes:
      agent: ``"inspector"``, ``"random"``, ``"walker"`` (forward :data:`WALKER_FORWARD` of the
        steps, else uniform: a probe) or ``"follower"`` (the scripted path follower with the
        campaign's memory of the pathway walked, its guide refreshed every :data:`GUIDE_EVERY`
        steps: a calibration probe, :mod:`jgtest.methods.park.probes`) or ``"demonstrator"`` (the
        same follower without a memory, with the demonstrations' noise: what PPGTA's path
        demonstrations show).
      episodes: episodes in all (the paper's 45); a multiple of ``num_envs``.
      num_envs: games played side by side.
      episode_steps: steps per episode (the paper's 2,000).
      rollout_steps: steps between PPO updates (divides ``episode_steps``).
      seed: the campaign's seed (episode starts, networks, actions).
      size, num_oois: the park's side in cells and its objects (``ParkWorld``'s defaults).
      tests: when tests start and how long they may take.
      rnd: the novelty (Inspector: one predictor, its error).
      rnd_updates: predictor steps after each rollout.
      cnn_layers, cnn_dense: the policy's CNN (Nature-DQN's shape at half the filters, for CPU).
      hparams: PPO's.
    """

    agent: str = "inspector"
    episodes: int = 45
    num_envs: int = 5
    episode_steps: int = 2000
    rollout_steps: int = 200
    seed: int = 0
    size: int = park.SIZE
    num_oois: int = 247
    tests: OOITestSettings = OOITestSettings()
    rnd: RNDConfig = INSPECTOR_RND
    rnd_updates: int = INSPECTOR_RND_UPDATES
    cnn_layers: tuple[tuple[int, int, int], ...] = INSPECTOR_CNN
    cnn_dense: int = 256
    hparams: ppo.PPOHyperparams = PAPER_PPO

    def __post_init__(self):
        check_seed(self.seed)
        if self.agent not in AGENTS:
            raise ValueError(f"agent must be one of {AGENTS}, got {self.agent!r}")
        for name in ("episodes", "num_envs", "episode_steps", "rollout_steps", "rnd_updates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        check_rounds(self)

    @property
    def rounds(self) -> int:
        return self.episodes // self.num_envs

    @property
    def game_kwargs(self) -> dict:
        return {"size": self.size, "num_oois": self.num_oois}


def inspector_ppo(config, game: str, total_timesteps: int, **options) -> ppo.PPOConfig:
    """Inspector's PPO on ``game`` for ``config`` (an :class:`InspectorConfig`, or a level's with
    the same learner fields): its CNN (``cnn_layers``, ``cnn_dense``), an update every
    ``rollout_steps`` steps of its ``num_envs`` games, no evaluations or coverage of its own;
    ``options``, more of :class:`jgtest.agents.ppo.PPOConfig`'s fields."""
    return ppo.PPOConfig(
        game=game,
        num_envs=config.num_envs,
        num_steps=config.rollout_steps,
        total_timesteps=total_timesteps,
        torso="cnn",
        cnn_layers=config.cnn_layers,
        cnn_dense=config.cnn_dense,
        conv_impl="im2col",
        num_evals=1,
        track_coverage=False,
        **options,
    )


class InspectorCampaign(CampaignPieces):
    """The jitted pieces of a campaign (:mod:`jgtest.methods.park.campaign`): start a round, play
    (and learn from) one rollout; with a texture ``oracle``, its evidence from each step's frames.

    ``num_envs`` games play side by side, episode ``e`` of game ``i`` from
    ``reset_key(episode_key(seed, i, e))`` (uniform over the park), sharing the campaign's memory of
    tested objects (an object one game tested is not triggered in another; the per-episode curves
    count episodes in the order (round, game)). Inspector learns as it goes: every ``rollout_steps``
    steps one PPO update on the intrinsic rewards (the RND error of the next frame as the game draws
    it, over the error's running standard deviation; the episode's last step a truncation,
    bootstrapped; a test's steps skipped, :func:`jgtest.losses.gae`'s ``valid_t``), then
    ``rnd_updates`` predictor steps on its buffer of the last 1,024 frames.
    """

    def __init__(self, config: InspectorConfig, oracle=None):
        self.config = c = config
        self.oracle = oracle
        self.env, self.params = make(
            "ParkWorld-v0", **c.game_kwargs, max_steps_in_episode=c.episode_steps
        )
        self.rnd = RND(c.rnd)
        self.to_path = (
            park_experts.nearest_path_heading(self.env)
            if c.agent in ("follower", "demonstrator")
            else None
        )
        self.ppo = (
            None
            if c.agent != "inspector"
            else ppo.make_agent(
                inspector_ppo(
                    c,
                    "ParkWorld-v0",
                    c.episodes * c.episode_steps,
                    game_kwargs=tuple(c.game_kwargs.items()),
                )
            )
        )
        self.compile()

    def _init(self, key) -> dict:
        testers = jax.vmap(lambda _: init_tester(self.env.num_oois))(
            jnp.arange(self.config.num_envs)
        )
        if self.config.agent == "follower":
            return {"testers": testers, "memory": park_experts.new_memory(self.env)}
        if self.ppo is None:
            return {"testers": testers}
        k_ppo, k_rnd = jax.random.split(key)
        frame = jnp.zeros((1, *self.env.observation_space(self.params).shape), jnp.uint8)
        learner = self.ppo.init_learner(k_ppo, frame, self.config.hparams).replace(
            obs=None
        )  # the rounds keep the frames
        return {"ppo": learner, "rnd": self.rnd.init(k_rnd), "testers": testers}

    def _start_round(self, carry: dict, round_index) -> dict:
        slots = jnp.arange(self.config.num_envs)
        keys = jax.vmap(lambda i: reset_key(episode_key(self.config.seed, i, round_index)))(slots)
        frames, states = jax.vmap(self.env.reset_env, in_axes=(0, None))(keys, self.params)
        testers = carry["testers"].replace(
            mode=jnp.zeros_like(carry["testers"].mode),
            target=jnp.full_like(carry["testers"].target, -1),
        )
        return {**carry, "frames": frames, "states": states, "testers": testers, "t": jnp.int32(0)}

    def _rollout(self, carry: dict, key) -> tuple[dict, dict]:
        c, env, params = self.config, self.env, self.params
        learns = self.ppo is not None
        step_all = jax.vmap(
            lambda tester, state, action, k: ooi_step(
                env, c.tests, params, tester, state, action, k
            )
        )

        def body(loop, k):
            frames, states, testers, t, memory = loop
            k_act, k_step = jax.random.split(k)
            log_prob = value = jnp.zeros(c.num_envs)
            if learns:
                action, log_prob, value = self.ppo.act(carry["ppo"].params, frames, k_act)
            elif self.to_path is not None:
                epsilon = park_experts.DEMONSTRATION_EPSILON if c.agent == "demonstrator" else 0.0
                follow = lambda state, kk: park_experts.path_action(
                    env, params, state, kk, self.to_path, epsilon=epsilon, memory=memory
                )
                action = jax.vmap(follow)(states, jax.random.split(k_act, c.num_envs))
            else:
                action = jax.random.randint(k_act, (c.num_envs,), 0, env.num_actions)
                if c.agent == "walker":
                    forward = (
                        jax.random.uniform(jax.random.fold_in(k_act, 1), (c.num_envs,))
                        < WALKER_FORWARD
                    )
                    action = jnp.where(forward, park.FORWARD, action)
            testers, next_frames, states, info, executed, event = step_all(
                testers, states, action, jax.random.split(k_step, c.num_envs)
            )
            testers = testers.replace(
                tested=jnp.broadcast_to(testers.tested.any(axis=0), testers.tested.shape)
            )  # shared memory
            if memory is not None:
                memory = park_experts.remember(memory, info["telemetry"].position)  # shared too
            last = t + 1 == c.episode_steps
            out = {
                "transition": Transition(
                    frames,
                    action,
                    jnp.zeros(c.num_envs),
                    jnp.zeros(c.num_envs, bool),
                    jnp.full(c.num_envs, last),
                    next_frames,
                    value,
                    log_prob,
                ),
                "position": info["telemetry"].position,
                "executed": executed,
                **event,
                **(
                    oracle_outputs(self.oracle, next_frames, event)
                    if self.oracle is not None
                    else {}
                ),
            }
            return (next_frames, states, testers, t + 1, memory), out

        def chunk(loop, keys):  # the follower's guide is refreshed before each chunk of steps
            memory = loop[-1]
            if memory is not None:
                memory = park_experts.refresh_guide(env, memory)
            return jax.lax.scan(body, (*loop[:-1], memory), keys)

        k_run, k_ppo, k_rnd = jax.random.split(key, 3)
        every = (
            GUIDE_EVERY
            if c.agent == "follower" and c.rollout_steps % GUIDE_EVERY == 0
            else c.rollout_steps
        )
        loop = (carry["frames"], carry["states"], carry["testers"], carry["t"], carry.get("memory"))
        keys = jax.random.split(k_run, c.rollout_steps).reshape(c.rollout_steps // every, every)
        (frames, states, testers, t, memory), out = jax.lax.scan(chunk, loop, keys)
        out = jax.tree.map(lambda x: x.reshape(c.rollout_steps, *x.shape[2:]), out)
        if memory is not None:
            carry = {**carry, "memory": memory}
        traj = out.pop("transition")
        if learns:
            # Inspector's RND sees the frames as they are (64x64); downsizing and OD masking are
            # PPGTA's extensions (§IV-C)
            inputs = self.rnd.preprocess(traj.next_obs)  # [T, N, 64, 64, 3]
            intrinsic = self.rnd.reward(carry["rnd"], inputs)
            learner, _ = self.ppo.update(
                carry["ppo"],
                traj.replace(reward=intrinsic),
                k_ppo,
                c.hparams,
                valid=~out["testing"],
            )
            rnd_state = self.rnd.observe(carry["rnd"], inputs)
            rnd_state, _ = jax.lax.scan(
                lambda s, k: self.rnd.update(s, k),
                rnd_state,
                jax.random.split(k_rnd, c.rnd_updates),
            )
            carry = {**carry, "ppo": learner, "rnd": rnd_state}
        carry = {**carry, "frames": frames, "states": states, "testers": testers, "t": t}
        return carry, out


def run(
    config: InspectorConfig,
    out_dir: str | Path,
    progress: Progress | None = None,
    resume: bool = False,
    oracle=None,
) -> dict:
    """Runs a campaign in ``out_dir`` (files: :mod:`jgtest.methods.park.campaign`);
    ``progress(done, episodes, tested)`` after each round; ``resume`` from its last checkpoint;
    ``oracle`` a texture oracle judging the tests' frames (:mod:`jgtest.oracles.texture`)."""
    return run_campaign(
        InspectorCampaign(config, oracle), config.agent, out_dir, oracle, progress, resume
    )


def replay_record(record: BugRecord) -> bool:
    """Re-runs a texture record's executed actions from its episode's start on the bare game and
    checks the test again: a completed 360° walk around its object (:func:`ooi_testing.replay_test`)
    for a record of a completed scripted walk; for one a texture oracle flagged (its test's frames
    judged), the same trace up to the test's frames showing the object
    (:func:`ooi_testing.replay_seen`)."""
    env, params = replayable(record)
    _, state = env.reset(
        reset_key(episode_key(record.seed, record.env_index, record.episode)), params
    )  # gymnax's reset: jitted
    if "texture oracle" in record.detail:
        return replay_seen(
            env,
            params,
            state,
            np.asarray(record.actions),
            record.bug_id,
            record.position,
            OOITestSettings(),
        )
    return replay_test(env, params, state, np.asarray(record.actions), record.bug_id)
