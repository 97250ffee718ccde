"""Wuji: evolutionary multi-objective search plus A2C for game testing (Zheng et al., ASE 2019).

A population of policies evolves for two objectives (§IV-B): the
**exploration score** ES(π) = (1/m) Σ_i size(‖G(a_i)‖_S), the distinct states
of each of ``m`` runs averaged (states: the game's state features, by default its observation,
each cut into ``num_buckets`` equal intervals, Def. 3 and §V-C;
:class:`jgtest.coverage.ObservationStates`),
and the **winning score** RS(π) = (1/m) Σ_i Σ_t γ^t r_t, the discounted return
(Def. 1) averaged over the same runs. A generation (Algorithms 1–3):

1. children by Pareto-dominance binary tournaments, single-point crossover
   and Gaussian mutation of the weights (:func:`jgtest.evo.breed`), a network's
   layers in the order they compute, as PyTorch lists them;
2. with DRL, every child fine-tuned by A2C at once (vmap), each until it stops
   improving or its rounds run out (:mod:`jgtest.agents.wuji_a2c`);
3. NSGA-II over parents ∪ children ∪ trained children keeps the population
   size (:func:`jgtest.evo.select`).

Every game played — the ``m`` evaluation runs of every policy, every A2C
rollout and the random strategy's games — goes through the games' oracles (``telemetry.bugs_fired``), and the
first firing of each bug is written as a :class:`jgtest.report.BugRecord`
with its action trace the moment the host sees it (after each device call);
bug and gold positions are re-drawn per run (§V-A) and written with the
record, so ``jgtest replay`` reproduces it on the bare game. A run's **state
coverage** (Table V) counts the same states over every step it played, evaluation
runs, A2C rollouts and random games alike (their 64-bit hashes merged on the host,
:class:`jgtest.coverage.DistinctStates`); ``cells_covered`` counts the game's
coarser coverage cells (``telemetry.cell``, the bird's-eye maps' cells). A campaign may play
a variant of its game (:attr:`WujiConfig.game_kwargs`, e.g. a stronger boss);
the records carry those options too.

The paper's six strategies (§V-A3), :data:`STRATEGIES`: ``random`` (uniform
actions, in slot games whose episodes go on from round to round, as a learner's do, so no
step is spent on a finished episode; a generation is as many rounds as a DRL generation
trains at most), ``ea_s`` (evolution on the winning score alone), ``ea_m`` (both
objectives), ``drl`` (A2C alone, "the DRL algorithm improves the searching speed in a particular
direction", §V-B: **one** learner, trained round after round, whose rollouts play as many games at
once as a population's learners do together, so that its rounds play the same env steps),
``ea_s+drl`` and ``wuji`` (``ea_m`` + DRL).

Budgets: generations, wall-clock seconds or env steps (:class:`WujiConfig`); the paper
gave each strategy equal hours of its game servers (§V-A4), where each step cost the game, so
equal env steps are its regime on device.

Numbers: population and offspring 30 (§V-A4). ``m``, the buckets, the rates
and σ are lost or absent in the paper (see :mod:`jgtest.evo.operators` and
:class:`WujiConfig` for our choices).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import time
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np

from jgtest.agents.wuji_a2c import WujiA2C, WujiA2CConfig, WujiA2CHyperparams
from jgtest.analysis import compare_groups
from jgtest.checkpoint import Checkpointer, config_fingerprint
from jgtest.coverage import DistinctStates, ObservationStates
from jgtest.envs.registration import hashable, make
from jgtest.evo import VariationParams, breed, non_dominated_rank, ravel_population, select
from jgtest.report.records import BugRecord, BugRecordWriter, jsonable, records_to_resume
from jgtest.rollout import play_episodes
from jgtest.sharding import shard_batch

#: The states a run has covered (their hashes, :class:`jgtest.coverage.DistinctStates`), kept with its checkpoints.
_STATES_FILE = "states.npy"
#: The paper's strategies (§V-A3), in its order.
STRATEGIES = ("random", "ea_s", "ea_m", "drl", "ea_s+drl", "wuji")
_EVOLVES = {"ea_s", "ea_m", "ea_s+drl", "wuji"}
_TRAINS = {"drl", "ea_s+drl", "wuji"}
_MULTI = {"ea_m", "wuji"}


@dataclasses.dataclass(frozen=True)
class WujiConfig:
    """One Wuji campaign (one strategy, one run seed).

    Attributes:
      game: ``"BlockMaze-v0"`` or ``"CombatArena-v0"`` (any game with ``randomize``).
      game_kwargs: options for :func:`jgtest.make` as ``(name, value)`` pairs: constructor
        options (``rows``, ``late_phases``, ...) and params the runs keep (``boss_max_hp``,
        ...); a param that ``randomize`` re-draws per run is refused (:func:`check_game_kwargs`).
      strategy: one of :data:`STRATEGIES`.
      population: population and offspring size (the paper's 30); ``drl`` trains one learner on
        ``population`` times ``a2c.num_envs`` games at once (:func:`_members`).
      generations: generations to run (a budget may stop it sooner); ``None``: until
        a budget runs out.
      budget_s: wall-clock budget in seconds, checked between device calls.
      budget_steps: env-step budget: game steps played (every evaluation run, A2C rollout and
        random game; ``env_steps``), checked between device calls, so a run goes past it by
        less than a generation (a DRL generation: its last A2C round and evaluation). Equal step budgets compare strategies as
        the paper's did: its budgets were hours of a game server's time (§V-A4), each step
        costing the game, not the policy; on device the learner's compute sets the pace
        instead, and an equal wall-clock budget gives random about 2.5 times the learners'
        steps. Machine-independent, unlike ``budget_s``.
      runs_per_eval: ``m``, runs behind each policy's ES and RS (paper: not given; 4).
      num_buckets: intervals per state feature for ES (paper: lost; 10).
      seed: the run's seed (its bug and gold placement, its keys).
      a2c: the A2C learner's settings.
      variation: crossover/mutation rates and σ.
    """

    game: str = "BlockMaze-v0"
    game_kwargs: tuple[tuple[str, Any], ...] = ()
    strategy: str = "wuji"
    population: int = 30
    generations: int | None = 10
    budget_s: float | None = None
    budget_steps: int | None = None
    runs_per_eval: int = 4
    num_buckets: int = 10
    seed: int = 0
    a2c: WujiA2CConfig = WujiA2CConfig()
    variation: VariationParams = VariationParams()

    def __post_init__(self):
        object.__setattr__(self, "game_kwargs", tuple(sorted((str(k), hashable(v)) for k, v in dict(self.game_kwargs).items())))
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.generations is None and self.budget_s is None and self.budget_steps is None:
            raise ValueError("a campaign needs generations, budget_s or budget_steps")
        for name in ("generations", "budget_steps", "runs_per_eval", "num_buckets"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.population < 2:
            raise ValueError(f"population must be at least 2 (crossover needs two parents), got {self.population}")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"budget_s must be positive, got {self.budget_s}")


@functools.lru_cache(maxsize=8)
def _search(game: str, game_kwargs: tuple, runs_per_eval: int, num_buckets: int, a2c: WujiA2CConfig) -> _Search:
    """The search's jitted functions for a game, shared by every run (strategy, seed) that uses
    the same settings: a run's game params and seeds are arguments, so nothing recompiles."""
    env, params = make(game, **dict(game_kwargs))
    return _Search(env, params, runs_per_eval, num_buckets, a2c)


class _Search:
    """The jitted pieces of one game's search: evaluation of a population, A2C rounds, random play,
    breeding and NSGA-II survival."""

    def __init__(self, env, params, runs_per_eval: int, num_buckets: int, a2c: WujiA2CConfig):
        self.env, self.params = env, params  # the game as configured, before a run re-draws its bugs
        self.max_steps = int(np.asarray(params.max_steps_in_episode))
        self.a2c = WujiA2C(env, a2c, self.max_steps, num_buckets)
        self.hparams = WujiA2CHyperparams()
        states = ObservationStates(env, params, num_buckets)
        m = runs_per_eval
        discount = self.hparams.gamma ** jnp.arange(self.max_steps)

        def trace_out(out: dict) -> dict:
            """What the host needs from played episodes to write bug records and coverage."""
            tel = out["telemetry"]
            return {"actions": out["actions"], "valid": out["valid"], "fired": tel.bugs_fired, "cell": tel.cell, "position": tel.position,
                    "states": states.hashes(out["final_observation"])}  # fmt: skip

        def evaluate_one(variables, params, seed):
            policy = lambda v, obs, key: self.a2c.policy(v, obs, key, self.hparams)
            out = play_episodes(env, params, policy, variables, seed, m, self.max_steps, info_keys=("final_observation",))
            distinct = jax.vmap(states.count_distinct)(out["final_observation"], out["valid"])
            rs = jnp.sum(jnp.where(out["valid"], out["telemetry"].game_reward, 0.0) * discount, axis=1)
            scores = jnp.stack([jnp.mean(distinct.astype(jnp.float32)), jnp.mean(rs)])
            return scores, trace_out(out)

        self.evaluate = jax.jit(jax.vmap(evaluate_one, in_axes=(0, None, 0)))
        self.init_variables = jax.jit(jax.vmap(self.a2c.init_variables))
        self.init_training = jax.jit(
            lambda variables, params, seeds: (
                jax.vmap(self.a2c.init_learner)(variables), jax.vmap(self.a2c.init_slots, in_axes=(None, 0))(params, seeds)
            )
        )  # fmt: skip
        self.train_round = jax.jit(jax.vmap(lambda l, s, p, seed: self.a2c.round(l, s, p, seed, self.hparams), in_axes=(0, 0, None, 0)))
        self.offspring = jax.jit(functools.partial(_offspring, layers=self.a2c.network.layer_names()))
        self.survivors = jax.jit(_survivors, static_argnames="multi")
        self.init_random = jax.jit(jax.vmap(self.a2c.init_slots, in_axes=(None, 0)))
        self.random_round = jax.jit(jax.vmap(self.a2c.random_round, in_axes=(0, None, 0)))
        self._warm: set[tuple[str, int]] = set()

    def warm_up(self, strategy: str, population: int, params, variation: VariationParams) -> None:
        """Compiles the functions ``strategy`` calls with a population of ``population`` by calling
        each once on throwaway seeds (results dropped; everything is pure), so that the campaign's
        wall-clock budget is spent searching, not compiling: without it the first run of each
        strategy lost seconds of a short budget to XLA."""
        if (strategy, population) in self._warm:
            return
        seeds = jnp.full((population,), -1, jnp.int32)
        if strategy == "random":
            jax.block_until_ready(self.random_round(self.init_random(params, seeds), params, seeds))
        else:
            variables = self.init_variables(jax.random.split(jax.random.key(0), population))
            scores, _ = jax.block_until_ready(self.evaluate(variables, params, seeds))
            if strategy in _TRAINS:
                learners, slots = self.init_training(variables, params, seeds)
                jax.block_until_ready(self.train_round(learners, slots, params, seeds))
            if strategy in _EVOLVES:
                multi = strategy in _MULTI
                children = self.offspring(jax.random.key(0), variables, scores if multi else scores[:, 1:], variation)
                candidates = 3 if strategy in _TRAINS else 2
                jax.block_until_ready(self.survivors((variables, children, variables)[:candidates], (scores,) * candidates, multi))
        self._warm.add((strategy, population))


class _Bookkeeper:
    """Bug records the moment the host sees them, coverage (the game's cells and Wuji's states), and
    bugs over time."""

    def __init__(self, env, config: WujiConfig, game_kwargs: dict, writer: BugRecordWriter, start: float, progress: dict,
                 timeline_path: Path, states: DistinctStates):  # fmt: skip
        self.env, self.config, self.game_kwargs, self.writer, self.start = env, config, game_kwargs, writer, start
        self.found_at = np.array(progress["found_at"], np.float64)
        self.visited = np.array(progress["visited"], bool)
        self.states = states
        self.env_steps = int(progress["env_steps"])
        # (seconds, env steps, bugs found, states covered) after each device call, also appended to timeline.jsonl;
        # rows past the checkpoint (work a kill lost, to be done again) are dropped
        rows = [json.loads(line) for line in timeline_path.read_text().splitlines()] if timeline_path.exists() else []
        self.timeline = [tuple(row) for row in rows if row[1] <= self.env_steps]
        timeline_path.write_text("".join(json.dumps(row) + "\n" for row in self.timeline))
        self._timeline_path = timeline_path

    def seen(self, bug: int) -> bool:
        return not np.isnan(self.found_at[bug])

    def played(self, out: dict, seeds: np.ndarray, phase: str) -> None:
        """Episodes ``out`` (``[P, m, T]``, slot ``b`` episode 0 of run ``seeds[p]``)."""
        out = jax.device_get(out)
        valid = out["valid"]
        self.env_steps += int(valid.sum())
        self.visited[out["cell"][valid]] = True
        self.states.add(out["states"], valid)
        new = out["fired"] & valid[..., None] & np.isnan(self.found_at)
        for p, b, t, bug in zip(*np.nonzero(new)):
            if np.isnan(self.found_at[bug]):
                self._record(bug, int(seeds[p]), int(b), 0, int(t), out["actions"][p, b, : t + 1], out["position"][p, b, t], phase)
        self._tick()

    def caught(self, catch, cover, cells, seeds: np.ndarray, steps: int, phase: str) -> None:
        """Bugs a round of slot games caught (:class:`jgtest.rollout.BugCatch` per learner, or per
        group of random slots) and what it covered (``cover``, a stacked
        :class:`jgtest.agents.wuji_a2c.Covered` of the cell set ``cells``)."""
        catch, cover = jax.device_get((catch, cover))
        self.env_steps += steps
        for p in range(len(seeds)):
            self.visited[cells.members(jax.tree.map(itemgetter(p), cover.cells))] = True
        self.states.add(cover.states)
        for p, bug in zip(*np.nonzero(catch.found & np.isnan(self.found_at)[None])):
            if np.isnan(self.found_at[bug]):
                slot, episode, t = (int(v) for v in catch.where[p, bug])
                self._record(bug, int(seeds[p]), slot, episode, t, catch.actions[p, bug, : t + 1], (), phase)
        self._tick()

    def _record(self, bug, seed, slot, episode, t, actions, position, phase) -> None:
        self.found_at[bug] = time.perf_counter() - self.start
        self.writer.write(BugRecord(
            kind=self.env.bug_kinds[bug], game=self.config.game, bug_id=int(bug), step=t, episode=episode, seed=seed,
            env_index=slot, actions=tuple(int(a) for a in actions), game_kwargs=self.game_kwargs,
            position=tuple(float(v) for v in position), wall_s=round(float(self.found_at[bug]), 3),
            detail=f"{self.config.strategy} ({phase}): injected bug {bug} fired",
        ))  # fmt: skip

    def _tick(self) -> None:
        row = (round(time.perf_counter() - self.start, 3), self.env_steps, int((~np.isnan(self.found_at)).sum()), len(self.states))
        self.timeline.append(row)
        with self._timeline_path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def run_params(env, params, seed: int, game_kwargs=()) -> tuple[Any, dict]:
    """The run's game: bugs (and gold) re-drawn from ``seed`` (§V-A), and the ``jgtest.make``
    options that rebuild it (written with every bug record).

    Args:
      env: the game, built with ``game_kwargs``' constructor options.
      params: its params with ``game_kwargs``' param options.
      seed: the run's seed.
      game_kwargs: the campaign's :attr:`WujiConfig.game_kwargs`; the constructor options among
        them are written with the records as they are, the params as the run's values.

    Raises:
      ValueError: a param option that ``env.randomize`` re-draws (:func:`check_game_kwargs`).
    """
    check_game_kwargs(env, params, game_kwargs)
    drawn = _jitted_randomize(env)(jax.random.fold_in(jax.random.key(seed), 0x5EED), params)
    fields = {field.name for field in dataclasses.fields(params)}
    options = dict(game_kwargs)
    overrides = {name: value for name, value in options.items() if name not in fields}
    for name in sorted(fields):
        if not _same(getattr(env.default_params, name), getattr(drawn, name)):
            overrides[name] = np.asarray(getattr(drawn, name)).tolist()
    return drawn, overrides


@functools.lru_cache(maxsize=8)
def _jitted_randomize(env) -> Callable:
    """``env.randomize`` compiled once per game (a fresh ``jax.jit`` of a bound method compiles
    again: a campaign's runs drew their bugs through 12 compilations of it, 9 s at 2 seeds)."""
    return jax.jit(env.randomize)


def check_game_kwargs(env, params, game_kwargs) -> None:
    """Refuses a param option that the runs re-draw: a campaign would silently play another value.

    A field is re-drawn when ``env.randomize`` changes it from ``params`` for any of 8 probe
    keys (a field with few values, such as a buff id, can match one draw by chance, not 8).

    Raises:
      ValueError: naming the re-drawn options.
    """
    options = set(dict(game_kwargs)) & {field.name for field in dataclasses.fields(params)}
    if not options:
        return
    probes = jax.jit(jax.vmap(env.randomize, in_axes=(0, None)))(jax.random.split(jax.random.key(0), 8), params)
    redrawn = sorted(name for name in options if not all(_same(getattr(params, name), v) for v in getattr(probes, name)))
    if redrawn:
        raise ValueError(f"{env.name}: {', '.join(redrawn)} is re-drawn for each run (its bugs are placed per seed); a campaign cannot set it")


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b)


def run(config: WujiConfig, out_dir: str | Path, on_generation: Callable[[int, int, int], None] | None = None,
        resume: bool = False) -> dict:  # fmt: skip
    """Runs one campaign in ``out_dir``: ``bugs.jsonl`` (each bug as it is found), ``config.json``,
    ``summary.json``, ``population.json`` (the final population's scores and fronts),
    ``timeline.jsonl`` (seconds, env steps, bugs found, states covered after each device call, as they
    come) and
    ``checkpoints/`` (orbax, after the initial evaluation and every generation).

    Args:
      config: the campaign.
      out_dir: the run directory (created if missing).
      on_generation: called after each generation with ``(generation, generations, bugs found)``.
      resume: continue from the latest checkpoint in ``out_dir`` (a killed campaign): the records
        already written stay, and the run ends where an uninterrupted one ends (with a
        ``generations`` budget; wall-clock times differ).

    Raises:
      ValueError: ``resume`` with a checkpoint of another config.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    search = _search(config.game, config.game_kwargs, config.runs_per_eval, config.num_buckets, _learner_config(config))
    env = search.env
    params, game_kwargs = run_params(env, search.params, config.seed, config.game_kwargs)
    (out_dir / "config.json").write_text(json.dumps({"method": "wuji", **jsonable(dataclasses.asdict(config)), "game_kwargs": game_kwargs}, indent=2))
    search.warm_up(config.strategy, _members(config), params, config.variation)
    progress = _fresh_progress(search, config, params)
    kept = records_to_resume(out_dir, resume)
    with Checkpointer(out_dir / "checkpoints", config_fingerprint(config)) as ckpt, BugRecordWriter(out_dir / "bugs.jsonl") as writer:
        resumed = resume and ckpt.latest_step() is not None
        if resumed:
            progress = ckpt.restore(progress)
        start = time.perf_counter() - float(progress["elapsed_s"])
        states = DistinctStates(np.load(out_dir / _STATES_FILE) if resumed and (out_dir / _STATES_FILE).exists() else None)
        book = _Bookkeeper(env, config, game_kwargs, writer, start, progress, out_dir / "timeline.jsonl", states)
        for record in kept:  # records written after the last checkpoint stay, and are not written twice
            if not book.seen(record.bug_id):
                book.found_at[record.bug_id] = record.wall_s
        seeds = _SeedCounter(progress)
        if not resumed:
            if config.strategy != "random":
                progress["objectives"] = _evaluate(search, book, progress["population"], params, seeds.take(_members(config)), "evaluation")
            _save(ckpt, 0, progress, book, seeds, out_dir)
        for generation in itertools.count(int(progress["generation"]) + 1):
            if config.generations is not None and generation > config.generations:
                break
            if _budget_spent(config, book):
                break
            key, k_gen = jax.random.split(progress["key"])
            population, objectives, strategy, pop = progress["population"], progress["objectives"], config.strategy, _members(config)
            if strategy == "random":
                population = _play_random(search, book, population, params, config)
            elif strategy == "drl":
                population = _fine_tune(search, book, population, params, seeds.take(pop), config)
                objectives = _evaluate(search, book, population, params, seeds.take(pop), "evaluation")
            else:
                population, objectives = _generation(search, book, population, objectives, params, k_gen, config, seeds.take)
            progress.update(population=population, objectives=objectives, key=key, generation=generation)
            _save(ckpt, generation, progress, book, seeds, out_dir)
            if on_generation is not None:
                on_generation(generation, config.generations, int((~np.isnan(book.found_at)).sum()))
    summary = _summary(config, env, book, int(progress["generation"]), time.perf_counter() - start)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    if config.strategy != "random":
        (out_dir / "population.json").write_text(json.dumps(_front_json(np.asarray(progress["objectives"])), indent=2))
    return summary


def _members(config: WujiConfig) -> int:
    """Policies (or random slot groups) a run keeps: ``config.population``, but one for ``drl``."""
    return 1 if config.strategy == "drl" else config.population


def _learner_config(config: WujiConfig) -> WujiA2CConfig:
    """The A2C learner's settings: ``config.a2c``, but for ``drl``, whose one learner stands in for a
    population, ``population`` times the games (a round plays the steps of a population's round)."""
    if config.strategy != "drl":
        return config.a2c
    return dataclasses.replace(config.a2c, num_envs=config.a2c.num_envs * config.population)


def _fresh_progress(search: _Search, config: WujiConfig, params) -> dict:
    """A campaign's state before its first evaluation (also the structure checkpoints restore into).

    The ``random`` strategy's "population" is ``population`` groups of slot games
    (:meth:`jgtest.agents.wuji_a2c.WujiA2C.init_slots`), each with a run seed of its own, whose
    episodes go on from one generation to the next.
    """
    key = jax.random.fold_in(jax.random.key(config.seed), 1)
    key, k_init = jax.random.split(key)
    pop, next_seed = _members(config), config.seed * 1_000_003 % 2**30
    if config.strategy == "random":
        random_seeds = shard_batch(jnp.arange(next_seed, next_seed + pop, dtype=jnp.int32))  # over every device
        population, next_seed = {"seeds": random_seeds, "slots": search.init_random(params, random_seeds)}, next_seed + pop
    else:
        population = search.init_variables(shard_batch(jax.random.split(k_init, pop)))
    return {
        "population": population, "objectives": jnp.zeros((pop, 2), jnp.float32), "key": key, "generation": 0,
        "next_seed": next_seed, "elapsed_s": 0.0,
        "found_at": np.full(search.env.num_bugs, np.nan), "visited": np.zeros(search.env.num_cells, bool), "env_steps": 0,
    }  # fmt: skip


class _SeedCounter:
    """Run seeds of the episodes played (one per policy evaluated or trained), in order (the random
    strategy's slot groups take theirs once, in :func:`_fresh_progress`)."""

    def __init__(self, progress: dict):
        self.next = int(progress["next_seed"])

    def take(self, n: int) -> np.ndarray:
        seeds = np.arange(self.next, self.next + n, dtype=np.int32)
        self.next += n
        return seeds


def _save(ckpt: Checkpointer, step: int, progress: dict, book: _Bookkeeper, seeds: _SeedCounter, out_dir: Path) -> None:
    """Checkpoints ``progress`` with the bookkeeping and the seed counter as they are now.

    The states covered, a set that grows without bound, go to ``states.npy`` (replaced atomically)
    just before the checkpoint: a kill between the two leaves the file one generation ahead, and
    the generation a resumed run plays again adds the same states to it.
    """
    progress.update(
        next_seed=seeds.next, elapsed_s=time.perf_counter() - book.start, found_at=book.found_at.copy(),
        visited=book.visited.copy(), env_steps=book.env_steps,
    )  # fmt: skip
    partial = out_dir / (_STATES_FILE + ".partial")
    with partial.open("wb") as f:
        np.save(f, book.states.hashes)
    partial.replace(out_dir / _STATES_FILE)
    ckpt.save(step, progress)


def _evaluate(search, book, population, params, seeds, phase):
    scores, out = search.evaluate(population, params, jnp.asarray(seeds))
    book.played(out, seeds, phase)
    if book.config.strategy in _EVOLVES and np.isnan(np.asarray(scores)).any():  # NSGA-II's selection, compiled, would not say so
        rows = np.flatnonzero(np.isnan(np.asarray(scores)).any(axis=1))
        raise FloatingPointError(f"{book.config.strategy}: policies {rows[:10].tolist()} scored NaN, which NSGA-II cannot rank (a NaN game reward?)")
    return scores


def _fine_tune(search, book, population, params, seeds, config):
    """A2C on every member at once until each stops (or the budget ends); the trained population."""
    learners, slots = search.init_training(population, params, jnp.asarray(seeds))
    for _ in range(config.a2c.max_rounds):
        learners, slots, catch, cover, _ = search.train_round(learners, slots, params, jnp.asarray(seeds))
        book.caught(catch, cover, search.a2c.cells, seeds, search.a2c.config.steps_per_round * len(seeds), "a2c")
        if not bool(np.asarray(learners.active).any()):
            break
        if _budget_spent(config, book):
            break  # "maximum training time": the campaign's budget
    return learners.variables


def _budget_spent(config: WujiConfig, book: _Bookkeeper) -> bool:
    """The wall-clock or env-step budget is spent (checked between device calls)."""
    out_of_time = config.budget_s is not None and time.perf_counter() - book.start >= config.budget_s
    return out_of_time or (config.budget_steps is not None and book.env_steps >= config.budget_steps)


def _play_random(search, book, population, params, config):
    """A generation of the ``random`` strategy: as many rounds of its slot games as a DRL generation
    trains at most (``a2c.max_rounds``; the budget is checked between rounds); the slots after them."""
    seeds = np.asarray(population["seeds"])
    for _ in range(config.a2c.max_rounds):
        slots, catch, cover = search.random_round(population["slots"], params, population["seeds"])
        population = {**population, "slots": slots}
        book.caught(catch, cover, search.a2c.cells, seeds, search.a2c.config.steps_per_round * len(seeds), "random")
        if _budget_spent(config, book):
            break
    return population


def _generation(search, book, population, objectives, params, key, config, take_seeds):
    """Algorithms 1–3: breed, (train,) evaluate, select."""
    pop, multi = config.population, config.strategy in _MULTI
    children = search.offspring(key, population, objectives if multi else objectives[:, 1:], config.variation)
    candidates = [population, children]
    scores = [objectives, _evaluate(search, book, children, params, take_seeds(pop), "evaluation")]
    if config.strategy in _TRAINS:
        trained = _fine_tune(search, book, children, params, take_seeds(pop), config)
        candidates.append(trained)
        scores.append(_evaluate(search, book, trained, params, take_seeds(pop), "evaluation"))
    return search.survivors(tuple(candidates), tuple(scores), multi)


def _offspring(key, population, fitness, variation, layers):
    """Algorithm 1 on a stacked population: the children bred from ``fitness [P, M]``
    (:func:`jgtest.evo.breed`). A member's vector lists its ``layers`` in the order they compute,
    as a PyTorch network's ``parameters()`` does (the paper's, §V-A4), each batch-norm layer's
    running statistics beside its weights: a single cut gives a child one parent's first layers
    and the other's last ones, statistics included, and mutation changes weights only. Jitted by
    :class:`_Search`: a generation's glue runs as one compiled call, not op by op."""
    parts = ("params", "batch_stats")
    genome = [{part: population[part][name] for part in parts if name in population[part]} for name in layers]
    weights = [{part: _member_filled(tree, part == "params") for part, tree in layer.items()} for layer in genome]
    flat, unravel = ravel_population(genome)
    children, _ = breed(key, flat, fitness, flat.shape[0], variation, mutable=jax.flatten_util.ravel_pytree(weights)[0])
    bred = unravel(children)
    return {part: {name: layer[part] for name, layer in zip(layers, bred) if part in layer} for part in parts}


def _member_filled(stacked, value: bool):
    """One member's shapes of the stacked pytree ``stacked``, every entry ``value``."""
    return jax.tree.map(lambda x: jnp.full(x.shape[1:], value), stacked)


def _survivors(candidates, scores, multi):
    """Algorithm 4: NSGA-II over the union of ``candidates`` (parents, children, trained children)
    on their ``scores`` (both objectives when ``multi``, else the winning score), keeping the
    parents' number; ``(population, objectives)``."""
    union = jax.tree.map(lambda *xs: jnp.concatenate(xs), *candidates)
    union_scores = jnp.concatenate(scores)
    keep = select(union_scores if multi else union_scores[:, 1:], scores[0].shape[0])
    return jax.tree.map(lambda x: x[keep], union), union_scores[keep]


def _front_json(objectives: np.ndarray) -> dict:
    ranks = np.asarray(non_dominated_rank(objectives))
    return {"exploration": objectives[:, 0].tolist(), "winning": objectives[:, 1].tolist(), "front": ranks.tolist()}


def _summary(config, env, book, generations, wall_s) -> dict:
    found = ~np.isnan(book.found_at)
    kinds = [env.bug_kinds[i] for i in np.flatnonzero(found)]
    return {
        "method": "wuji", "strategy": config.strategy, "game": config.game, "seed": config.seed,
        "generations": generations, "bugs_found": int(found.sum()), "bugs_total": env.num_bugs,
        "bugs_by_kind": {k: kinds.count(k) for k in sorted(set(kinds))},
        "first_found_s": [None if np.isnan(v) else round(float(v), 3) for v in book.found_at],
        "state_coverage": len(book.states), "cells_covered": int(book.visited.sum()), "cells_covered_fraction": float(book.visited.mean()),
        "env_steps": book.env_steps, "timeline": book.timeline, "wall_s": round(wall_s, 3),
    }  # fmt: skip


def campaign(config: WujiConfig, out_dir: str | Path, strategies: Sequence[str] | None = None, seeds: int = 1,
             resume: bool = False, on_run: Callable[[str, int, int, int, int], None] | None = None) -> dict:  # fmt: skip
    """Runs ``config`` for each strategy (default: ``config.strategy`` alone) and seeds
    ``config.seed … config.seed + seeds − 1``, each in ``out_dir/STRATEGY/seed-S``, with the same budget;
    then writes ``out_dir/summary.json`` (per strategy: ``bugs_found``, ``state_coverage`` as mean, sd
    and per seed, ``bugs_total``, steps and time; with Wuji and another strategy, ``wuji_against_each``:
    for both measures, Wuji's seeds against each other strategy's, two-sided Mann-Whitney U with Holm's
    correction over those pairs and Cliff's delta (positive where Wuji tends higher),
    :func:`jgtest.analysis.compare_groups`: whether a lead on the means is more than the seeds' spread)
    and the plots ``bugs_over_time.png``,
    ``coverage.png`` and ``population.png`` (each strategy's first seed's final population).

    Args:
      on_run: called after each generation with ``(strategy, seed, generation, generations, bugs)``.
    """
    from jgtest.report.wuji_plots import bugs_over_time_plot, coverage_plot, population_plot

    strategies = tuple(strategies or (config.strategy,))
    for s in strategies:
        if s not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {s!r}")
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    check_game_kwargs(*make(config.game, **dict(config.game_kwargs)), config.game_kwargs)  # before any run starts
    out_dir = Path(out_dir)
    results: dict[str, list[dict]] = {}
    for strategy in strategies:
        for seed in range(config.seed, config.seed + seeds):
            run_config = dataclasses.replace(config, strategy=strategy, seed=seed)
            report = None if on_run is None else (lambda g, n, b, s=strategy, k=seed: on_run(s, k, g, n, b))
            summary = run(run_config, out_dir / strategy / f"seed-{seed}", on_generation=report, resume=resume)
            results.setdefault(strategy, []).append(summary)
    first = next(iter(results.values()))[0]
    stats = lambda values: {"mean": float(np.mean(values)), "sd": float(np.std(values)), "per_seed": [int(v) for v in values]}
    summary = {
        "method": "wuji", "game": config.game, "game_kwargs": dict(config.game_kwargs), "seeds": seeds, "generations": config.generations, "budget_s": config.budget_s,
        "budget_steps": config.budget_steps, "bugs_total": first["bugs_total"], "strategies": list(strategies),
        "bugs_found": {s: stats([r["bugs_found"] for r in runs]) for s, runs in results.items()},
        "state_coverage": {s: stats([r["state_coverage"] for r in runs]) for s, runs in results.items()},
        "cells_covered": {s: stats([r["cells_covered"] for r in runs]) for s, runs in results.items()},
        "env_steps": {s: stats([r["env_steps"] for r in runs]) for s, runs in results.items()},
        "wall_s": {s: float(np.sum([r["wall_s"] for r in runs])) for s, runs in results.items()},
    }  # fmt: skip
    if "wuji" in results and len(results) > 1:
        summary["wuji_against_each"] = {m: compare_groups({s: summary[m][s]["per_seed"] for s in strategies}, against="wuji") for m in ("bugs_found", "state_coverage")}
    timelines = {s: [np.asarray(r["timeline"], np.float64).reshape(-1, 4) for r in runs] for s, runs in results.items()}
    if config.budget_s is not None:
        summary["by_time"] = _at_budget_fractions(timelines, config.budget_s, _SECONDS)
    if config.budget_steps is not None:
        summary["by_steps"] = _at_budget_fractions(timelines, config.budget_steps, _ENV_STEPS)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    title = f"{config.game}, {seeds} seed(s)"
    bugs_over_time_plot(timelines, out_dir / "bugs_over_time.png", first["bugs_total"], title)
    coverage_plot({s: summary["state_coverage"][s]["per_seed"] for s in strategies}, out_dir / "coverage.png", title)
    fronts = {s: json.loads((out_dir / s / f"seed-{config.seed}" / "population.json").read_text()) for s in strategies if s != "random"}
    if fronts:
        population_plot(fronts, out_dir / "population.png", f"{config.game}, seed {config.seed}: final populations")
    return summary


#: Columns of a timeline row: seconds, env steps, bugs found, states covered.
_SECONDS, _ENV_STEPS, _BUGS, _STATES = range(4)


def _at_budget_fractions(timelines: dict[str, list[np.ndarray]], budget: float, column: int, fractions=(0.25, 0.5, 1.0)) -> dict:
    """Bugs found and states covered by each strategy at fractions of the budget (mean, sd and per seed,
    from the timelines, the last row within each): the comparison at shorter equal budgets, from the
    same runs. ``column``: the budget's timeline column (seconds or env steps)."""

    def at(t: np.ndarray, spent: float, value: int) -> int:
        done = t[t[:, column] <= spent]
        return int(done[-1, value]) if len(done) else 0

    stats = lambda values: {"mean": float(np.mean(values)), "sd": float(np.std(values)), "per_seed": values}
    return {
        (f"{budget * f:g}" if column == _SECONDS else str(int(budget * f))): {
            s: {"bugs_found": stats([at(t, budget * f, _BUGS) for t in runs]), "state_coverage": stats([at(t, budget * f, _STATES) for t in runs])}
            for s, runs in timelines.items()
        }
        for f in fractions
    }
