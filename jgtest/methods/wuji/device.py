"""One Wuji run on device (one strategy, one seed, :func:`run_on_device`): the generations of
Algorithms 1–4 under a budget, bug records as the host sees them, coverage, orbax checkpoints."""

from __future__ import annotations

import dataclasses
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jgtest.checkpoint import Checkpointer, config_fingerprint, strongly_typed
from jgtest.coverage import DistinctStates
from jgtest.files import jsonable, read_json, write_json_atomically
from jgtest.methods.wuji import bookkeeping
from jgtest.methods.wuji.config import WujiConfig
from jgtest.methods.wuji.placements import run_params
from jgtest.methods.wuji.search import Search, search_for
from jgtest.methods.wuji.strategies import REGISTRY, SearchState, run_generations
from jgtest.records import BugRecordWriter, records_to_resume
from jgtest.run_dir import begin_campaign
from jgtest.sharding import shard_batch
from jgtest.types import Progress

#: The states a run has covered (their hashes, :class:`jgtest.coverage.DistinctStates`), kept with
#: its checkpoints.
_STATES_FILE = "states.npy"
#: Seconds between checkpoints (and after the last generation): a checkpoint every generation cost
#: as much as a short generation (``findings_wuji.json``). A killed run repeats at most this much
#: work.
CHECKPOINT_EVERY_S = 30.0
#: The first run seed of the lineage's fresh re-scores: above every seed a campaign plays (they
#: start below 2**30 and grow by the policies played).
FRESH_SEEDS = 2**30


@struct.dataclass
class RunState:
    """A run as its checkpoints keep it: the strategy's state, the generations done, the next run
    seed, the seconds spent, and the bookkeeping's counts."""

    search: SearchState
    generation: int
    next_seed: int
    elapsed_s: float
    tally: bookkeeping.Tally


def run_on_device(
    config: WujiConfig, out_dir: str | Path, progress: Progress | None = None, resume: bool = False
) -> dict:
    """Runs one strategy and seed of a Wuji campaign on device in ``out_dir``: ``bugs.jsonl`` (each
    bug as it is found), ``config.json``, ``summary.json``, ``population.json`` (the final
    population's scores and fronts), ``timeline.jsonl`` (seconds, env steps, bugs found, states
    covered after each device call, as they come) and ``checkpoints/`` (orbax, after the initial
    evaluation, then after a generation every :data:`CHECKPOINT_EVERY_S` seconds and after the
    last).

    Args:
      config: the campaign.
      out_dir: the run directory (created if missing).
      progress: called after each generation with ``(generation, generations, bugs found)``.
      resume: continue from the latest checkpoint in ``out_dir`` (a killed campaign): the records
        already written stay, and the run ends where an uninterrupted one ends (with a
        ``generations`` budget; wall-clock times differ). A run that finished returns its
        summary as it is.

    Raises:
      ResumeRefused: ``resume`` in a directory of another campaign (nothing is written).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    search = search_for(config)
    strategy = REGISTRY[config.strategy]
    env = search.env
    params, game_kwargs = run_params(env, search.params, config.seed, config.game_kwargs)
    begin_campaign(
        out_dir,
        {"method": "wuji", **jsonable(dataclasses.asdict(config)), "game_kwargs": game_kwargs},
        config_fingerprint(config),
        resume,
    )
    if resume and (out_dir / "summary.json").exists():
        return read_json(out_dir / "summary.json")  # the run finished: nothing to compile or play
    search.warm_up(strategy, strategy.members(config), params, config)
    # typed as restored: a resumed run reuses the compiled steps
    run_state = strongly_typed(_fresh_state(search, config, params))
    with (
        Checkpointer(out_dir / "checkpoints", config_fingerprint(config)) as ckpt,
        BugRecordWriter(out_dir / "bugs.jsonl") as writer,
    ):
        kept = records_to_resume(out_dir, resume)  # read once the writer has cut a torn last line
        resumed = resume and ckpt.latest_step() is not None
        if resumed:
            run_state = ckpt.restore(run_state)
        start = time.perf_counter() - float(run_state.elapsed_s)
        states = DistinctStates(
            np.load(out_dir / _STATES_FILE)
            if resumed and (out_dir / _STATES_FILE).exists()
            else None
        )
        book = bookkeeping.Bookkeeper(
            env,
            config,
            game_kwargs,
            writer,
            start,
            run_state.tally,
            out_dir / "timeline.jsonl",
            states,
        )
        _keep_records(book, kept, writer.path)
        lineage = bookkeeping.Lineage(out_dir / "lineage.jsonl", int(run_state.generation))
        player = DevicePlayer(search, book, params, config, int(run_state.next_seed))
        if not resumed:
            if strategy.evaluates_initial:
                scores = player.evaluate(run_state.search.population)
                run_state = run_state.replace(search=run_state.search.replace(objectives=scores))
            run_state = _save(ckpt, 0, run_state, book, player, out_dir)
        saved_at = time.perf_counter()

        def after_generation(generation: int, state: SearchState) -> None:
            nonlocal run_state, saved_at
            run_state = run_state.replace(search=state, generation=generation)
            last = (config.generations is not None and generation >= config.generations) or (
                book.spent()
            )
            if not strategy.random:
                lineage.add(generation, state, player.rescore)
            if last or time.perf_counter() - saved_at >= CHECKPOINT_EVERY_S:
                run_state = _save(ckpt, generation, run_state, book, player, out_dir)
                saved_at = time.perf_counter()
            if progress is not None:
                progress(generation, config.generations, int((~np.isnan(book.found_at)).sum()))

        run_generations(
            config, run_state.search, player, int(run_state.generation), after_generation
        )
    summary = {
        **bookkeeping.run_summary(
            config, env, book, int(run_state.generation), time.perf_counter() - start
        ),
        "lineage": lineage.rows,
    }
    if not strategy.random:
        write_json_atomically(
            out_dir / "population.json",
            bookkeeping.front_json(np.asarray(run_state.search.objectives)),
        )
    write_json_atomically(out_dir / "summary.json", summary)  # last: the run finished
    return summary


def _keep_records(book: bookkeeping.Bookkeeper, kept: list, path: Path) -> None:
    """Counts the records a resumed run finds written after its last checkpoint (they stay, and
    are not written twice); warns of bugs the checkpoint counts that have no record."""
    for record in kept:
        if not book.seen(record.bug_id):
            book.found_at[record.bug_id] = record.wall_s
            book.found_step[record.bug_id] = -1 if record.env_step is None else record.env_step
    if lost := sorted(
        set(np.flatnonzero(~np.isnan(book.found_at)).tolist()) - {r.bug_id for r in kept}
    ):
        warnings.warn(
            f"{path}: bug(s) {lost}, found before the last checkpoint, have no record (a damaged "
            "log); a Wuji campaign cannot re-derive one (its traces come from the population's "
            "policies): they count in the summary only",
            stacklevel=3,
        )


def _fresh_state(search: Search, config: WujiConfig, params) -> RunState:
    """A run's state before its first evaluation (also the structure checkpoints restore into).

    The ``random`` strategy's "population" is ``population`` groups of slot games
    (:meth:`jgtest.agents.wuji_a2c.WujiA2C.init_slots`), each with a run seed of its own, whose
    episodes go on from one generation to the next.
    """
    strategy = REGISTRY[config.strategy]
    key = jax.random.fold_in(jax.random.key(config.seed), 1)
    key, k_init = jax.random.split(key)
    pop, next_seed = strategy.members(config), config.seed * 1_000_003 % 2**30
    if strategy.random:
        # over every device
        random_seeds = shard_batch(jnp.arange(next_seed, next_seed + pop, dtype=jnp.int32))
        population, next_seed = (
            {"seeds": random_seeds, "slots": search.init_random(params, random_seeds)},
            next_seed + pop,
        )
    else:
        population = search.init_variables(shard_batch(jax.random.split(k_init, pop)))
    return RunState(
        search=SearchState.create(population, jnp.zeros((pop, 2), jnp.float32), key),
        generation=0,
        next_seed=next_seed,
        elapsed_s=0.0,
        tally=bookkeeping.Tally.empty(search.env.num_bugs, search.env.num_cells),
    )


def _save(
    ckpt: Checkpointer,
    step: int,
    run_state: RunState,
    book: bookkeeping.Bookkeeper,
    player: DevicePlayer,
    out_dir: Path,
) -> RunState:
    """Checkpoints ``run_state`` with the bookkeeping and the seed counter as they are now; the
    state saved.

    The states covered, a set that grows without bound, go to ``states.npy`` (replaced atomically)
    just before the checkpoint: a kill between the two leaves the file one generation ahead, and
    the generation a resumed run plays again adds the same states to it.
    """
    run_state = run_state.replace(
        next_seed=player.next_seed,
        elapsed_s=time.perf_counter() - book.start,
        tally=book.tally(),
    )
    partial = out_dir / (_STATES_FILE + ".partial")
    with partial.open("wb") as f:
        np.save(f, book.states.hashes)
    partial.replace(out_dir / _STATES_FILE)
    ckpt.save(step, run_state)
    return run_state


class DevicePlayer:
    """A device run's :class:`jgtest.methods.wuji.strategies.Player`: the search's jitted calls on
    the run's game, each played episode on run seeds taken in order (one per policy evaluated or
    trained; the ``random`` strategy's slot groups take theirs once, in :func:`_fresh_state`)."""

    def __init__(self, search: Search, book, params, config: WujiConfig, next_seed: int):
        self.search, self.book, self.params, self.config = search, book, params, config
        self.next_seed = next_seed
        self._fresh_seed = FRESH_SEEDS

    def _seeds(self, policies) -> np.ndarray:
        n = jax.tree.leaves(policies)[0].shape[0]
        seeds = np.arange(self.next_seed, self.next_seed + n, dtype=np.int32)
        self.next_seed += n
        return seeds

    def spent(self) -> bool:
        return self.book.spent()

    def breed(self, key, population, fitness):
        return self.search.offspring(key, population, fitness, self.config.variation)

    def select(self, candidates, scores, multi: bool):
        return self.search.survivors(candidates, scores, multi)

    def evaluate(self, policies) -> jax.Array:
        seeds = self._seeds(policies)
        scores, out = self.search.evaluate(policies, self.params, jnp.asarray(seeds))
        self.book.played(out, seeds, "evaluation")
        # NSGA-II's selection, compiled, would not say so
        if REGISTRY[self.config.strategy].evolves and np.isnan(np.asarray(scores)).any():
            rows = np.flatnonzero(np.isnan(np.asarray(scores)).any(axis=1))
            raise FloatingPointError(
                f"{self.config.strategy}: policies {rows[:10].tolist()} scored NaN, which NSGA-II "
                "cannot rank (a NaN game reward?)"
            )
        return scores

    def rescore(self, policies) -> jax.Array:
        """``policies`` scored as :meth:`evaluate` scores them, on run seeds from
        :data:`FRESH_SEEDS` on (never a campaign's), their games neither counted nor recorded."""
        n = jax.tree.leaves(policies)[0].shape[0]
        seeds = jnp.arange(self._fresh_seed, self._fresh_seed + n, dtype=jnp.int32)
        self._fresh_seed += n
        return self.search.evaluate(policies, self.params, seeds)[0]

    def fine_tune(self, policies):
        """A2C on every member at once until each stops (or the budget ends); the trained
        population."""
        seeds = jnp.asarray(self._seeds(policies))
        search = self.search
        learners, slots = search.init_training(policies, self.params, seeds)
        for _ in range(search.a2c.config.max_rounds):
            learners, slots, catch, cover, _ = search.train_round(
                learners, slots, self.params, seeds
            )
            self.book.caught(catch, cover, search.a2c.cells, np.asarray(seeds), "a2c")
            if not bool(np.asarray(learners.active).any()) or self.spent():
                break  # "maximum training time": the campaign's budget
        return learners.variables

    def play_random(self, games):
        """A generation of the ``random`` strategy: as many rounds of its slot games as a DRL
        generation trains at most (``a2c.max_rounds``; the budget is checked between rounds); the
        slots after them."""
        seeds = np.asarray(games["seeds"])
        for _ in range(self.config.a2c.max_rounds):
            slots, catch, cover = self.search.random_round(
                games["slots"], self.params, games["seeds"]
            )
            games = {**games, "slots": slots}
            self.book.caught(catch, cover, self.search.a2c.cells, seeds, "random")
            if self.spent():
                break
        return games
