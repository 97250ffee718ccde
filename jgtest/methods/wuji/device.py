"""One Wuji run on device (one strategy, one seed, :func:`run_on_device`): the generations of
Algorithms 1–4 under a budget, bug records as the host sees them, coverage, orbax checkpoints."""

from __future__ import annotations

import dataclasses
import itertools
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.checkpoint import Checkpointer, config_fingerprint, strongly_typed
from jgtest.coverage import DistinctStates
from jgtest.files import jsonable, write_json_atomically
from jgtest.methods.wuji import bookkeeping
from jgtest.methods.wuji.config import EVOLVES, WujiConfig
from jgtest.methods.wuji.placements import run_params
from jgtest.methods.wuji.search import Search, search_for
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
        ``generations`` budget; wall-clock times differ).

    Raises:
      ResumeRefused: ``resume`` in a directory of another campaign (nothing is written).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    search = search_for(config)
    env = search.env
    params, game_kwargs = run_params(env, search.params, config.seed, config.game_kwargs)
    begin_campaign(
        out_dir,
        {"method": "wuji", **jsonable(dataclasses.asdict(config)), "game_kwargs": game_kwargs},
        config_fingerprint(config),
        resume,
    )
    search.warm_up(
        config.strategy,
        bookkeeping.members(config),
        params,
        config.variation,
        config.selection_pool,
    )
    # typed as restored run_state: a resumed run reuses the compiled steps
    run_state = strongly_typed(_fresh_progress(search, config, params))
    with (
        Checkpointer(out_dir / "checkpoints", config_fingerprint(config)) as ckpt,
        BugRecordWriter(out_dir / "bugs.jsonl") as writer,
    ):
        kept = records_to_resume(out_dir, resume)  # read once the writer has cut a torn last line
        resumed = resume and ckpt.latest_step() is not None
        if resumed:
            run_state = ckpt.restore(run_state)
        start = time.perf_counter() - float(run_state["elapsed_s"])
        states = DistinctStates(
            np.load(out_dir / _STATES_FILE)
            if resumed and (out_dir / _STATES_FILE).exists()
            else None
        )
        book = bookkeeping.Bookkeeper(
            env, config, game_kwargs, writer, start, run_state, out_dir / "timeline.jsonl", states
        )
        # records written after the last checkpoint stay, and are not written twice
        for record in kept:
            if not book.seen(record.bug_id):
                book.found_at[record.bug_id] = record.wall_s
                book.found_step[record.bug_id] = -1 if record.env_step is None else record.env_step
        if lost := sorted(
            set(np.flatnonzero(~np.isnan(book.found_at)).tolist()) - {r.bug_id for r in kept}
        ):
            warnings.warn(
                f"{writer.path}: bug(s) {lost}, found before the last checkpoint, have no record "
                "(a damaged log); a Wuji "
                "campaign cannot re-derive one (its traces come from the population's "
                "policies): they count in the summary only",
                stacklevel=2,
            )
        seeds = _SeedCounter(run_state)
        if not resumed:
            if config.strategy != "random":
                run_state["objectives"] = _evaluate(
                    search,
                    book,
                    run_state["population"],
                    params,
                    seeds.take(bookkeeping.members(config)),
                    "evaluation",
                )
            _save(ckpt, 0, run_state, book, seeds, out_dir)
        saved_at = time.perf_counter()
        for generation in itertools.count(int(run_state["generation"]) + 1):
            if config.generations is not None and generation > config.generations:
                break
            if bookkeeping.budget_spent(config, book):
                break
            key, k_gen = jax.random.split(run_state["key"])
            population, objectives, strategy, pop = (
                run_state["population"],
                run_state["objectives"],
                config.strategy,
                bookkeeping.members(config),
            )
            if strategy == "random":
                population = _play_random(search, book, population, params, config)
            elif strategy in ("drl", "drl_30"):
                population = _fine_tune(search, book, population, params, seeds.take(pop), config)
                objectives = _evaluate(
                    search, book, population, params, seeds.take(pop), "evaluation"
                )
            else:
                population, objectives = bookkeeping.next_generation(
                    config,
                    population,
                    objectives,
                    k_gen,
                    lambda k, p, f: search.offspring(k, p, f, config.variation),
                    search.survivors,
                    lambda policies: _evaluate(
                        search, book, policies, params, seeds.take(config.population), "evaluation"
                    ),
                    lambda policies: _fine_tune(
                        search, book, policies, params, seeds.take(config.population), config
                    ),
                    lambda: bookkeeping.budget_spent(config, book),
                )
            run_state.update(
                population=population, objectives=objectives, key=key, generation=generation
            )
            last = (
                config.generations is not None and generation >= config.generations
            ) or bookkeeping.budget_spent(config, book)
            if last or time.perf_counter() - saved_at >= CHECKPOINT_EVERY_S:
                _save(ckpt, generation, run_state, book, seeds, out_dir)
                saved_at = time.perf_counter()
            if progress is not None:
                progress(generation, config.generations, int((~np.isnan(book.found_at)).sum()))
    summary = bookkeeping.run_summary(
        config, env, book, int(run_state["generation"]), time.perf_counter() - start
    )
    write_json_atomically(out_dir / "summary.json", summary)
    if config.strategy != "random":
        write_json_atomically(
            out_dir / "population.json", bookkeeping.front_json(np.asarray(run_state["objectives"]))
        )
    return summary


def _fresh_progress(search: Search, config: WujiConfig, params) -> dict:
    """A campaign's state before its first evaluation (also the structure checkpoints restore into).

    The ``random`` strategy's "population" is ``population`` groups of slot games
    (:meth:`jgtest.agents.wuji_a2c.WujiA2C.init_slots`), each with a run seed of its own, whose
    episodes go on from one generation to the next.
    """
    key = jax.random.fold_in(jax.random.key(config.seed), 1)
    key, k_init = jax.random.split(key)
    pop, next_seed = bookkeeping.members(config), config.seed * 1_000_003 % 2**30
    if config.strategy == "random":
        # over every device
        random_seeds = shard_batch(jnp.arange(next_seed, next_seed + pop, dtype=jnp.int32))
        population, next_seed = (
            {"seeds": random_seeds, "slots": search.init_random(params, random_seeds)},
            next_seed + pop,
        )
    else:
        population = search.init_variables(shard_batch(jax.random.split(k_init, pop)))
    return {
        "population": population,
        "objectives": jnp.zeros((pop, 2), jnp.float32),
        "key": key,
        "generation": 0,
        "next_seed": next_seed,
        "elapsed_s": 0.0,
        "found_at": np.full(search.env.num_bugs, np.nan),
        "found_step": np.full(search.env.num_bugs, -1, np.int64),
        "visited": np.zeros(search.env.num_cells, bool),
        "env_steps": 0,
        "budget_reached": False,
    }


class _SeedCounter:
    """Run seeds of the episodes played (one per policy evaluated or trained), in order (the random
    strategy's slot groups take theirs once, in :func:`_fresh_progress`)."""

    def __init__(self, run_state: dict):
        self.next = int(run_state["next_seed"])

    def take(self, n: int) -> np.ndarray:
        seeds = np.arange(self.next, self.next + n, dtype=np.int32)
        self.next += n
        return seeds


def _save(
    ckpt: Checkpointer,
    step: int,
    run_state: dict,
    book: bookkeeping.Bookkeeper,
    seeds: _SeedCounter,
    out_dir: Path,
) -> None:
    """Checkpoints ``run_state`` with the bookkeeping and the seed counter as they are now.

    The states covered, a set that grows without bound, go to ``states.npy`` (replaced atomically)
    just before the checkpoint: a kill between the two leaves the file one generation ahead, and
    the generation a resumed run plays again adds the same states to it.
    """
    run_state.update(
        next_seed=seeds.next,
        elapsed_s=time.perf_counter() - book.start,
        found_at=book.found_at.copy(),
        visited=book.visited.copy(),
        env_steps=book.env_steps,
        found_step=book.found_step.copy(),
        budget_reached=book.budget_reached,
    )
    partial = out_dir / (_STATES_FILE + ".partial")
    with partial.open("wb") as f:
        np.save(f, book.states.hashes)
    partial.replace(out_dir / _STATES_FILE)
    ckpt.save(step, run_state)


def _evaluate(search, book, population, params, seeds, phase):
    scores, out = search.evaluate(population, params, jnp.asarray(seeds))
    book.played(out, seeds, phase)
    # NSGA-II's selection, compiled, would not say so
    if book.config.strategy in EVOLVES and np.isnan(np.asarray(scores)).any():
        rows = np.flatnonzero(np.isnan(np.asarray(scores)).any(axis=1))
        raise FloatingPointError(
            f"{book.config.strategy}: policies {rows[:10].tolist()} scored NaN, which NSGA-II "
            "cannot rank (a NaN game reward?)"
        )
    return scores


def _fine_tune(search, book, population, params, seeds, config):
    """A2C on every member at once until each stops (or the budget ends); the trained population."""
    learners, slots = search.init_training(population, params, jnp.asarray(seeds))
    for _ in range(config.a2c.max_rounds):
        learners, slots, catch, cover, _ = search.train_round(
            learners, slots, params, jnp.asarray(seeds)
        )
        book.caught(catch, cover, search.a2c.cells, seeds, "a2c")
        if not bool(np.asarray(learners.active).any()):
            break
        if bookkeeping.budget_spent(config, book):
            break  # "maximum training time": the campaign's budget
    return learners.variables


def _play_random(search, book, population, params, config):
    """A generation of the ``random`` strategy: as many rounds of its slot games as a DRL generation
    trains at most (``a2c.max_rounds``; the budget is checked between rounds); the slots after
    them."""
    seeds = np.asarray(population["seeds"])
    for _ in range(config.a2c.max_rounds):
        slots, catch, cover = search.random_round(population["slots"], params, population["seeds"])
        population = {**population, "slots": slots}
        book.caught(catch, cover, search.a2c.cells, seeds, "random")
        if bookkeeping.budget_spent(config, book):
            break
    return population
