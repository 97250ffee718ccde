"""The host loop: jgtest's jitted agents playing and learning on bridged games.

A bridged game (:mod:`envs_bridge`, SPEC §4) steps on the host, in numpy; the agent stays the
on-device one. Each step calls the agent's jitted ``act``, steps the game and passes the frames
through the on-device :class:`jgtest.envs.wrappers.ObservationPipeline`: :func:`train_dqn` learns,
:func:`play` plays a policy's episodes, :func:`host_game` builds a game by name.

* chosen: autoreset steps are never learned from, because they are not transitions.
* chosen: the command line turns off JAX's asynchronous CPU dispatch, because this loop pays its
  thread hand-off every step (``benchmarks/bridge_throughput.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import environment, spaces

import envs_bridge
from envs_bridge.protocol import DeviceTelemetry, HostEnv
from jgtest.envs.base import check_recorded_bug
from jgtest.envs.wrappers import ObservationPipeline
from jgtest.types import Telemetry

is_host_game = envs_bridge.is_host_game
#: What a bridged game fails with (:class:`envs_bridge.protocol.BridgeError`): a crash, a hang, a
#: bad frame.
GameFault = envs_bridge.protocol.BridgeError


def host_game_signals(name: str, options: dict) -> frozenset[str]:
    """The signals (:mod:`jgtest.signals`) the bridged game ``name`` provides with ``options``,
    without starting it."""
    return frozenset(envs_bridge.game_class(name).declared_signals(name, options))


def replay_host_record(record, every_bug: bool = False) -> np.ndarray:
    """Plays a bridged game's bug record again, on one fresh game built as the campaign built it
    (``first_game`` its slot) and started at its episode: ``bool[T]``, whether its bug fired at each
    of its actions (``every_bug``: ``bool[T, num_bugs]``, every bug's). A low-FPS record's bug is
    its cell (RELINE's point): whether the replay is there, its render time measured anew, not
    compared (render times vary from run to run; RELINE's replay check says by how much).

    Raises:
      ValueError: a game that does not start its episodes from a seed
        (:attr:`envs_bridge.protocol.HostEnv.replayable`).
    """
    if every_bug:
        return _host_replay(record, lambda frames, telemetry: telemetry.bugs_fired[0])
    at_point = record.kind == "low_fps"
    read = (
        (lambda frames, telemetry: telemetry.cell[0] == record.bug_id)
        if at_point
        else (lambda frames, telemetry: telemetry.bugs_fired[0, record.bug_id])
    )
    return _host_replay(record, read).astype(bool)


def replay_host_frames(record) -> np.ndarray:
    """``uint8[T, H, W, C]``: the frame after each of a bridged game's record's actions, replayed as
    :func:`replay_host_record` replays it (a clip of the bug for the report)."""
    return _host_replay(record, lambda frames, telemetry: frames[0])


def _host_replay(record, read) -> np.ndarray:
    """``read(frames, telemetry)`` after each of the record's actions, on one fresh game started at
    its episode, stacked: ``[T, ...]``, filled in place (a bool a step for a bug's column, not a
    Python object a step: a long trace's replay holds no more than its answer)."""
    if not envs_bridge.game_class(record.game).replayable:
        raise ValueError(
            f"{record.game} does not start its episodes from a seed, so its records cannot "
            "be replayed"
        )
    with envs_bridge.make(
        record.game, num_envs=1, seed=record.seed, first_game=record.env_index, **record.game_kwargs
    ) as game:
        # a low-FPS record's bug_id is its place, not a bug of the table
        if record.kind != "low_fps":
            check_recorded_bug(record.game, game.bug_kinds, record.bug_id, record.kind)
        game.reset(record.seed, episode=record.episode)
        out = None
        for t, action in enumerate(record.actions):
            frames, _, _, _, info = game.step(np.asarray([action]))
            value = np.asarray(read(frames, info["telemetry"]))
            if out is None:
                out = np.empty((len(record.actions), *value.shape), value.dtype)
            out[t] = value
    return out


def atari_cell_sources() -> dict[str, str]:
    """Each Atari game's source of cells: ``"ram"`` (an annotated position) or ``"frame hash"``
    (:mod:`envs_bridge.atari`)."""
    from envs_bridge.atari import cells_from, known_games

    return {game: cells_from(game) for game in known_games()}


def host_game(name: str, num_envs: int = 1, seed: int = 0, actors: int = 0, **options) -> HostEnv:
    """The bridged game ``name`` (see :func:`envs_bridge.make`)."""
    return envs_bridge.make(name, num_envs=num_envs, seed=seed, actors=actors, **options)


class HostGameSpec(environment.Environment):
    """A host game's spaces, as the agent sees them after ``pipeline`` (or as ``observation`` says:
    another view of the game, e.g. Wuji's state features), as a gymnax env.

    Only the spaces and the metadata (``num_cells``, ``bug_kinds``, the
    episode cap) are real: the game is stepped by the host loop, so ``reset``
    and ``step`` refuse to run.
    """

    def __init__(
        self,
        game: HostEnv,
        pipeline: ObservationPipeline | None = None,
        observation: spaces.Box | None = None,
    ):
        super().__init__()
        self.game_name = game.name
        self._observation = observation or spaces.Box(
            0, 255, (*pipeline.frame_shape, pipeline.num_frames), jnp.uint8
        )
        self.obs_shape = self._observation.shape
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
        return self._observation

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(self._num_actions)

    def reset_env(self, key, params):
        raise NotImplementedError(
            f"{self.game_name} runs on the host: play it with jgtest.host_loop"
        )

    def step_env(self, key, state, action, params):
        raise NotImplementedError(
            f"{self.game_name} runs on the host: play it with jgtest.host_loop"
        )


def spec_game(game: HostEnv, pipeline: ObservationPipeline):
    """``(HostGameSpec, params)``, the ``game`` argument of ``make_agent`` for a host game."""
    spec = HostGameSpec(game, pipeline)
    return spec, spec.default_params


def _subset(tree, rows: np.ndarray):
    return jax.tree.map(lambda x: x[rows], tree)


def train_dqn(
    agent,
    game: HostEnv,
    pipeline: ObservationPipeline,
    hparams,
    key,
    num_steps: int,
    reward: Callable[[np.ndarray, np.ndarray, dict], np.ndarray] | None = None,
    seed: int = 0,
    on_progress: Callable[[int, int], None] | None = None,
    *,
    state=None,
    behaviour=None,
    max_episodes: int | None = None,
    record: tuple[str, ...] | None = None,
    on_bug: Callable[[dict], None] | None = None,
):
    """Trains a DQN agent (:func:`jgtest.agents.dqn.make_agent`) on a host game.

    Each step: the agent's ε-greedy ``act`` (jitted) → ``game.step`` → the
    pipeline → the agent's ``update`` (jitted: replay buffer, gradient step when
    due, target sync) on the step's transitions, skipping ``autoreset`` steps.
    A game with an intro (``game.intro_steps``) plays it with its noop action at the start of
    every episode: those steps stay in the episode's trace (``record``, ``on_bug``) but are not
    the agent's: no transitions, no return, not counted in ``num_steps``.

    Args:
      agent: a DQN agent (:class:`jgtest.agents.base.Agent`) made for ``spec_game(game, pipeline)``.
      game: the host game (``num_envs`` must equal the agent's ``num_envs``).
      pipeline: the observation pipeline.
      hparams: ``DQNHyperparams``.
      key: PRNG key (network init, exploration, replay sampling).
      num_steps: environment steps in total (over all games).
      reward: ``(game_reward, terminated, info) -> float32[N]``, the training
        reward, called on every step, ``autoreset`` ones included (default: the game's).
      seed: the game's reset seed.
      on_progress: ``(steps done, num_steps)`` after every 1,000 steps.
      state: a ``DQNState`` to continue from (its replay buffer, counters and
        networks; the game is reset and its observations replace the state's).
      behaviour: ``(policy, params)``: the actions come from
        ``policy(params, obs, key)`` (vmapped) instead of the agent's, which
        still learns from them, off-policy (RELINE's warm-up, §4.1.3).
      max_episodes: stop after this many episodes too.
      record: keep the episodes played, with these ``info`` keys besides the
        telemetry (``()`` for none): the steps of a campaign that evaluates
        while it trains (RELINE's kart, §4.1.3).
      on_bug: called the first time each injected bug shows, at once, with a bug
        record's fields (as :func:`play`'s): a campaign that counts its training
        episodes (RELINE's package on Ms. Pac-Man) writes its records as found.

    Returns:
      ``(final DQNState, dict)``: per-episode ``episode_return`` (the training
      reward), ``episode_bugs`` (how many injected bugs showed) and
      ``episode_bugs_found`` (``bool[E, num_bugs]``: which), in the order the
      episodes ended; ``learning_s`` and ``learning_steps``, the wall seconds and
      steps from the agent's ``learning_starts`` on (when it got there); with
      ``record``, ``episodes``: the episodes that ended, as :func:`play` returns them.
    """
    if game.num_envs != agent.config.num_envs:
        raise ValueError(
            f"the agent steps {agent.config.num_envs} games, {game.name} has {game.num_envs}"
        )
    reward = reward or (lambda r, terminated, info: r)
    start, observe = jax.jit(pipeline.reset), jax.jit(pipeline.push)

    # The state is donated so the replay buffer is updated in place (a copy of a 10k buffer of
    # 84x84x4 frames a step cost ~0.8 s on 2 CPU cores); its observations travel in ``items``.
    @partial(jax.jit, donate_argnums=0)
    def learn(state, items, key, hparams):
        state, metrics = agent.update(state, items, key, hparams)
        return state.replace(obs=items["next_obs"]), metrics

    # Only what acting reads goes in: a jitted function returning the state would return its
    # replay buffer too, and XLA copies an undonated input it returns (≈ 170 ms a step for a
    # 10k buffer of 84x84x4 frames, where acting costs ≈ 1 ms).
    @jax.jit
    def choose_agent(params, obs, key, timesteps, hparams):
        key, k_act, k_sample = jax.random.split(key, 3)
        return key, agent.act(params, obs, k_act, hparams, timesteps).action, k_sample

    def choose(state, hparams):
        key, action, k_sample = choose_agent(
            state.params, state.obs, state.key, state.timesteps, hparams
        )
        return state.replace(key=key), action, k_sample

    if behaviour is not None:
        behaviour_policy, behaviour_params = behaviour
        act_behaviour = jax.jit(jax.vmap(behaviour_policy, in_axes=(None, 0, 0)))
        choose_learner = choose

        def choose(state, hparams):
            state, _, k_sample = choose_learner(state, hparams)
            keys = jax.random.split(jax.random.fold_in(k_sample, 1), game.num_envs)
            return state, act_behaviour(behaviour_params, state.obs, keys), k_sample

    frames, _ = game.reset(seed)
    state = (
        jax.jit(agent.init_learner)(key, start(frames), hparams)
        if state is None
        else state.replace(obs=start(frames))
    )
    returns, bugs, episodes = [], [], []
    history = None if record is None and on_bug is None else StepHistory(game.num_envs)
    seen = np.zeros(game.num_bugs, bool)
    running_return, running_bugs = (
        np.zeros(game.num_envs),
        np.zeros((game.num_envs, game.num_bugs), bool),
    )
    done_steps, every = 0, max(1_000, game.num_envs)
    learning_from = None  # (wall clock, steps) when the agent started learning
    intro = _Intro(game)
    while done_steps < num_steps and (max_episodes is None or len(returns) < max_episodes):
        state, action, k_sample = choose(state, hparams)
        action, waiting = intro.actions(np.asarray(action))
        frames, game_reward, terminated, truncated, info = game.step(action)
        live = ~info["autoreset"]  # steps of an episode (its intro included)
        valid = live & ~waiting  # the agent's steps: transitions, returns, the step budget
        next_obs = observe(state.obs, frames, info["autoreset"])
        train_reward = np.asarray(reward(game_reward, terminated, info), np.float32)
        items = {
            "obs": state.obs,
            "action": action.astype(np.int32),
            "reward": train_reward,
            "terminated": np.asarray(terminated, bool),
            "next_obs": next_obs,
        }
        if valid.all():
            state, _ = learn(state.replace(obs=None), items, k_sample, hparams)
        elif valid.any():
            state, _ = learn(
                state.replace(obs=None), _subset(items, np.flatnonzero(valid)), k_sample, hparams
            )
        state = state.replace(obs=next_obs)
        intro.advance(info["autoreset"])
        if history is not None:
            history.append(
                action, info["telemetry"], {k: np.asarray(info[k]) for k in record or ()}, live
            )
            report_first_bugs(info["telemetry"], live, seen, history, seed, on_bug)
        running_return = np.where(live, running_return + np.where(valid, train_reward, 0.0), 0.0)
        running_bugs = np.where(live[:, None], running_bugs | info["telemetry"].bugs_fired, False)
        for i in np.flatnonzero(live & (terminated | truncated)):
            returns.append(float(running_return[i]))
            bugs.append(running_bugs[i].copy())
            if history is not None:
                if record is not None:
                    episodes.append((int(i), history.count[i], history.episode(i)))
                history.end_episode(i)
        before, done_steps = done_steps, done_steps + int(valid.sum())
        if learning_from is None and int(state.timesteps) >= agent.config.learning_starts:
            learning_from = (time.perf_counter(), done_steps)
        if on_progress is not None and done_steps // every > before // every:
            on_progress(min(done_steps, num_steps), num_steps)
    found = np.asarray(bugs, bool).reshape(len(bugs), game.num_bugs)
    stats = {
        "episode_return": np.asarray(returns),
        "episode_bugs": found.sum(axis=1).astype(np.int32),
        "episode_bugs_found": found,
    }
    if learning_from is not None:  # the speed of the loop once it learns (act, step, update)
        stats["learning_s"], stats["learning_steps"] = (
            time.perf_counter() - learning_from[0],
            done_steps - learning_from[1],
        )
    if record is not None:
        stats["episodes"] = _pad_episodes(episodes, seed) if episodes else None
    return state, stats


@lru_cache(maxsize=32)
def make_player(
    policy, pipeline: ObservationPipeline, num_envs: int, telemetry: DeviceTelemetry | None = None
):
    """``(start, advance)``: :func:`play`'s per-step device work.

    ``start(params, frames, raw, key) -> (carry, action)`` begins the frame rings with the
    reset frames and picks step 0's actions; ``advance(params, carry, frames, raw,
    autoreset) -> (carry, telemetry, action)`` pushes the last step's frames
    (:meth:`~jgtest.envs.wrappers.ObservationPipeline.ring_push`: one slot written a game,
    the ordered stack built only for the policy), computes that step's telemetry from the
    game's ``raw`` arrays when the game offers a :class:`~envs_bridge.protocol.DeviceTelemetry`
    (``telemetry``: ``raw`` is its :meth:`~envs_bridge.protocol.DeviceTelemetry.take` of the
    ``info``; else ``raw`` is ``{}`` and the telemetry ``None``) and picks the next
    actions. Step ``t``'s keys are ``split(fold_in(key, t), num_envs)``, made on device
    from the key and step count the carry holds; actions and the telemetry
    (:func:`pack_telemetry`'d: one array) come out. ``advance`` takes ``carry`` as donated:
    pass the one it last returned. Built once per ``(policy, pipeline, num_envs,
    telemetry)`` (cached), so repeated :func:`play` calls do not re-trace.

    ``advance`` is two jitted calls, the ring push (three kernels) and the decision
    (telemetry, keys, policy), not one: XLA's CPU runtime runs a program on the calling
    thread when it has at most 8 kernels or when all its buffers are at most 512 bytes,
    and otherwise hands its kernels to its thread pool. One program holding both the
    frames (56 KB at 8 games) and the keys' dozens of small kernels went to the pool
    every step; split, the push passes by its kernel count and the decision, for a
    policy that does not read the frames (the random agent), by its buffers. At 8 Ms.
    Pac-Man games that took the loop from +16.1% to +12.3% over raw envpool on 2 cores
    (``benchmarks/bridge_throughput.py``, the paired rounds of its first section;
    ``benchmarks/results/bridge_throughput.json``).
    """
    act = jax.vmap(policy, in_axes=(None, 0, 0))

    def choose(params, ring, key, t):
        return act(
            params, pipeline.ring_view(ring), jax.random.split(jax.random.fold_in(key, t), num_envs)
        )

    @jax.jit
    def start(params, frames, raw, key):
        ring = pipeline.ring_reset(frames)
        tally = None if telemetry is None else telemetry.init(raw)
        return (ring, (tally, key, jnp.int32(0))), choose(params, ring, key, 0)

    push = jax.jit(pipeline.ring_push, donate_argnums=0)  # the ring written in place

    @partial(jax.jit, donate_argnums=1)
    def decide(params, state, ring, raw, autoreset):
        tally, key, t = state
        tel = None
        if telemetry is not None:
            tally, tel = telemetry.step(tally, raw, autoreset)
            tel = pack_telemetry(tel)
        return (tally, key, t + 1), tel, choose(params, ring, key, t + 1)

    def advance(params, carry, frames, raw, autoreset):
        ring, state = carry
        ring = push(ring, frames, autoreset)
        state, tel, action = decide(params, state, ring, raw, autoreset)
        return (ring, state), tel, action

    return start, advance


def pack_telemetry(telemetry: Telemetry) -> jax.Array:
    """A batched :class:`Telemetry` as one ``int32[N, 6 + num_bugs]`` array, bit for bit
    (float fields bitcast): columns ``x, y, cell, game_reward, frame_time_ms, crashed,
    bugs...``. One output of a jitted call where six cost ≈ 0.07 ms more a call on 2 CPU
    cores (XLA's CPU runtime; measured at 8 games: 0.09 ms against 0.014 for the whole step).
    :func:`unpack_telemetry` reads it back on the host."""
    as_int = lambda x: jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32)
    columns = [
        as_int(telemetry.position),
        telemetry.cell[:, None].astype(jnp.int32),
        as_int(telemetry.game_reward)[:, None],
        as_int(telemetry.frame_time_ms)[:, None],
        telemetry.crashed[:, None].astype(jnp.int32),
        telemetry.bugs_fired.astype(jnp.int32),
    ]
    return jnp.concatenate(columns, axis=1)


def unpack_telemetry(packed) -> Telemetry:
    """The numpy :class:`Telemetry` of a :func:`pack_telemetry` array (views, no copies but the
    flags)."""
    packed = np.asarray(packed)
    floats = packed.view(np.float32)
    return Telemetry(
        position=floats[:, 0:2],
        cell=packed[:, 2],
        game_reward=floats[:, 3],
        frame_time_ms=floats[:, 4],
        crashed=packed[:, 5].astype(bool),
        bugs_fired=packed[:, 6:].astype(bool),
    )


def play(
    game: HostEnv,
    pipeline: ObservationPipeline,
    policy,
    policy_params,
    num_episodes: int,
    key,
    seed: int = 0,
    info_keys: tuple[str, ...] = (),
    on_bug: Callable[[dict], None] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Plays ``num_episodes`` episodes of ``policy(params, obs, key) -> action`` (one observation).

    The policy is vmapped over the games and jitted with the pipeline, one
    call per step (:func:`make_player`); a game that offers its telemetry as
    JAX functions (``game.device_telemetry``, e.g. Ms. Pac-Man's RAM) is
    stepped with ``step_raw`` and its telemetry computed in that call. Returns, like
    :func:`jgtest.rollout.play_episodes`, ``[E, T]`` arrays (``T`` the longest
    episode): ``actions``, ``valid``, ``telemetry`` (a :class:`Telemetry`) and
    ``info_keys``; plus ``seed``, ``env_index`` and ``episode`` per episode
    (where it was played: the game's reset seed, slot and that slot's episode
    count), in the order the episodes ended. Game ``i`` contributes its first
    ``⌊E/N⌋`` episodes (one more for ``i < E mod N``): taking the first ``E``
    to end over all games would leave out the longest ones still running.
    ``on_bug(fields)`` is called the
    first time each injected bug shows in this call, at once, with the fields
    of a bug record (``bug_id``, ``step``, ``episode``, ``env_index``,
    ``seed``, ``actions``, ``position``). The steps are kept as the game
    returns them, batched, and cut per game only when an episode ends or a
    bug shows.
    """
    on_device = game.device_telemetry
    start, advance = make_player(policy, pipeline, game.num_envs, on_device)
    take = (lambda info: {}) if on_device is None else on_device.take
    frames, info = game.reset(seed)
    carry, action = start(policy_params, frames, take(info), key)
    history = StepHistory(game.num_envs)
    seen = np.zeros(game.num_bugs, bool)
    quota = num_episodes // game.num_envs + (
        np.arange(game.num_envs) < num_episodes % game.num_envs
    )
    episodes, intro = [], _Intro(game)
    while len(episodes) < num_episodes:
        taken, _ = intro.actions(np.asarray(action))
        if on_device is None:
            frames, _, terminated, truncated, info = game.step(taken)
        else:
            frames, terminated, truncated, info = game.step_raw(taken)
        carry, tel, action = advance(policy_params, carry, frames, take(info), info["autoreset"])
        tel, live = (
            info["telemetry"] if on_device is None else unpack_telemetry(tel),
            ~info["autoreset"],
        )
        intro.advance(info["autoreset"])
        history.append(taken, tel, {k: np.asarray(info[k]) for k in info_keys}, live)
        report_first_bugs(tel, live, seen, history, seed, on_bug)
        for i in np.flatnonzero(live & (terminated | truncated)):
            if history.count[i] < quota[i]:
                episodes.append((int(i), history.count[i], history.episode(i)))
                if on_progress is not None:
                    on_progress(len(episodes), num_episodes)
            history.end_episode(i)
    return _pad_episodes(episodes, seed)


class _Intro:
    """A game's intro (``game.intro_steps``): the first steps of each episode, played with
    ``game.noop_action`` whatever the agent chose. ``actions`` overrides the waiting games'
    actions and says which wait; ``advance`` counts the step (``autoreset`` games restart)."""

    def __init__(self, game: HostEnv):
        self.steps, self.noop = (
            int(getattr(game, "intro_steps", 0)),
            int(getattr(game, "noop_action", 0)),
        )
        self.age = np.zeros(game.num_envs, np.int64)  # steps into the running episode
        self.none = np.zeros(game.num_envs, bool)

    def actions(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.steps:
            return actions, self.none
        waiting = self.age < self.steps
        return np.where(waiting, self.noop, actions).astype(actions.dtype), waiting

    def advance(self, autoreset: np.ndarray) -> None:
        if self.steps:
            self.age = np.where(autoreset, 0, self.age + 1)


def report_first_bugs(
    tel: Telemetry, live: np.ndarray, seen: np.ndarray, history: StepHistory, seed: int, on_bug
) -> None:
    """Marks in ``seen`` the bugs showing for the first time this step and calls ``on_bug`` with
    each one's record fields: its episode's actions so far, the step, where it was played, the
    position."""
    for i, bug in zip(*np.nonzero(tel.bugs_fired & live[:, None] & ~seen)):
        if seen[bug]:
            continue
        seen[bug] = True
        if on_bug is not None:
            actions = history.episode(i)["actions"]
            on_bug(
                {
                    "bug_id": int(bug),
                    "step": len(actions) - 1,
                    "episode": history.count[i],
                    "env_index": int(i),
                    "seed": seed,
                    "actions": tuple(int(a) for a in actions),
                    "position": tuple(float(p) for p in tel.position[i]),
                }
            )


class StepHistory:
    """The steps of each game's running episode, kept batched as the game returns them.

    ``append`` stores a step's ``[N]`` arrays as they are (no per-game work);
    ``episode(i)`` cuts game ``i``'s running episode out of them; ``end_episode(i)``
    starts its next one. Steps no running episode needs are dropped.
    """

    def __init__(self, num_envs: int):
        self.steps: list[tuple] = []  # (actions, telemetry, extras) per step, batched
        self.offset = 0  # global index of steps[0]
        self.first = np.zeros(num_envs, np.int64)  # global index of each game's episode start
        self.count = [0] * num_envs  # episodes each game has ended

    def append(self, actions, telemetry: Telemetry, extras: dict, live: np.ndarray) -> None:
        index = self.offset + len(self.steps)
        self.steps.append((actions, telemetry, extras))
        self.first[~live] = index + 1  # an autoreset step belongs to no episode
        if len(self.steps) >= 1024 and self.first.min() - self.offset >= 512:
            drop = int(self.first.min() - self.offset)
            del self.steps[:drop]
            self.offset += drop

    def episode(self, i: int) -> dict:
        """Game ``i``'s running episode so far: ``actions``, ``telemetry`` and the extras,
        ``[T, ...]``."""
        rows = self.steps[int(self.first[i]) - self.offset :]
        tel = Telemetry(
            **{
                f: np.stack([getattr(r[1], f)[i] for r in rows])
                for f in Telemetry.__dataclass_fields__
            }
        )
        extras = {k: np.stack([r[2][k][i] for r in rows]) for k in rows[0][2]}
        return {
            "actions": np.asarray([r[0][i] for r in rows], np.int32),
            "telemetry": tel,
            **extras,
        }

    def end_episode(self, i: int) -> None:
        self.first[i] = self.offset + len(self.steps)
        self.count[i] += 1


def _pad_episodes(episodes: list[tuple[int, int, dict]], seed: int) -> dict:
    """``[E, T]`` arrays of the ``(game, episode, steps)`` episodes, padded with zeros (``valid``
    false)."""
    length = max(len(steps["actions"]) for _, _, steps in episodes)

    def padded(values: np.ndarray) -> np.ndarray:
        return np.concatenate(
            [values, np.zeros((length - len(values), *values.shape[1:]), values.dtype)]
        )

    columns = jax.tree.map(
        lambda *rows: np.stack([padded(r) for r in rows]), *[steps for _, _, steps in episodes]
    )
    return {
        **columns,
        "valid": np.stack([np.arange(length) < len(steps["actions"]) for _, _, steps in episodes]),
        "seed": np.full(len(episodes), seed),
        "env_index": np.asarray([i for i, _, _ in episodes]),
        "episode": np.asarray([e for _, e, _ in episodes]),
    }


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

        totals = {
            "game_reward": jnp.float32(0),
            "bugs_fired": jnp.zeros(game.num_bugs, jnp.int32),
            "episodes": jnp.int32(0),
        }
        (handle, _, _, totals), _ = jax.lax.scan(
            body, (handle, obs, carry, totals), jax.random.split(key, num_steps)
        )
        return handle, totals

    return xla, rollout


def xla_rollout(game, pipeline: ObservationPipeline, policy, policy_params, key, num_steps: int):
    """One call of :func:`make_xla_rollout`'s loop (builds and compiles it: to time or repeat
    the loop, build it once with :func:`make_xla_rollout`). Returns its ``totals``."""
    xla, rollout = make_xla_rollout(game, pipeline, policy, num_steps)
    _, totals = rollout(xla.handle, policy_params, key)
    return totals
