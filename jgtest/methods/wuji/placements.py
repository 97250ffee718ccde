"""Each Wuji run's game: its bugs (and gold) re-drawn from the run's seed (§V-A), and the options
that rebuild it, written with every bug record."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np


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
    drawn = jitted_randomize(env)(jax.random.fold_in(jax.random.key(seed), 0x5EED), params)
    fields = {field.name for field in dataclasses.fields(params)}
    options = dict(game_kwargs)
    overrides = {name: value for name, value in options.items() if name not in fields}
    for name in sorted(fields):
        if not _same(getattr(env.default_params, name), getattr(drawn, name)):
            overrides[name] = np.asarray(getattr(drawn, name)).tolist()
    return drawn, overrides


@functools.lru_cache(maxsize=8)
def jitted_randomize(env) -> Callable:
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
    probes = jax.jit(jax.vmap(env.randomize, in_axes=(0, None)))(
        jax.random.split(jax.random.key(0), 8), params
    )
    redrawn = sorted(
        name
        for name in options
        if not all(_same(getattr(params, name), v) for v in getattr(probes, name))
    )
    if redrawn:
        raise ValueError(
            f"{env.name}: {', '.join(redrawn)} is re-drawn for each run (its bugs are placed per "
            "seed); a campaign cannot set it"
        )


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b)
