"""Game registry: ``make(name, **kwargs) -> (env, env_params)`` and ``register``.

Keyword arguments of ``make`` go to the game's constructor when they name a
constructor argument (shape-setting options) and into its ``EnvParams`` when
they name a params field (numeric options, vmappable); anything else is
refused with the list of valid options.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Callable

import jax.numpy as jnp

from jgtest.envs.base import TestingEnv

_REGISTRY: dict[str, Callable[..., TestingEnv]] = {}


def register(name: str, entry_point: Callable[..., TestingEnv], *, override: bool = False) -> None:
    """Registers a game constructor under ``name`` (e.g. ``"MyGame-v0"``).

    Raises:
      ValueError: ``name`` is taken and ``override`` is false.
    """
    if name in _REGISTRY and not override:
        raise ValueError(f"game {name!r} is already registered; pass override=True to replace it")
    _REGISTRY[name] = entry_point


def registered_games() -> tuple[str, ...]:
    """Names of all registered games, sorted."""
    return tuple(sorted(_REGISTRY))


def make(name: str, **kwargs) -> tuple[TestingEnv, object]:
    """Builds a registered game and its parameters.

    Args:
      name: registered game id, e.g. ``"BlockMaze-v0"``.
      **kwargs: constructor options and/or ``EnvParams`` field overrides.

    Returns:
      ``(env, env_params)``; the params are checked with ``env.validate_params``.

    Raises:
      ValueError: unknown game name, unknown option, or invalid params.

    Example:
      >>> env, params = make("CartPoleBugs-v0", max_steps_in_episode=500)
    """
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown game {name!r}.{hint} Registered games: {', '.join(registered_games())}")
    entry_point = _REGISTRY[name]
    ctor_names = set(inspect.signature(entry_point).parameters)
    ctor_kwargs = {k: v for k, v in kwargs.items() if k in ctor_names}
    env = entry_point(**ctor_kwargs)
    params = env.default_params
    field_names = {f.name for f in dataclasses.fields(params)}
    unknown = sorted(set(kwargs) - ctor_names - field_names)
    if unknown:
        raise ValueError(
            f"{name}: unknown option(s) {', '.join(unknown)}. Constructor options: "
            f"{', '.join(sorted(ctor_names)) or 'none'}; params: {', '.join(sorted(field_names))}"
        )
    overrides = {k: _like(getattr(params, k), v) for k, v in kwargs.items() if k in field_names and k not in ctor_names}
    params = params.replace(**overrides)
    env.validate_params(params)
    return env, params


def hashable(value):
    """An option's value with its lists as tuples, so that a config holding it is hashable
    (configs key compiled functions)."""
    return tuple(hashable(v) for v in value) if isinstance(value, (list, tuple)) else value


def _like(default, value):
    """Casts an override to the default's kind (arrays stay arrays, scalars scalars)."""
    if hasattr(default, "shape") and getattr(default, "ndim", 0) > 0:
        return jnp.asarray(value, dtype=default.dtype)
    return type(default)(value) if isinstance(default, (int, float, bool)) else value
