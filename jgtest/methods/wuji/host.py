"""Wuji on a bridged game (``vizdoom:SCENARIO``, :func:`run_on_host`): the device run's jitted
search (:mod:`jgtest.methods.wuji.search`) with the games stepped on the host (:class:`HostGames`).

* chosen: policies read the game's state features scaled to [0, 1], and that vector bucketed is
  Wuji's state, because the paper's policies read "a fixed-length vector" (§V-A4, Def. 3);
* chosen: A2C trains a learner on its ``runs_per_eval`` games, because 8 each would be 240 engines;
* chosen: no resume, because the engines' state lives in this process.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from jgtest import host_loop
from jgtest.agents.wuji_a2c import WujiA2C
from jgtest.checkpoint import config_fingerprint
from jgtest.coverage import DistinctStates
from jgtest.errors import BadInput, ResumeRefused
from jgtest.files import jsonable, write_json_atomically
from jgtest.methods.wuji.bookkeeping import Bookkeeper, Lineage, Tally, front_json, run_summary
from jgtest.methods.wuji.config import WujiConfig
from jgtest.methods.wuji.search import learner_config, offspring, survivors
from jgtest.methods.wuji.strategies import REGISTRY, SearchState, run_generations
from jgtest.nets import floored_log_probs
from jgtest.records import BugRecordWriter
from jgtest.run_dir import begin_campaign
from jgtest.types import Progress, Transition


class FeatureSpec(host_loop.HostGameSpec):
    """A bridged game's state features, scaled to [0, 1], as a gymnax environment's observation:
    what sizes :class:`jgtest.agents.wuji_a2c.WujiA2C`'s network and Wuji's states for it. Only the
    spaces and the metadata are real; the host plays the game."""

    def __init__(self, game):
        self.num_features = len(game.feature_bounds[0])
        super().__init__(game, observation=spaces.Box(0.0, 1.0, (self.num_features,), jnp.float32))
        self.bug_names = game.bug_names

    def state_features(self, obs: jax.Array) -> jax.Array:
        return obs

    def state_feature_bounds(self, params) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.num_features, np.float32), np.ones(self.num_features, np.float32)


@dataclasses.dataclass
class Row:
    """One lockstep step of the games: scaled features after it, reward, ends, restarts,
    telemetry."""

    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    autoreset: np.ndarray
    telemetry: object


class HostGames:
    """A run's games in lockstep: their scaled features, and each game's episode and actions so far
    (what a record needs to replay)."""

    def __init__(self, game, seed: int):
        self.game, self.seed = game, int(seed)
        low, high = (np.asarray(b, np.float32) for b in game.feature_bounds)
        self._low, self._span = low, np.maximum(high - low, 1e-6)
        self.episode = np.zeros(game.num_envs, np.int64)
        self.traces: list[list[int]] = [[] for _ in range(game.num_envs)]
        self._next_episode = 0

    def scaled(self, info: dict) -> np.ndarray:
        return np.clip(
            (np.asarray(info["features"], np.float32) - self._low) / self._span, 0.0, 1.0
        )

    def start(self) -> np.ndarray:
        """Every game at a fresh episode of the run: the scaled features."""
        episode = self._next_episode
        _, info = self.game.reset(self.seed, episode=episode)
        self.episode[:] = episode
        self.traces = [[] for _ in range(self.game.num_envs)]
        return self.scaled(info)

    def step(self, actions: np.ndarray) -> Row:
        _, reward, terminated, truncated, info = self.game.step(actions)
        autoreset = np.asarray(info["autoreset"], bool)
        self.episode += autoreset
        for g, action in enumerate(actions.tolist()):
            if autoreset[g]:
                self.traces[g] = []
            else:
                self.traces[g].append(action)
        self._next_episode = max(self._next_episode, int(self.episode.max()) + 1)
        return Row(
            self.scaled(info),
            np.asarray(reward, np.float32),
            terminated,
            truncated,
            autoreset,
            info["telemetry"],
        )


class HostSearch:
    """Wuji's jitted pieces for a bridged game's features: ``P`` policies acting on ``[P, k, F]``
    observations, A2C updates of ``P`` learners and their early stop, the states' hashes, breeding
    and selection."""

    def __init__(self, spec: FeatureSpec, config: WujiConfig, games_per_member: int):
        # drl's one learner trains a population's steps per child (search.learner_config)
        a2c_config = dataclasses.replace(learner_config(config), num_envs=games_per_member)
        self.a2c = a2c = WujiA2C(
            spec, a2c_config, spec.default_params.max_steps_in_episode, config.num_buckets
        )
        self.hparams = hparams = config.a2c_hparams

        def act(variables, obs, key):
            """One policy's actions for its games' observations ``[k, F]``: ``(action, value, log
            π(action))``."""
            logits, value = a2c.network.apply(variables, obs)
            log_p = floored_log_probs(logits, hparams.min_action_prob)
            action = jax.random.categorical(key, log_p)
            return action, value, jnp.take_along_axis(log_p, action[:, None], axis=-1)[:, 0]

        self.act = jax.jit(
            lambda variables, obs, key: jax.vmap(act)(
                variables, obs, jax.random.split(key, obs.shape[0])
            )
        )
        #: Each policy's argmax actions for its games' observations ``[P, k, F]`` (greedy
        #: evaluation, :data:`jgtest.methods.wuji.config.EVALUATIONS`).
        self.greedy = jax.jit(
            jax.vmap(jax.vmap(a2c.greedy_policy, in_axes=(None, 0, None)), in_axes=(0, 0, None))
        )
        self.learn = jax.jit(
            jax.vmap(lambda learner, traj, valid: a2c.learn(learner, traj, hparams, valid))
        )
        self.trains = jax.jit(jax.vmap(a2c.trains))
        self.end_round = jax.jit(jax.vmap(a2c.end_round))
        self.init_variables = jax.jit(jax.vmap(a2c.init_variables))
        self.init_learner = jax.jit(jax.vmap(a2c.init_learner))
        self.hashes = jax.jit(a2c.states.hashes)
        layers = a2c.network.layer_names()
        self.offspring = jax.jit(
            lambda key, population, fitness: offspring(
                key, population, fitness, config.variation, layers
            )
        )
        self.survivors = jax.jit(survivors, static_argnames="multi")


class HostPlayer:
    """Plays a run's phases on its games: evaluations, A2C fine-tuning and random play, each step
    counted by the run's :class:`jgtest.methods.wuji.bookkeeping.Bookkeeper`."""

    def __init__(
        self,
        search: HostSearch,
        games: HostGames,
        book: Bookkeeper,
        config: WujiConfig,
        key: jax.Array,
    ):
        self.search, self.games, self.book, self.config, self.key = search, games, book, config, key
        self.members = REGISTRY[config.strategy].members(config)
        self.per_member = games.game.num_envs // self.members
        self._random = np.random.default_rng(config.seed)
        self._random_obs = None

    def spent(self) -> bool:
        return self.book.spent()

    def breed(self, key, population, fitness):
        return self.search.offspring(key, population, fitness)

    def select(self, candidates, scores, multi: bool):
        return self.search.survivors(candidates, scores, multi)

    def _act(self, variables, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each game's action from its member's policy, with its value and ``log π(action)``,
        ``[G]`` each."""
        self.key, key = jax.random.split(self.key)
        out = self.search.act(variables, obs.reshape(self.members, self.per_member, -1), key)
        return tuple(np.asarray(x).reshape(-1) for x in out)

    def _step(
        self, actions: np.ndarray, live: np.ndarray | None, phase: str
    ) -> tuple[Row, np.ndarray]:
        """Steps the games and counts the step of each ``live`` game (default: those not
        restarting); ``(row, live)``."""
        row = self.games.step(actions)
        live = ~row.autoreset if live is None else live
        hashes = np.asarray(self.search.hashes(row.obs))
        self.book.stepped(row.telemetry, live, hashes, self.games, phase)
        return row, hashes

    def _evaluation_actions(self, policies, obs: np.ndarray) -> np.ndarray:
        """Each game's action in an evaluation (``config.evaluation``), ``[G]``."""
        if self.config.evaluation == "sampled":
            return self._act(policies, obs)[0]
        shaped = obs.reshape(self.members, self.per_member, -1)
        return np.asarray(self.search.greedy(policies, shaped, None)).reshape(-1)

    def evaluate(self, policies) -> jax.Array:
        """Each policy's (ES, RS), ``float32[P, 2]``: the distinct states (Def. 3) and discounted
        return (Def. 1) of one episode on each of its games, averaged over them."""
        obs = self.games.start()
        ended = np.zeros(len(obs), bool)
        returns = np.zeros(len(obs))
        seen: list[set] = [set() for _ in range(len(obs))]
        for t in range(self.games.game.max_steps_in_episode):
            row, hashes = self._step(self._evaluation_actions(policies, obs), ~ended, "evaluation")
            returns += np.where(ended, 0.0, row.reward * self.search.hparams.gamma**t)
            for g in np.flatnonzero(~ended):
                seen[g].add(hashes[g].tobytes())
            ended |= row.terminated | row.truncated
            obs = row.obs
            if ended.all():
                break
        self.book.tick()
        distinct = np.array([len(s) for s in seen], np.float32).reshape(
            self.members, self.per_member
        )
        scores = np.stack(
            [distinct.mean(axis=1), returns.reshape(self.members, self.per_member).mean(axis=1)],
            axis=1,
        ).astype(np.float32)
        # NSGA-II's selection, compiled, would not say so
        if REGISTRY[self.config.strategy].evolves and np.isnan(scores).any():
            raise FloatingPointError(
                f"{self.config.strategy}: policies "
                f"{np.flatnonzero(np.isnan(scores).any(axis=1))[:10].tolist()} scored NaN (a NaN "
                "game reward?)"
            )
        return jnp.asarray(scores)

    def fine_tune(self, policies):
        """A2C on every member at once, each on its games, until each stops or the budget ends (the
        device run's rounds and stop, :meth:`jgtest.agents.wuji_a2c.WujiA2C.round`); the trained
        policies. With ``"episode"`` returns the games step in lockstep (an engine cannot pause): a
        game whose update is done plays on, unlearned, until the others end theirs, and its next
        update starts mid-episode."""
        settings, search = self.config.a2c, self.search
        episodes = settings.returns == "episode"
        learners = search.init_learner(policies)
        obs = self.games.start()
        running = np.zeros(len(obs))
        for _ in range(settings.max_rounds):
            before, ret_sum, ret_count = (
                learners,
                np.zeros(self.members, np.float32),
                np.zeros(self.members, np.int32),
            )
            for _ in range(settings.updates_per_round):
                steps = []
                playing = np.repeat(np.asarray(search.trains(learners)), self.per_member)
                played, frozen = np.zeros(len(obs), np.int32), ~playing if episodes else None
                for _ in range(search.a2c.rollout_length):
                    actions, value, log_p = self._act(learners.variables, obs)
                    row, _ = self._step(actions, None, "a2c")
                    live = ~row.autoreset if frozen is None else ~row.autoreset & ~frozen
                    running += np.where(live, row.reward, 0.0)
                    ended = np.flatnonzero((row.terminated | row.truncated) & live)
                    np.add.at(ret_sum, ended // self.per_member, running[ended])
                    np.add.at(ret_count, ended // self.per_member, 1)
                    running[ended] = 0.0
                    steps.append(
                        (
                            obs,
                            actions,
                            row.reward,
                            row.terminated,
                            row.truncated,
                            row.obs,
                            value,
                            log_p,
                            live,
                        )
                    )
                    obs = row.obs
                    if self.spent():
                        break
                    if frozen is not None:
                        played += live
                        ended_update = (row.terminated | row.truncated) & (
                            played >= settings.num_steps
                        )
                        frozen |= live & ended_update
                        if frozen.all():
                            break
                if self.spent():  # a partial rollout is not learned from: the run ends here
                    break
                learners = search.learn(learners, *self._trajectory(steps, episodes))
            learners, _ = search.end_round(
                before, learners, jnp.asarray(ret_sum), jnp.asarray(ret_count)
            )
            self.book.tick()
            if self.spent() or not bool(np.asarray(learners.active).any()):
                break
        return learners.variables

    def _trajectory(self, steps: list[tuple], episodes: bool) -> tuple[Transition, jax.Array]:
        """The rollout's rows (``[G, ...]`` each) as each learner's ``Transition [T, k]``, stacked
        over the learners, and its valid rows; with ``episodes`` (``"episode"`` returns) every
        episode end a terminal, and padded to the rollout's length with rows that are not valid
        (one compiled update)."""
        if episodes:
            last = steps[-1]
            pad = (*last[:-1], np.zeros_like(last[-1]))
            steps = [(*s[:3], s[3] | s[4], *s[4:]) for s in steps] + [pad] * (
                self.search.a2c.rollout_length - len(steps)
            )

        def column(values, dtype):
            rows = np.stack(values)  # [T, G, ...]
            rows = rows.reshape(len(values), self.members, self.per_member, *rows.shape[2:])
            return jnp.asarray(np.swapaxes(rows, 0, 1), dtype)

        obs, actions, reward, terminated, truncated, next_obs, value, log_p, live = zip(*steps)
        traj = Transition(
            column(obs, jnp.float32),
            column(actions, jnp.int32),
            column(reward, jnp.float32),
            column(terminated, bool),
            column(truncated, bool),
            column(next_obs, jnp.float32),
            column(value, jnp.float32),
            column(log_p, jnp.float32),
        )
        return traj, column(live, bool)

    def play_random(self, games: None) -> None:
        """A generation of the ``random`` strategy: uniform actions on every game for as many steps
        as an A2C phase's most, the games' episodes going on from one generation to the next (the
        engines keep them: ``games`` is ``None``)."""
        if self._random_obs is None:
            self._random_obs = self.games.start()
        settings, num_games = self.config.a2c, self.games.game.num_envs
        # a round's steps, then a row of the timeline, as on device
        for _ in range(settings.max_rounds):
            for _ in range(settings.updates_per_round * settings.num_steps):
                self._step(
                    self._random.integers(0, self.games.game.num_actions, num_games), None, "random"
                )
                if self.spent():
                    break
            self.book.tick()
            if self.spent():
                break


def run_on_host(
    config: WujiConfig, out_dir: str | Path, progress: Progress | None = None, resume: bool = False
) -> dict:
    """Runs one strategy and seed of a Wuji campaign on a bridged game in ``out_dir``: the device
    run's files (:func:`jgtest.methods.wuji.device.run_on_device`) but ``checkpoints/``.

    The policies' input and Wuji's state are the game's state features (``info["features"]``;
    ViZDoom's game variables: position, angle, health, ammunition, kills, items), each scaled to
    [0, 1] by its range (``feature_bounds``, :class:`FeatureSpec`). A run plays
    ``population × runs_per_eval`` games, one engine each. A policy's evaluation plays one episode
    on each of its ``runs_per_eval`` games, every game from a fresh episode of the run (numbered up
    over the run, so each record replays on the bare game:
    :func:`jgtest.host_loop.replay_host_record`); ``drl``'s one policy is scored, and its one
    learner trained, on all of them. A2C's episodes go on from round to round, as on device; a step
    that only restarts a game (``autoreset``) is not a transition
    (:meth:`jgtest.agents.wuji_a2c.WujiA2C.update`'s ``valid``). The ``random`` strategy plays
    uniform actions on all the games, a generation as many steps as an A2C phase's most. Budgets are
    checked after every lockstep row while training or playing at random; an evaluation plays its
    episodes to their ends and counts only the rows within the budget, as a device call does. The
    bugs are the bridge's oracles' (ViZDoom's: a crash, stuck, the assertions over the game
    variables).

    Args:
      config: the run: its ``strategy`` and ``seed``.
      out_dir: the run directory (created if missing).
      progress: called after each generation with ``(generation, generations, bugs found)``.
      resume: refused: a killed run keeps the records it wrote (each the moment it was found) and
        is run again.

    Raises:
      ResumeRefused: ``resume`` (the engines' state is in this process).
      BadInput: the game cannot be made with the config's options, or reports no state features.
    """
    if resume:
        raise ResumeRefused(
            f"a Wuji campaign on {config.game} cannot resume (the games' state is in their "
            "process): run it again"
        )
    out_dir = Path(out_dir)
    strategy = REGISTRY[config.strategy]
    num_members = strategy.members(config)
    per_member = config.runs_per_eval * strategy.learner_games(config)
    try:
        game = host_loop.host_game(
            config.game,
            num_envs=num_members * per_member,
            seed=config.seed,
            **dict(config.game_kwargs),
        )
    # an unknown game or option: before anything is written
    except (ValueError, TypeError) as error:
        raise BadInput(str(error)) from None
    with game:
        if game.feature_bounds is None:
            raise BadInput(
                f"{config.game} reports no state features (info['features'] and feature_bounds), "
                "which Wuji's policies read"
            )
        spec = FeatureSpec(game)
        search = HostSearch(spec, config, per_member)
        out_dir.mkdir(parents=True, exist_ok=True)
        begin_campaign(
            out_dir,
            {"method": "wuji", **jsonable(dataclasses.asdict(config)), "games": game.num_envs},
            config_fingerprint(config),
            False,
        )
        with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
            start = time.perf_counter()
            book = Bookkeeper(
                spec,
                config,
                dict(config.game_kwargs),
                writer,
                start,
                Tally.empty(spec.num_bugs, spec.num_cells),
                out_dir / "timeline.jsonl",
                DistinctStates(),
            )
            key, k_init = jax.random.split(jax.random.fold_in(jax.random.key(config.seed), 1))
            player = HostPlayer(
                search, HostGames(game, config.seed), book, config, jax.random.fold_in(key, 2)
            )
            state = SearchState.create(None, jnp.zeros((num_members, 2), jnp.float32), key)
            if not strategy.random:
                population = search.init_variables(jax.random.split(k_init, num_members))
                state = state.replace(population=population, objectives=player.evaluate(population))
            lineage = Lineage(out_dir / "lineage.jsonl", 0)

            def after_generation(generation: int, state: SearchState) -> None:
                if not strategy.random:  # no fresh re-score: the engines' games all count
                    lineage.add(generation, state)
                if progress is not None:
                    found = int((~np.isnan(book.found_at)).sum())
                    progress(generation, config.generations, found)

            state, generations = run_generations(config, state, player, 0, after_generation)
    summary = {
        **run_summary(config, spec, book, generations, time.perf_counter() - start),
        "lineage": lineage.rows,
        "games": game.num_envs,
    }
    write_json_atomically(out_dir / "summary.json", summary)
    if not strategy.random:
        write_json_atomically(out_dir / "population.json", front_json(np.asarray(state.objectives)))
    return summary
