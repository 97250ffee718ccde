"""Random testing of a bridged game (``gym:ENV_ID``, ``ale:GAME``, ``vizdoom:LEVEL``,
:func:`run_on_host`): the random agent of :mod:`jgtest.methods.random_testing`, played through
:func:`jgtest.host_loop.play` over ``num_envs`` copies of the game or a Ray game farm.

* chosen: ``resume`` plays a stopped campaign again from its start (same seeds, same keys) and
  writes only bugs not already recorded, because a bridged game's state lives in its process,
  not in a checkpoint.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jgtest import host_loop
from jgtest.checkpoint import config_fingerprint
from jgtest.envs.wrappers import ObservationPipeline
from jgtest.errors import BadInput
from jgtest.files import write_json_atomically
from jgtest.records import BugRecord, BugRecordWriter, records_to_resume
from jgtest.run_dir import begin_campaign
from jgtest.seeds import check_seed
from jgtest.types import Progress

#: What the random agent's frame ring holds: it reads no frame, so the smallest one.
_PIPELINE = ObservationPipeline(size=(8, 8), num_frames=1)


@dataclasses.dataclass(frozen=True)
class HostRandomConfig:
    """Settings of a random campaign on a bridged game.

    Attributes:
      game: a bridged game's name (``gym:ENV_ID``, ``ale:GAME``, ``vizdoom:LEVEL``).
      episodes: episodes played in all.
      num_envs: copies stepped together (in this process).
      seed: campaign seed; copy ``i`` starts from ``seed + i``.
      actors: run the copies as a Ray game farm of this many actors (0: in this process).
      game_kwargs: the game's options (``telemetry``, ``num_cells``, ``max_steps_in_episode``).
    """

    game: str
    episodes: int = 16
    num_envs: int = 1
    seed: int = 0
    actors: int = 0
    game_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in ("episodes", "num_envs"):
            if getattr(self, name) < 1:
                raise BadInput(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.actors < 0:
            raise BadInput(f"actors must be at least 0, got {self.actors}")
        check_seed(self.seed)


def _random_policy(num_actions: int):
    return lambda params, obs, key: jax.random.randint(key, (), 0, num_actions)


def run_on_host(
    config: HostRandomConfig,
    out_dir: str | Path,
    progress: Progress | None = None,
    resume: bool = False,
) -> dict:
    """Runs the campaign on a bridged game, writing ``bugs.jsonl``, ``config.json`` and
    ``summary.json`` in ``out_dir``: each bug the game reports (a Gymnasium game's crash:
    :mod:`envs_bridge.gym`) the moment it first shows, with the episode's actions up to it; the
    summary counts the coverage cells visited and the frame times measured.

    Args:
      config: the campaign.
      out_dir: an existing, writable run directory.
      progress: called as episodes end with ``(episodes_done, episodes_total, bugs_found)``.
      resume: play the campaign in ``out_dir`` again from its start, keeping its records and writing
        only bugs not among them. What stopped it (a kill, a signal, a telemetry function that
        failed and has been fixed) costs the replayed episodes' time, never a record.

    Raises:
      ResumeRefused: ``resume`` and ``out_dir`` holds another campaign, or none.
      BadInput: the game cannot be made with the config's options (nothing is written), or its
        telemetry function returns a field the bridge cannot use
        (:class:`envs_bridge.gym.TelemetryError`; found mid-campaign, the message says where the
        records found before it are kept).
    """
    out_dir = Path(out_dir)
    try:
        game = host_loop.host_game(
            config.game,
            num_envs=config.num_envs,
            seed=config.seed,
            actors=config.actors,
            **config.game_kwargs,
        )
    # an unknown game or option, a bad telemetry name: before anything is written
    except (ValueError, TypeError) as error:
        raise BadInput(str(error)) from None
    begin_campaign(
        out_dir,
        {"method": "random", **dataclasses.asdict(config)},
        config_fingerprint(config),
        resume,
    )
    written = {r.bug_id for r in records_to_resume(out_dir, resume)}
    start = time.perf_counter()
    with game:
        with BugRecordWriter(out_dir / "bugs.jsonl") as writer:
            found: set[int] = set()

            def on_bug(fields: dict) -> None:
                found.add(fields["bug_id"])
                if fields["bug_id"] in written:
                    return  # written before the campaign was stopped
                writer.write(
                    BugRecord(
                        kind=game.bug_kinds[fields["bug_id"]],
                        game=config.game,
                        game_kwargs=config.game_kwargs,
                        wall_s=round(time.perf_counter() - start, 3),
                        detail=f"{game.bug_names[fields['bug_id']]} in the game",
                        **fields,
                    )
                )

            try:
                played = host_loop.play(
                    game,
                    _PIPELINE,
                    _random_policy(game.num_actions),
                    None,
                    config.episodes,
                    jax.random.key(config.seed),
                    seed=config.seed,
                    on_bug=on_bug,
                    on_progress=None
                    if progress is None
                    else lambda done, total: progress(done, total, len(found)),
                )
            # the telemetry function failed mid-campaign: say what is kept
            except BadInput as error:
                raise BadInput(
                    f"{error}; the bugs found before it are kept in {writer.path}; fix it and "
                    "continue with --resume"
                ) from None
        num_cells, bug_kinds = game.num_cells, game.bug_kinds
    wall_s = time.perf_counter() - start
    valid, tel = played["valid"], played["telemetry"]
    frame_ms = np.asarray(tel.frame_time_ms)[valid]
    found = np.asarray(tel.bugs_fired)[valid].any(axis=0)
    summary = {
        "method": "random",
        "game": config.game,
        "bugs_found": int(found.sum()),
        "bugs_total": len(bug_kinds),
        "bugs_by_kind": {
            k: int(sum(found[i] for i, kind in enumerate(bug_kinds) if kind == k))
            for k in sorted(set(bug_kinds))
        },
        "state_coverage": int(np.unique(np.asarray(tel.cell)[valid]).size),
        "num_cells": num_cells,
        "episodes": int(valid.shape[0]),
        "env_steps": int(valid.sum()),
        "frame_time_ms": {
            "median": float(np.median(frame_ms)),
            "p99": float(np.percentile(frame_ms, 99)),
            "max": float(frame_ms.max()),
        },
        "wall_s": round(wall_s, 3),
        "steps_per_s": round(int(valid.sum()) / wall_s, 1),
    }
    write_json_atomically(out_dir / "summary.json", summary)
    return summary


def run_in_console(
    config: HostRandomConfig, out_dir: str | Path, quiet: bool = False, resume: bool = False
) -> dict:
    """:func:`run_on_host` with a progress bar (unless ``quiet``), then its table: what ``jgtest run
    random --game gym:…`` shows."""
    from rich.table import Table

    from jgtest.report.console import progress, show

    with progress(quiet) as bars:
        task = bars.add_task(f"random × {config.game}", total=config.episodes)
        summary = run_on_host(
            config,
            out_dir,
            lambda done, total, bugs: bars.update(task, completed=done, total=total),
            resume,
        )
    table = Table(title=f"random testing of {config.game}")
    for column in (
        "bugs found",
        "cells visited",
        "episodes",
        "env steps",
        "frame ms (median / p99)",
        "steps/s",
    ):
        table.add_column(column, justify="right")
    ms = summary["frame_time_ms"]
    table.add_row(
        f"{summary['bugs_found']}/{summary['bugs_total']}",
        str(summary["state_coverage"]),
        str(summary["episodes"]),
        f"{summary['env_steps']:,}",
        f"{ms['median']:.2f} / {ms['p99']:.2f}",
        f"{summary['steps_per_s']:,.0f}",
    )
    show(table)
    print(f"wrote {Path(out_dir) / 'bugs.jsonl'} and {Path(out_dir) / 'summary.json'}")
    return summary
