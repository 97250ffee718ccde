"""RELINE's one entry, :func:`run`: the experiment on any of its games, on device or bridged."""

from __future__ import annotations

from pathlib import Path

from jgtest.methods.reline.config import HOST_GAMES, RelineConfig, is_real_kart, uses_generic_terms
from jgtest.types import PhaseProgress


def run(
    config: RelineConfig,
    out_dir: str | Path,
    progress: PhaseProgress | None = None,
    resume: bool = False,
) -> dict:
    """Runs the experiment, writing in ``out_dir``: ``config.json``, ``bugs.jsonl`` (a record
    per agent, model and bug, written as each agent's evaluation or learning run ends),
    ``checkpoints/``, ``summary.json``, and ``table1.json`` (toy games) or ``low_fps.json`` and the
    plots (the karts, the levels).

    Args:
      config: the experiment.
      out_dir: an existing, writable directory.
      progress: called with ``(phase, done, total)`` as phases advance.
      resume: continue the run in ``out_dir``: on device, training continues from its last
        checkpoint (:func:`jgtest.methods.reline.device.run_on_device`); the bridged games skip
        the phases done (:func:`jgtest.methods.reline.host.run_host_game`,
        :func:`jgtest.methods.reline.real_game.run_real_game`).

    Returns:
      The summary written to ``summary.json``.
    """
    if is_real_kart(config.game):
        from jgtest.methods.reline import stk

        return stk.run_supertuxkart(config, out_dir, progress, resume)
    if uses_generic_terms(config.game):
        from jgtest.methods.reline import level

        return level.run_level(config, out_dir, progress, resume)
    if config.game in HOST_GAMES:
        from jgtest.methods.reline import host

        return host.run_host_game(config, out_dir, progress, resume)
    from jgtest.methods.reline.device import run_on_device

    return run_on_device(config, out_dir, progress, resume)
