"""What every ``jgtest run METHOD`` shares: its options (defined once here), ``KEY=VALUE`` parsing,
the run directory, and the report written when a campaign ends. Imports nothing heavy: ``--help``
must print at once."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def common_options() -> argparse.ArgumentParser:
    """The options of every ``jgtest run`` method: ``--out``, ``--seed``, ``--resume``, ``--overwrite``, ``--quiet``."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("shared options")
    group.add_argument("--out", required=True, help="run directory for bugs.jsonl, summary.json, config.json")
    group.add_argument("--seed", type=int, default=0)
    group.add_argument("--resume", action="store_true", help="continue a killed campaign in --out from its checkpoints")
    group.add_argument("--overwrite", action="store_true", help="replace a campaign already in --out")
    group.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def game_options(default_game: str) -> argparse.ArgumentParser:
    """The shared game options of a ``jgtest run`` method: ``--game`` (``default_game`` by default) and ``--game-arg``."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("game options")
    group.add_argument("--game", default=default_game, help=f"registered game id (see `jgtest games`; default {default_game})")
    group.add_argument("--game-arg", action="append", default=[], metavar="KEY=VALUE", help="game option (JSON value), repeatable")
    return parser


def parse_key_values(pairs: list[str], flag: str = "--game-arg") -> dict:
    """``KEY=VALUE`` pairs as options; a value is JSON where it parses (lists become tuples, so
    configs holding them stay hashable, static under jit), else a string."""
    from jgtest.envs.registration import hashable

    kwargs = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"error: {flag} expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            kwargs[key] = hashable(json.loads(value))
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def fail(error: Exception) -> SystemExit:
    """A one-line ``error: ...`` exit for a refused input."""
    return SystemExit(f"error: {error}")


def run_dir(args) -> Path:
    """``--out`` prepared (:func:`jgtest.run_dir.prepare_run_dir`), or a one-line error."""
    from jgtest.run_dir import prepare_run_dir

    try:
        return prepare_run_dir(args.out, args.overwrite, args.resume)
    except ValueError as error:
        raise fail(error) from None


def say_report(run_dir: str | Path) -> None:
    """Writes the run directory's ``report.html`` and prints where it is."""
    from jgtest.report.html import write_report

    print(f"report: {write_report(run_dir).resolve()}")
