"""Random testing, every paper's baseline (Wuji's "random", §V-A3; RELINE's, §3.1): a uniform
action each step. :func:`run` plays ``num_envs`` slots under ``jit(vmap)``, a chunk of steps a
device call, writing each bug's record when first seen (bridged games:
:mod:`jgtest.methods.host_random`).

* chosen: every key from ``(seed, slot, episode)``, because records then replay exactly.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from jgtest.checkpoint import Checkpointer, config_fingerprint, strongly_typed
from jgtest.coverage import cell_set
from jgtest.envs.base import step_with_reset
from jgtest.envs.registration import make
from jgtest.errors import BadInput
from jgtest.files import write_json_atomically
from jgtest.records import BugRecord, BugRecordWriter, records_to_resume
from jgtest.rollout import action_key, episode_key, replay_trace, reset_key, step_key
from jgtest.run_dir import begin_campaign
from jgtest.seeds import check_seed
from jgtest.sharding import shard_batch
from jgtest.types import Progress

if TYPE_CHECKING:
    from jgtest.methods.host_random import HostRandomConfig


@dataclasses.dataclass(frozen=True)
class RandomCampaignConfig:
    """Settings of a random-testing campaign.

    Attributes:
      game: registered game id.
      num_envs: parallel episode slots.
      steps_per_env: steps each slot plays in total; a multiple of ``chunk_steps``, so that the
        campaign plays exactly this many (one compiled chunk length).
      chunk_steps: steps per device call (granularity of records and progress).
      seed: campaign seed, 0 <= seed < 2**32; with the slot and episode index it fixes every key.
      game_kwargs: options for ``jgtest.make``.

    Raises:
      BadInput: a count below 1, a budget the chunk does not divide, a seed out of range.
    """

    game: str = "BlockMaze-v0"
    num_envs: int = 256
    steps_per_env: int = 2_000
    chunk_steps: int = 200
    seed: int = 0
    game_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in ("num_envs", "steps_per_env", "chunk_steps"):
            if getattr(self, name) < 1:
                raise BadInput(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.steps_per_env % self.chunk_steps:
            raise BadInput(
                f"steps_per_env {self.steps_per_env} is not a multiple of chunk_steps "
                f"{self.chunk_steps}: the campaign would play "
                f"{-(-self.steps_per_env // self.chunk_steps) * self.chunk_steps}; choose a chunk "
                f"that divides it (e.g. {largest_divisor(self.steps_per_env, self.chunk_steps)})"
            )
        check_seed(self.seed)


def largest_divisor(steps: int, at_most: int) -> int:
    """The largest chunk length of at most ``at_most`` that divides ``steps``."""
    return next(d for d in range(min(steps, at_most), 0, -1) if steps % d == 0)


def make_chunk_fn(env, params, seed: int, num_envs: int, chunk_steps: int, covered):
    """Returns ``(init() -> carry, chunk(carry) -> (carry, outputs))``, both jitted.

    ``outputs`` holds, per slot and step: action, bugs fired, cell, position,
    done, episode index and step in episode. The carry holds the slots' games
    and the campaign's distinct cells so far in the cell set ``covered``; each
    chunk's cells are added to it on device, in one sorted batch.
    """
    slots = jnp.arange(num_envs)

    def init_slot(b):
        _, state = env.reset_env(reset_key(episode_key(seed, b, 0)), params)
        return state, jnp.int32(0), jnp.int32(0)

    def step_slot(b, carry):
        state, episode, t = carry
        ep_key = episode_key(seed, b, episode)
        action = env.action_space(params).sample(action_key(ep_key, t))
        next_reset = reset_key(episode_key(seed, b, episode + 1))
        _, state, _, terminated, truncated, info = step_with_reset(
            env, params, state, action, step_key(ep_key, t), next_reset
        )
        done = terminated | truncated
        tel = info["telemetry"]
        out = (action, tel.bugs_fired, tel.cell, tel.position, done, episode, t)
        return (state, episode + done, jnp.where(done, 0, t + 1)), out

    def chunk(carry):
        slot_carry, cover = carry
        slot_carry, out = jax.lax.scan(
            lambda c, _: jax.vmap(step_slot)(slots, c), slot_carry, None, length=chunk_steps
        )
        cover, _ = covered.add(cover, out[2])
        # [B, T, ...]
        return (slot_carry, cover), jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), out)

    return jax.jit(lambda: (jax.vmap(init_slot)(slots), covered.init())), jax.jit(chunk)


class _EpisodeTraces:
    """Host-side action traces of each slot's running episode, in fixed arrays (checkpointed with
    the campaign): ``actions [num_envs, max_steps]`` and ``length [num_envs]``. An episode never
    runs longer than the game's episode cap, so ``max_steps`` is that cap."""

    def __init__(self, num_envs: int, max_steps: int):
        self.actions = np.zeros((num_envs, max_steps), np.int32)
        self.length = np.zeros(num_envs, np.int32)

    def trace(self, actions: np.ndarray, done: np.ndarray, b: int, t: int) -> np.ndarray:
        """Actions of slot ``b``'s episode up to chunk step ``t`` (inclusive)."""
        ended = np.flatnonzero(done[b, :t])
        if ended.size:
            return actions[b, ended[-1] + 1 : t + 1]
        return np.concatenate([self.actions[b, : self.length[b]], actions[b, : t + 1]])

    def advance(self, actions: np.ndarray, done: np.ndarray) -> None:
        for b in range(actions.shape[0]):
            ended = np.flatnonzero(done[b])
            start, tail = (
                (0, actions[b, ended[-1] + 1 :]) if ended.size else (self.length[b], actions[b])
            )
            self.actions[b, start : start + len(tail)] = tail
            self.length[b] = start + len(tail)


def _books(
    chunk: int, episodes: int, elapsed_s: float, found_at: np.ndarray, found_where: np.ndarray
) -> dict[str, np.ndarray]:
    """The host's side of a campaign's checkpoint: chunks done, episodes ended, wall time, when each
    bug was found and where (``found_where[bug] = (slot, episode, step)``, what its record is
    re-derived from if the log lost it), each with one trailing row: orbax saves no empty array, and
    a game may have no bugs."""
    found_at = np.append(np.asarray(found_at, np.float64), np.nan)
    found_where = np.concatenate(
        [np.asarray(found_where, np.int64).reshape(-1, 3), np.zeros((1, 3), np.int64)]
    )
    return {
        "chunk": np.int64(chunk),
        "episodes": np.int64(episodes),
        "elapsed_s": np.float64(elapsed_s),
        "found_at": found_at,
        "found_where": found_where,
    }


def _record(
    env, config: RandomCampaignConfig, bug: int, where, actions, position, wall_s: float
) -> BugRecord:
    """The record of injected bug ``bug``, found at ``where = (slot, episode, step)`` after
    ``actions``."""
    slot, episode, step = (int(v) for v in where)
    return BugRecord(
        kind=env.bug_kinds[bug],
        game=config.game,
        bug_id=int(bug),
        step=step,
        episode=episode,
        seed=config.seed,
        env_index=slot,
        actions=tuple(int(a) for a in actions),
        game_kwargs=config.game_kwargs,
        position=tuple(float(p) for p in position),
        wall_s=round(float(wall_s), 3),
        detail=f"injected bug {bug} fired",
    )


def rederived_record(
    env, params, config: RandomCampaignConfig, bug: int, where, wall_s: float
) -> BugRecord:
    """A found bug's record rebuilt from the checkpoint's ``where = (slot, episode, step)``: the
    random agent's actions depend only on the campaign's keys (``action_key``), so the trace is
    drawn again, and replayed (:func:`jgtest.rollout.replay_trace`) for the position and to check
    the bug fires.

    Raises:
      RuntimeError: the re-derived trace does not fire the bug at its step (a damaged checkpoint).
    """
    slot, episode, step = (int(v) for v in where)
    ep_key = episode_key(config.seed, slot, episode)
    sample = env.action_space(params).sample
    actions = jax.vmap(lambda t: sample(action_key(ep_key, t)))(jnp.arange(step + 1))
    telemetry, _, _ = replay_trace(env, params, config.seed, slot, episode, actions)
    if not bool(telemetry.bugs_fired[step, bug]):
        raise RuntimeError(
            f"bug {bug}: the trace re-derived from the checkpoint (slot {slot}, episode "
            f"{episode}, step {step}) does not fire it"
        )
    return _record(
        env, config, bug, where, np.asarray(actions), np.asarray(telemetry.position[step]), wall_s
    )


def run(
    config: RandomCampaignConfig | HostRandomConfig,
    out_dir: str | Path,
    progress: Progress | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Runs the campaign, writing ``bugs.jsonl``, ``config.json``, ``checkpoints/`` and
    ``summary.json`` in ``out_dir``; with a :class:`jgtest.methods.host_random.HostRandomConfig`, on
    its bridged game (:func:`jgtest.methods.host_random.run_on_host`, no checkpoints).

    After every device call the campaign's state (the slots' games and keys, the cells covered, the
    bugs found and when, the running episodes' traces) is saved with orbax
    (:class:`jgtest.checkpoint.Checkpointer`); ``resume`` continues from the last one and ends where
    an uninterrupted campaign ends (a record written after that checkpoint is not written twice, and
    one the checkpoint counts as found but the log lost is written again: :func:`rederived_record`).
    A resume of another campaign is refused before any file is written
    (:func:`jgtest.run_dir.begin_campaign`).

    Args:
      config: the campaign.
      out_dir: an existing, writable run directory.
      progress: called with ``(done, total, bugs_found)``: env steps after each device call
        (on a bridged game: episodes, as they end).
      resume: continue the campaign in ``out_dir`` from its last checkpoint (on a bridged game:
        play it again, writing only bugs not already recorded).

    Returns:
      The summary dict written to ``summary.json``.
    """
    if not isinstance(config, RandomCampaignConfig):
        from jgtest.methods.host_random import run_on_host

        return run_on_host(config, out_dir, progress, resume)
    out_dir = Path(out_dir)
    env, params = make(config.game, **config.game_kwargs)
    begin_campaign(
        out_dir,
        {"method": "random", **dataclasses.asdict(config)},
        config_fingerprint(config),
        resume,
    )
    num_chunks = config.steps_per_env // config.chunk_steps
    covered = cell_set(
        env.num_cells, max_distinct=num_chunks * config.chunk_steps * config.num_envs
    )
    init, chunk = make_chunk_fn(
        env, params, config.seed, config.num_envs, config.chunk_steps, covered
    )
    traces = _EpisodeTraces(config.num_envs, int(np.asarray(params.max_steps_in_episode)))
    books = _books(0, 0, 0.0, np.full(env.num_bugs, np.nan), np.zeros((env.num_bugs, 3)))
    # typed as a restored carry: a resumed run reuses the compiled chunk
    carry = strongly_typed(init())
    with (
        Checkpointer(out_dir / "checkpoints", config_fingerprint(config)) as ckpt,
        BugRecordWriter(out_dir / "bugs.jsonl") as writer,
    ):
        written = {r.bug_id for r in records_to_resume(out_dir, resume)}
        if resume and ckpt.latest_step() is not None:
            carry, books, kept_traces = ckpt.restore(
                (carry, books, (traces.actions, traces.length))
            )
            traces.actions, traces.length = (np.asarray(x) for x in kept_traces)
        found_at = np.asarray(books["found_at"], float)[:-1]
        found_where = np.asarray(books["found_where"], np.int64)[:-1]
        # found before the checkpoint, lost from the log since
        for bug in np.flatnonzero(~np.isnan(found_at)):
            if int(bug) not in written:
                warnings.warn(
                    f"{writer.path}: bug {bug}, found before the last checkpoint, has no record; "
                    "writing it again from the checkpoint",
                    stacklevel=2,
                )
                writer.write(
                    rederived_record(env, params, config, int(bug), found_where[bug], found_at[bug])
                )
        episodes, start = int(books["episodes"]), time.perf_counter() - float(books["elapsed_s"])
        # the slots spread over every device (jgtest.sharding)
        carry = (shard_batch(carry[0]), carry[1])
        for c in range(int(books["chunk"]), num_chunks):
            carry, out = chunk(carry)
            actions, fired, _, position, done, episode, t_in_ep = jax.device_get(out)
            new = fired & np.isnan(found_at)[None, None, :]
            for b, t, bug in zip(*np.nonzero(new)):
                if not np.isnan(found_at[bug]):
                    continue  # found earlier in this chunk
                found_at[bug] = time.perf_counter() - start
                found_where[bug] = (b, episode[b, t], t_in_ep[b, t])
                if int(bug) in written:
                    continue  # written before the campaign was stopped, after its last checkpoint
                writer.write(
                    _record(
                        env,
                        config,
                        int(bug),
                        found_where[bug],
                        traces.trace(actions, done, b, t),
                        position[b, t],
                        found_at[bug],
                    )
                )
            traces.advance(actions, done)
            episodes += int(done.sum())
            books = _books(c + 1, episodes, time.perf_counter() - start, found_at, found_where)
            ckpt.save(c + 1, (carry, books, (traces.actions, traces.length)))
            if progress is not None:
                progress(
                    (c + 1) * config.chunk_steps * config.num_envs,
                    num_chunks * config.chunk_steps * config.num_envs,
                    int((~np.isnan(found_at)).sum()),
                )
    wall_s = time.perf_counter() - start
    env_steps = num_chunks * config.chunk_steps * config.num_envs
    kinds = [env.bug_kinds[i] for i in np.flatnonzero(~np.isnan(found_at))]
    visited = np.zeros(env.num_cells, bool)
    visited[covered.members(carry[1])] = True
    summary = {
        "method": "random",
        "game": config.game,
        "bugs_found": int((~np.isnan(found_at)).sum()),
        "bugs_total": env.num_bugs,
        "bugs_by_kind": {k: kinds.count(k) for k in sorted(set(kinds))},
        "first_found_s": [None if np.isnan(v) else round(float(v), 3) for v in found_at],
        "state_coverage": int(carry[1].size),
        "state_coverage_fraction": float(carry[1].size) / env.num_cells,
        "episodes": episodes,
        "env_steps": env_steps,
        "wall_s": round(wall_s, 3),
        "steps_per_s": round(env_steps / wall_s, 1),
    }
    write_json_atomically(out_dir / "summary.json", summary)
    np.save(out_dir / "visited_cells.npy", visited.reshape(env.map_shape))
    return summary


def run_in_console(
    config: RandomCampaignConfig, out_dir: str | Path, quiet: bool = False, resume: bool = False
) -> dict[str, Any]:
    """:func:`run` with a progress bar (unless ``quiet``), then its table: what ``jgtest run
    random`` and the main job show."""
    from rich.table import Table

    from jgtest.report.console import progress, show

    with progress(quiet, ("bugs", "bugs")) as bars:
        name = f"random × {config.game}"
        task = bars.add_task(
            f"{name} (compiling)", total=config.num_envs * config.steps_per_env, bugs=0
        )

        def on_chunk(done, total, bugs):
            bars.update(task, description=name, completed=min(done, total), total=total, bugs=bugs)

        summary = run(config, out_dir, progress=on_chunk, resume=resume)
    table = Table(title=f"random testing of {config.game}")
    for column in ("bugs found", "state coverage", "episodes", "env steps", "steps/s", "wall s"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{summary['bugs_found']}/{summary['bugs_total']}",
        f"{summary['state_coverage']} ({summary['state_coverage_fraction']:.1%})",
        str(summary["episodes"]),
        f"{summary['env_steps']:,}",
        f"{summary['steps_per_s']:,.0f}",
        f"{summary['wall_s']:.1f}",
    )
    show(table)
    print(f"wrote {Path(out_dir) / 'bugs.jsonl'} and {Path(out_dir) / 'summary.json'}")
    return summary
