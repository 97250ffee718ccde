"""The host loop: jgtest's jitted agents playing and learning on bridged games.

A bridged game (:mod:`envs_bridge`, SPEC §4) steps on the host, in numpy; the
agent stays what it is on device. Each step the loop calls the agent's jitted
``act``, steps the game with the actions, passes the frames through the
on-device observation pipeline (:class:`jgtest.envs.wrappers.ObservationPipeline`:
grayscale, resize, 4-frame stack) and, when learning, hands the transitions to
the agent's jitted ``learn`` — the very functions :func:`jgtest.agents.dqn.make_agent`
builds for the on-device training loop. Games' telemetry
(``info["telemetry"]``, the on-device :class:`jgtest.types.Telemetry` fields)
feeds the same rewards, oracles, bug records and analyses.

Host games restart an episode on the step after it ends (the contract's
``autoreset`` steps); those steps are not transitions and are never learned
from. This is the only module of ``jgtest`` that imports ``envs_bridge``.

* :func:`host_game` — build a bridged game by name (``"ale:MsPacman"``).
* :class:`HostGameSpec` — a bridged game's spaces as a gymnax environment, so
  ``make_agent(config, (spec, params))`` sizes its networks for it.
* :func:`train_dqn` — DQN training over a host game.
* :func:`play` — episodes of a policy, padded like
  :func:`jgtest.rollout.play_episodes`' output, bug records as found.
* :func:`make_xla_rollout` / :func:`xla_rollout` — Ms. Pac-Man's collection loop inside one ``jit``
  through envpool's XLA interface.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import environment, spaces

import envs_bridge
from envs_bridge.protocol import HostEnv
from jgtest.envs.wrappers import ObservationPipeline
from jgtest.types import Telemetry

is_host_game = envs_bridge.is_host_game


def host_game(name: str, num_envs: int = 1, seed: int = 0, actors: int = 0, **options) -> HostEnv:
    """The bridged game ``name`` (see :func:`envs_bridge.make`)."""
    return envs_bridge.make(name, num_envs=num_envs, seed=seed, actors=actors, **options)


class HostGameSpec(environment.Environment):
    """A host game's spaces, as the agent sees them after ``pipeline``, as a gymnax env.

    Only the spaces and the metadata (``num_cells``, ``bug_kinds``, the
    episode cap) are real: the game is stepped by the host loop, so ``reset``
    and ``step`` refuse to run.
    """

    def __init__(self, game: HostEnv, pipeline: ObservationPipeline):
        super().__init__()
        self.game_name = game.name
        self.obs_shape = (*pipeline.size, pipeline.num_frames)
        self._num_actions = game.num_actions
        self.num_cells = game.num_cells
        self.bug_kinds = game.bug_kinds
        self.num_bugs = game.num_bugs
        self._max_steps = game.max_steps_in_episode

    @property
    def default_params(self) -> environment.EnvParams:
        return environment.EnvParams(max_steps_in_episode=self._max_steps)

    @property
    def num_actions(self) -> int:
        return self._num_actions

    def observation_space(self, params=None) -> spaces.Box:
        return spaces.Box(0, 255, self.obs_shape, jnp.uint8)

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(self._num_actions)

    def reset_env(self, key, params):
        raise NotImplementedError(f"{self.game_name} runs on the host: play it with jgtest.host_loop")

    def step_env(self, key, state, action, params):
        raise NotImplementedError(f"{self.game_name} runs on the host: play it with jgtest.host_loop")


def spec_game(game: HostEnv, pipeline: ObservationPipeline):
    """``(HostGameSpec, params)``, the ``game`` argument of ``make_agent`` for a host game."""
    spec = HostGameSpec(game, pipeline)
    return spec, spec.default_params


def _subset(tree, rows: np.ndarray):
    return jax.tree.map(lambda x: x[rows], tree)


def train_dqn(
    agent, game: HostEnv, pipeline: ObservationPipeline, hparams, key, num_steps: int,
    reward: Callable[[np.ndarray, dict], np.ndarray] | None = None, seed: int = 0,
    on_progress: Callable[[int, int], None] | None = None,
):  # fmt: skip
    """Trains a DQN agent (:func:`jgtest.agents.dqn.make_agent`) on a host game.

    Each step: the agent's ε-greedy ``act`` (jitted) → ``game.step`` → the
    pipeline → the agent's ``learn`` (jitted: replay buffer, gradient step when
    due, target sync) on the step's transitions, skipping ``autoreset`` steps.

    Args:
      agent: a ``DQNAgent`` made for ``spec_game(game, pipeline)``.
      game: the host game (``num_envs`` must equal the agent's ``num_envs``).
      pipeline: the observation pipeline.
      hparams: ``DQNHyperparams``.
      key: PRNG key (network init, exploration, replay sampling).
      num_steps: environment steps in total (over all games).
      reward: ``(game_reward, info) -> float32[N]``, the training reward
        (default: the game's).
      seed: the game's reset seed.
      on_progress: ``(steps done, num_steps)`` after every 1,000 steps.

    Returns:
      ``(final DQNState, dict of per-episode training returns and bug counts)``.
    """
    from jgtest.agents.dqn import epsilon_at

    if game.num_envs != agent.config.num_envs:
        raise ValueError(f"the agent steps {agent.config.num_envs} games, {game.name} has {game.num_envs}")
    reward = reward or (lambda r, info: r)
    start, observe = jax.jit(pipeline.reset), jax.jit(pipeline.push)

    # The state is donated so the replay buffer is updated in place (a copy of a 10k buffer of
    # 84x84x4 frames a step cost ~0.8 s on 2 CPU cores); its observations travel in ``items``.
    @partial(jax.jit, donate_argnums=0)
    def learn(state, items, key, hparams):
        state, metrics = agent.learn(state, items, key, hparams)
        return state.replace(obs=items["next_obs"]), metrics

    @jax.jit
    def choose(state, hparams):
        key, k_act, k_sample = jax.random.split(state.key, 3)
        action = agent.act(state.params, state.obs, k_act, epsilon_at(state.timesteps, hparams))
        return state.replace(key=key), action, k_sample

    frames, _ = game.reset(seed)
    state = jax.jit(agent.init_learner)(key, start(frames), hparams)
    returns, bugs, running_return, running_bugs = [], [], np.zeros(game.num_envs), np.zeros((game.num_envs, game.num_bugs), bool)
    done_steps, every = 0, max(1_000, game.num_envs)
    while done_steps < num_steps:
        state, action, k_sample = choose(state, hparams)
        action = np.asarray(action)
        frames, game_reward, terminated, truncated, info = game.step(action)
        valid = ~info["autoreset"]
        next_obs = observe(state.obs, frames, info["autoreset"])
        items = {
            "obs": state.obs, "action": action.astype(np.int32), "reward": np.asarray(reward(game_reward, info), np.float32),
            "terminated": np.asarray(terminated, bool), "next_obs": next_obs,
        }  # fmt: skip
        if valid.all():
            state, _ = learn(state.replace(obs=None), items, k_sample, hparams)
        elif valid.any():
            state, _ = learn(state.replace(obs=None), _subset(items, np.flatnonzero(valid)), k_sample, hparams)
        state = state.replace(obs=next_obs)
        running_return = np.where(valid, running_return + game_reward, 0.0)
        running_bugs = np.where(valid[:, None], running_bugs | info["telemetry"].bugs_fired, False)
        for i in np.flatnonzero(valid & (terminated | truncated)):
            returns.append(float(running_return[i]))
            bugs.append(int(running_bugs[i].sum()))
        before, done_steps = done_steps, done_steps + int(valid.sum())
        if on_progress is not None and done_steps // every > before // every:
            on_progress(min(done_steps, num_steps), num_steps)
    return state, {"episode_return": np.asarray(returns), "episode_bugs": np.asarray(bugs, np.int32)}


def play(
    game: HostEnv, pipeline: ObservationPipeline, policy, policy_params, num_episodes: int, key, seed: int = 0,
    info_keys: tuple[str, ...] = (), on_bug: Callable[[dict], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict:  # fmt: skip
    """Plays ``num_episodes`` episodes of ``policy(params, obs, key) -> action`` (one observation).

    The policy is vmapped over the games and jitted. Returns, like
    :func:`jgtest.rollout.play_episodes`, ``[E, T]`` arrays (``T`` the longest
    episode): ``actions``, ``valid``, ``telemetry`` (a :class:`Telemetry`) and
    ``info_keys``; plus ``seed`` and ``env_index`` and ``episode`` per episode
    (where it was played: the game's reset seed, slot and that slot's episode
    count). ``on_bug(fields)`` is called the first time each injected bug
    shows in this call, at once, with the fields of a bug record (``bug_id``,
    ``step``, ``episode``, ``env_index``, ``seed``, ``actions``, ``position``).
    """
    act = jax.jit(jax.vmap(policy, in_axes=(None, 0, 0)))
    start, observe = jax.jit(pipeline.reset), jax.jit(pipeline.push)
    n = game.num_envs
    frames, _ = game.reset(seed)
    obs = start(frames)
    slot_episode = np.zeros(n, np.int64)
    steps = [[] for _ in range(n)]  # per slot: the running episode's steps
    episodes, seen = [], np.zeros(game.num_bugs, bool)
    t = 0
    while len(episodes) < num_episodes:
        action = np.asarray(act(policy_params, obs, jax.random.split(jax.random.fold_in(key, t), n)))
        frames, _, terminated, truncated, info = game.step(action)
        obs = observe(obs, frames, info["autoreset"])
        tel = info["telemetry"]
        for i in range(n):
            if info["autoreset"][i]:
                continue
            record = {"action": int(action[i]), "telemetry": jax.tree.map(lambda x: x[i], tel)}
            record.update({k: np.asarray(info[k])[i] for k in info_keys})
            steps[i].append(record)
            for bug in np.flatnonzero(tel.bugs_fired[i] & ~seen):
                seen[bug] = True
                if on_bug is not None:
                    on_bug({
                        "bug_id": int(bug), "step": len(steps[i]) - 1, "episode": int(slot_episode[i]), "env_index": i,
                        "seed": seed, "actions": tuple(s["action"] for s in steps[i]),
                        "position": tuple(float(p) for p in tel.position[i]),
                    })  # fmt: skip
            if terminated[i] or truncated[i]:
                if len(episodes) < num_episodes:
                    episodes.append((i, int(slot_episode[i]), steps[i]))
                    if on_progress is not None:
                        on_progress(len(episodes), num_episodes)
                steps[i], slot_episode[i] = [], slot_episode[i] + 1
        t += 1
    return _pad_episodes(episodes, seed, info_keys)


def _pad_episodes(episodes, seed: int, info_keys) -> dict:
    """``[E, T]`` arrays of the episodes' steps, padded with zeros (``valid`` false)."""
    length = max(len(steps) for _, _, steps in episodes)

    def padded(get):
        rows = []
        for _, _, steps in episodes:
            values = np.stack([np.asarray(get(s)) for s in steps])
            rows.append(np.concatenate([values, np.zeros((length - len(steps), *values.shape[1:]), values.dtype)]))
        return np.stack(rows)

    out = {
        "actions": padded(lambda s: s["action"]).astype(np.int32),
        "valid": np.stack([np.arange(length) < len(steps) for _, _, steps in episodes]),
        "telemetry": Telemetry(**{f: padded(lambda s, f=f: getattr(s["telemetry"], f)) for f in Telemetry.__dataclass_fields__}),
        "seed": np.full(len(episodes), seed),
        "env_index": np.asarray([i for i, _, _ in episodes]),
        "episode": np.asarray([e for _, e, _ in episodes]),
    }
    out.update({k: padded(lambda s, k=k: s[k]) for k in info_keys})
    return out


def make_xla_rollout(game, pipeline: ObservationPipeline, policy, num_steps: int):
    """``(xla, rollout)``: Ms. Pac-Man's collection loop in one ``jit`` over envpool's XLA handle.

    ``game`` is an :class:`envs_bridge.ale.MsPacmanEnv`; ``policy`` as in
    :func:`play`. ``rollout(xla.handle, policy_params, key) -> (handle, totals)``
    acts, steps the game through the XLA custom call, reads the gates from RAM
    (:func:`envs_bridge.ale.gates_at`, shared with the host path) and pushes
    the frames through the pipeline, ``num_steps`` times (all games at once)
    inside ``lax.scan``. It starts by receiving a pending reset: the
    :class:`~envs_bridge.ale.XlaMsPacman` constructor's, or call
    ``game.pool.async_reset()`` before calling it again. ``totals``:
    ``game_reward`` (sum over steps and games), ``bugs_fired`` (count per gate)
    and ``episodes`` (episodes ended), as device arrays.
    """
    from envs_bridge import ale

    xla = ale.XlaMsPacman(game)
    act = jax.vmap(policy, in_axes=(None, 0, 0))

    @jax.jit
    def rollout(handle, policy_params, key):
        handle, frames, carry = xla.start(handle)
        obs = pipeline.reset(frames)

        def body(loop, k):
            handle, obs, carry, totals = loop
            action = act(policy_params, obs, jax.random.split(k, game.num_envs))
            handle, frames, carry, tel, done, autoreset = xla.step(handle, carry, action)
            obs = pipeline.push(obs, frames, autoreset)
            totals = {
                "game_reward": totals["game_reward"] + tel.game_reward.sum(),
                "bugs_fired": totals["bugs_fired"] + tel.bugs_fired.sum(axis=0),
                "episodes": totals["episodes"] + done.sum(),
            }
            return (handle, obs, carry, totals), None

        totals = {"game_reward": jnp.float32(0), "bugs_fired": jnp.zeros(game.num_bugs, jnp.int32), "episodes": jnp.int32(0)}
        (handle, _, _, totals), _ = jax.lax.scan(body, (handle, obs, carry, totals), jax.random.split(key, num_steps))
        return handle, totals

    return xla, rollout


def xla_rollout(game, pipeline: ObservationPipeline, policy, policy_params, key, num_steps: int):
    """One call of :func:`make_xla_rollout`'s loop (builds and compiles it: to time or repeat
    the loop, build it once with :func:`make_xla_rollout`). Returns its ``totals``."""
    xla, rollout = make_xla_rollout(game, pipeline, policy, num_steps)
    _, totals = rollout(xla.handle, policy_params, key)
    return totals
