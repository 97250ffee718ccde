"""What a Wuji run keeps as it goes, on device or with a bridged game's games on the host: bug
records the moment they are seen, coverage, the env-step clock (:class:`Bookkeeper`), the budget
(:class:`Budget`), and the summary both kinds of run share."""

from __future__ import annotations

import dataclasses
import json
import time
from operator import itemgetter
from pathlib import Path

import jax
import numpy as np
from flax import struct

from jgtest.coverage import DistinctStates
from jgtest.evo import non_dominated_rank
from jgtest.files import write_text
from jgtest.methods.wuji.config import WujiConfig
from jgtest.methods.wuji.strategies import ORIGINS, SearchState
from jgtest.records import BugRecord, BugRecordWriter


@dataclasses.dataclass(frozen=True)
class Budget:
    """A run's budget: ``steps`` game steps and/or ``seconds`` of wall clock (``None``: none)."""

    steps: int | None = None
    seconds: float | None = None

    def rows_within(self, played: int, steps_per_row: np.ndarray) -> int:
        """How many of a call's rows (``steps_per_row``, in order) end within the step budget
        when ``played`` steps were played before the call: the one cut of every count."""
        if self.steps is None:
            return len(steps_per_row)
        return int(np.searchsorted(np.cumsum(steps_per_row), self.steps - played, side="right"))

    def spent(self, played: int, elapsed_s: float) -> bool:
        """Whether ``played`` steps or ``elapsed_s`` seconds use the budget up."""
        out_of_time = self.seconds is not None and elapsed_s >= self.seconds
        return out_of_time or (self.steps is not None and played >= self.steps)


@struct.dataclass
class Tally:
    """What the bookkeeping has counted, as a checkpoint keeps it: each bug's first wall-clock
    second (NaN: not found) and env step (-1), the cells visited, the env steps, and whether a call
    was cut at the step budget."""

    found_at: np.ndarray
    found_step: np.ndarray
    visited: np.ndarray
    env_steps: int
    budget_reached: bool

    @classmethod
    def empty(cls, num_bugs: int, num_cells: int) -> Tally:
        return cls(
            np.full(num_bugs, np.nan),
            np.full(num_bugs, -1, np.int64),
            np.zeros(num_cells, bool),
            0,
            False,
        )


class Bookkeeper:
    """Bug records the moment the host sees them, coverage (the game's cells and Wuji's states),
    bugs over time, and the run's env-step clock.

    **The clock and the budget cut.** Each device call steps its games in lockstep: a row of the
    call is one step of every game still playing (an evaluation's policies × runs, a round's
    learners × slots). A step's clock is the env steps played before the call plus those of the
    call's rows up to and including its own, so a bug's ``env_step`` is when the run had played that
    many game steps. With ``budget_steps``, a call counts only the rows that end within the budget:
    the bugs, states and steps of the rows past it are dropped (a run's counted steps fall short of
    the budget by less than one row), and the run stops there (:attr:`budget_reached`). The game's
    cells (``cells_covered``) are an exception: an A2C round reports them for the whole round.
    """

    def __init__(
        self,
        env,
        config: WujiConfig,
        game_kwargs: dict,
        writer: BugRecordWriter,
        start: float,
        tally: Tally,
        timeline_path: Path,
        states: DistinctStates,
    ):
        self.env, self.config, self.game_kwargs, self.writer, self.start = (
            env,
            config,
            game_kwargs,
            writer,
            start,
        )
        self.budget = Budget(config.budget_steps, config.budget_s)
        self.found_at = np.array(tally.found_at, np.float64)
        self.found_step = np.array(tally.found_step, np.int64)
        self.visited = np.array(tally.visited, bool)
        self.states = states
        self.env_steps = int(tally.env_steps)
        self.budget_reached = bool(tally.budget_reached)
        # (seconds, env steps, bugs found, states covered) after each device call, also appended to
        # timeline.jsonl; rows past the checkpoint (work a kill lost, to be done again) are dropped
        lines = (
            timeline_path.read_text().splitlines(keepends=True) if timeline_path.exists() else []
        )
        # a torn last line: a kill mid-write
        rows = [json.loads(line) for line in lines if line.endswith("\n")]
        self.timeline = [tuple(row) for row in rows if row[1] <= self.env_steps]
        write_text(timeline_path, "".join(json.dumps(row) + "\n" for row in self.timeline))
        self._timeline_path = timeline_path

    def seen(self, bug: int) -> bool:
        return not np.isnan(self.found_at[bug])

    def tally(self) -> Tally:
        """What has been counted, for a checkpoint."""
        return Tally(
            self.found_at.copy(),
            self.found_step.copy(),
            self.visited.copy(),
            self.env_steps,
            self.budget_reached,
        )

    def spent(self) -> bool:
        """The wall-clock or env-step budget is spent (checked between device calls, or a host
        run's rows)."""
        elapsed = time.perf_counter() - self.start
        return self.budget_reached or self.budget.spent(self.env_steps, elapsed)

    def _rows_within_budget(self, steps_per_row: np.ndarray) -> int:
        """How many of a call's rows end within the budget (:meth:`Budget.rows_within`); a call
        cut short marks the budget reached."""
        rows = self.budget.rows_within(self.env_steps, steps_per_row)
        self.budget_reached |= rows < len(steps_per_row)
        return rows

    def played(self, out: dict, seeds: np.ndarray, phase: str) -> None:
        """Episodes ``out`` (``[P, m, T]``, slot ``b`` episode 0 of run ``seeds[p]``); row ``t`` of
        the call is step ``t`` of every episode still running."""
        out = jax.device_get(out)
        per_row = out["valid"].sum(axis=(0, 1))
        valid = out["valid"] & (np.arange(per_row.size) < self._rows_within_budget(per_row))
        clock = self.env_steps + np.cumsum(per_row)
        self.env_steps += int(valid.sum())
        self.visited[out["cell"][valid]] = True
        self.states.add(out["states"], valid)
        new = out["fired"] & valid[..., None] & np.isnan(self.found_at)
        for p, b, t, bug in zip(*np.nonzero(new)):
            if np.isnan(self.found_at[bug]):
                self._record(
                    bug,
                    int(seeds[p]),
                    int(b),
                    0,
                    int(t),
                    out["actions"][p, b, : t + 1],
                    out["position"][p, b, t],
                    phase,
                    int(clock[t]),
                )
        self.tick()

    def caught(self, catch, cover, cells, seeds: np.ndarray, phase: str) -> None:
        """Bugs a round of slot games caught (:class:`jgtest.rollout.BugCatch` per learner, or per
        group of random slots) and what it covered (``cover``, a stacked
        :class:`jgtest.agents.wuji_a2c.Covered` of the cell set ``cells``); a row of the call is
        one step of each of its live games."""
        catch, cover = jax.device_get((catch, cover))
        states = cover.states.reshape(len(seeds), -1, *cover.states.shape[-2:])  # [P, rows, B, 2]
        live = cover.live.reshape(states.shape[:-1])  # [P, rows, B]
        per_row = live.sum(axis=(0, 2))
        rows = self._rows_within_budget(per_row)
        clock = self.env_steps + np.cumsum(per_row)
        self.env_steps += int(per_row[:rows].sum())
        for p in range(len(seeds)):
            self.visited[cells.members(jax.tree.map(itemgetter(p), cover.cells))] = True
        self.states.add(states[:, :rows], live[:, :rows])
        for p, bug in zip(
            *np.nonzero(catch.found & (catch.tick < rows) & np.isnan(self.found_at)[None])
        ):
            if np.isnan(self.found_at[bug]):
                slot, episode, t = (int(v) for v in catch.where[p, bug])
                step = int(clock[catch.tick[p, bug]])
                self._record(
                    bug,
                    int(seeds[p]),
                    slot,
                    episode,
                    t,
                    catch.actions[p, bug, : t + 1],
                    (),
                    phase,
                    step,
                )
        self.tick()

    def _record(self, bug, seed, slot, episode, t, actions, position, phase, env_step) -> None:
        self.found_at[bug] = time.perf_counter() - self.start
        self.found_step[bug] = env_step
        self.writer.write(
            BugRecord(
                kind=self.env.bug_kinds[bug],
                game=self.config.game,
                bug_id=int(bug),
                step=t,
                episode=episode,
                seed=seed,
                env_index=slot,
                actions=tuple(int(a) for a in actions),
                game_kwargs=self.game_kwargs,
                position=tuple(float(v) for v in position),
                wall_s=round(float(self.found_at[bug]), 3),
                detail=f"{self.config.strategy} ({phase}): {self._bug_name(bug)} fired",
                env_step=env_step,
            )
        )

    def stepped(self, telemetry, live: np.ndarray, hashes: np.ndarray, games, phase: str) -> None:
        """One lockstep row of a bridged game's games (:mod:`jgtest.methods.wuji.host`): their
        ``telemetry`` (``[G, ...]``), ``live`` (``bool[G]``) the games whose step is one of an
        episode (not an autoreset's restart, nor an evaluated episode's after its end), ``hashes``
        their states (``uint32[G, 2]``), ``games`` each game's seed, episode and actions
        (:class:`jgtest.methods.wuji.host.HostGames`). A row past the budget is not counted."""
        if not self._rows_within_budget(np.array([live.sum()])):
            return
        self.env_steps += int(live.sum())
        self.visited[telemetry.cell[live]] = True
        self.states.add(hashes, live)
        new = telemetry.bugs_fired & live[:, None] & np.isnan(self.found_at)
        for g, bug in zip(*np.nonzero(new)):
            if np.isnan(self.found_at[bug]):
                actions = games.traces[g]
                self._record(
                    bug,
                    games.seed,
                    int(g),
                    int(games.episode[g]),
                    len(actions) - 1,
                    actions,
                    telemetry.position[g],
                    phase,
                    self.env_steps,
                )

    def _bug_name(self, bug: int) -> str:
        names = getattr(self.env, "bug_names", None)  # a bridged game's names its bugs
        return f"injected bug {bug}" if names is None else f"bug {bug} ({names[bug]})"

    def tick(self) -> None:
        """Appends a timeline row. A bug counts from its env step on: a resumed run replays the
        steps after its checkpoint, and a bug whose record it kept from before the kill counts where
        the replay reaches it again, as in the uninterrupted run (its step unknown, -1: at once)."""
        found = ~np.isnan(self.found_at) & (self.found_step <= self.env_steps)
        row = (
            round(time.perf_counter() - self.start, 3),
            self.env_steps,
            int(found.sum()),
            len(self.states),
        )
        self.timeline.append(row)
        with self._timeline_path.open("a") as f:
            f.write(json.dumps(row) + "\n")


class Lineage:
    """Each generation's survivors by origin (:data:`jgtest.methods.wuji.strategies.ORIGINS`),
    and the front's stored scores beside a fresh re-score on run seeds never played before (not
    counted in the budget, no records): the winner's curse, if any, is the gap between the two.
    Rows go to ``lineage.jsonl`` as they come (a resumed run drops those after its checkpoint)
    and to the run's summary."""

    def __init__(self, path: Path, generations_done: int):
        lines = path.read_text().splitlines(keepends=True) if path.exists() else []
        # a torn last line: a kill mid-write
        rows = [json.loads(line) for line in lines if line.endswith("\n")]
        self.rows = [row for row in rows if row["generation"] <= generations_done]
        write_text(path, "".join(json.dumps(row) + "\n" for row in self.rows))
        self._path = path

    def add(self, generation: int, state: SearchState, rescore=None) -> None:
        """Generation ``generation``'s row, the front scored again by ``rescore(policies)`` (if
        given)."""
        objectives, origin = np.asarray(state.objectives), np.asarray(state.origin)
        front = np.flatnonzero(np.asarray(non_dominated_rank(objectives)) == 0)
        fresh = None
        if rescore is not None:
            policies = jax.tree.map(lambda x: x[front], state.population)
            fresh = np.asarray(rescore(policies)).round(4).tolist()
        row = {
            "generation": generation,
            "survivors": {o: int((origin == i).sum()) for i, o in enumerate(ORIGINS)},
            "front": front.tolist(),
            "stored": objectives[front].round(4).tolist(),
            "fresh": fresh,
        }
        self.rows.append(row)
        with self._path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def _by_reach_class(env, found_step: np.ndarray) -> dict:
    """``bugs_by_reach_class``: bugs found in each of the game's reach classes (``reach_classes``,
    e.g. ``NSHArena-v0``'s), with each class's size; ``{}`` for a game without them."""
    classes = getattr(env, "reach_classes", None)
    if classes is None:
        return {}
    found = found_step >= 0
    return {
        "bugs_by_reach_class": {
            c: {
                "found": int(sum(found[i] for i, k in enumerate(classes) if k == c)),
                "of": classes.count(c),
            }
            for c in dict.fromkeys(classes)
        }
    }


def front_json(objectives: np.ndarray) -> dict:
    """``population.json``: each policy's two scores and its Pareto front (0 the first)."""
    ranks = np.asarray(non_dominated_rank(objectives))
    return {
        "exploration": objectives[:, 0].tolist(),
        "winning": objectives[:, 1].tolist(),
        "front": ranks.tolist(),
    }


def run_summary(config: WujiConfig, env, book: Bookkeeper, generations: int, wall_s: float) -> dict:
    """A run's ``summary.json``."""
    found = ~np.isnan(book.found_at)
    kinds = [env.bug_kinds[i] for i in np.flatnonzero(found)]
    return {
        "method": "wuji",
        "strategy": config.strategy,
        "game": config.game,
        "seed": config.seed,
        "generations": generations,
        "bugs_found": int(found.sum()),
        "bugs_total": env.num_bugs,
        "bug_kinds": list(env.bug_kinds),
        "bugs_by_kind": {k: kinds.count(k) for k in sorted(set(kinds))},
        "first_found_s": [None if np.isnan(v) else round(float(v), 3) for v in book.found_at],
        "first_found_step": [None if v < 0 else int(v) for v in book.found_step],
        "budget_steps": config.budget_steps,
        **_by_reach_class(env, book.found_step),
        "state_coverage": len(book.states),
        "cells_covered": int(book.visited.sum()),
        "cells_covered_fraction": float(book.visited.mean()),
        "env_steps": book.env_steps,
        "timeline": book.timeline,
        "wall_s": round(wall_s, 3),
    }
