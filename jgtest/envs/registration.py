"""Game registry: ``make(name, **kwargs) -> (env, env_params)`` and ``register``.

* chosen: one ``make`` for constructor options and ``EnvParams`` fields, routed by name, because
  a user should not need to know which of the two an option is.
* chosen: an option's value must have its exact kind (no ``2.5`` for an integer, no ``1`` for a
  boolean, no NaN), because a silently cast option changes the game under test.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import types
import typing
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from jgtest.envs.base import TestingEnv
from jgtest.errors import BadInput

_REGISTRY: dict[str, Callable[..., TestingEnv]] = {}
#: Games adapted by name rather than registered: ``gymnax:ID``, ``craftax:ID``
#: (:mod:`jgtest.envs.adapter`).
ADAPTED_PREFIXES = ("gymnax", "craftax")


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

    A keyword goes to the game's constructor when it names a constructor argument (shape-setting
    options) and into its ``EnvParams`` when it names a params field (numeric options,
    vmappable); anything else is refused with the list of valid options. A value must have the
    option's exact kind (the constructor's annotation, or the params field's default): an integer
    option refuses ``2.5`` (and ``True``), a boolean one refuses ``1``, and no number option takes
    NaN or an infinity. Each refusal names the key.

    Args:
      name: registered game id, e.g. ``"BlockMaze-v0"``.
      **kwargs: constructor options and/or ``EnvParams`` field overrides.

    Returns:
      ``(env, env_params)``; the params are checked with ``env.validate_params``.

    Raises:
      ValueError: unknown game name, unknown option, or invalid params;
        :class:`jgtest.errors.BadInput` (a ``ValueError``) for an option's value of the wrong kind
        or not finite.

    Example:
      >>> env, params = make("CartPoleBugs-v0", max_steps_in_episode=500)
    """
    if name.partition(":")[0] in ADAPTED_PREFIXES:
        from jgtest.envs.adapter import by_name

        return by_name(name, **kwargs)
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"unknown game {name!r}.{hint} Registered games: {', '.join(registered_games())}"
        )
    entry_point = _REGISTRY[name]
    ctor_names = set(inspect.signature(entry_point).parameters)
    ctor_kwargs = {k: v for k, v in kwargs.items() if k in ctor_names}
    _check_constructor_options(name, entry_point, ctor_kwargs)
    env = entry_point(**ctor_kwargs)
    params = env.default_params
    field_names = {f.name for f in dataclasses.fields(params)}
    unknown = sorted(set(kwargs) - ctor_names - field_names)
    if unknown:
        raise ValueError(
            f"{name}: unknown option(s) {', '.join(unknown)}. Constructor options: "
            f"{', '.join(sorted(ctor_names)) or 'none'}; params: {', '.join(sorted(field_names))}"
        )
    overrides = {
        k: _like(name, k, getattr(params, k), v)
        for k, v in kwargs.items()
        if k in field_names and k not in ctor_names
    }
    params = params.replace(**overrides)
    env.validate_params(params)
    return env, params


def hashable(value):
    """An option's value with its lists as tuples, so that a config holding it is hashable
    (configs key compiled functions)."""
    return tuple(hashable(v) for v in value) if isinstance(value, (list, tuple)) else value


_NUMBER_KINDS = {bool: "bool", int: "int", float: "float"}


#: numpy dtype kinds each option kind accepts: an int is a float option's value too, a float
#: never an int's (even ``2.0``), and a bool only a bool's.
_ACCEPTED_DTYPES = {"bool": "b", "int": "iu", "float": "iuf"}


def _kind_of(value) -> str | None:
    """``"bool"``, ``"int"``, ``"float"`` for a number of that kind (numpy's too), else ``None``."""
    kind = (
        np.asarray(value).dtype.kind if isinstance(value, (bool, int, float, np.generic)) else None
    )
    return {"b": "bool", "i": "int", "u": "int", "f": "float"}.get(kind)


def _check_value(game: str, key: str, kind: str, value, scalar: bool = True) -> None:
    """Refuses ``value`` for an option of ``kind`` (``"bool"``, ``"int"``, ``"float"``): one number
    if ``scalar``, else a nested list or array of them; the error names the key and the value at
    fault."""
    want = {"int": "a whole number", "bool": "true or false", "float": "a number"}[kind]
    try:
        array = np.asarray(value)
    except ValueError:  # a ragged list
        raise BadInput(
            f"{game}: option {key} takes a rectangular array of numbers, got {value!r}"
        ) from None
    if scalar and array.ndim:
        raise BadInput(f"{game}: option {key} takes {want}, got {value!r}")
    flat = array.ravel()
    if array.dtype.kind not in _ACCEPTED_DTYPES[kind]:
        if (
            array.dtype.kind == "f" and flat.size
        ):  # an int option: its first value that is not whole
            first = (flat[flat != np.floor(flat)] if (flat != np.floor(flat)).any() else flat)[
                0
            ].item()
        else:
            first = flat[0].item() if array.dtype.kind in "biuf" and flat.size else value
        raise BadInput(f"{game}: option {key} takes {want}, got {first!r}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise BadInput(
            f"{game}: option {key} takes finite numbers, got {flat[~np.isfinite(flat)][0].item()!r}"
        )


def _check_constructor_options(game: str, entry_point: Callable, kwargs: dict) -> None:
    """Checks constructor options against the constructor's annotations where they name numbers
    (``int``, ``float``, ``bool``, optionally ``| None``); others are the constructor's to check."""
    try:
        hints = typing.get_type_hints(
            entry_point.__init__ if inspect.isclass(entry_point) else entry_point
        )
    except (NameError, TypeError):
        return
    for key, value in kwargs.items():
        hint = hints.get(key)
        allowed = (
            set(typing.get_args(hint))
            if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
            else {hint}
        )
        if value is None and type(None) in allowed:
            continue
        kinds = [_NUMBER_KINDS.get(t) for t in allowed - {type(None)}]
        if kinds in (["bool"], ["int"], ["float"]):
            _check_value(game, key, kinds[0], value)


def _like(game: str, key: str, default, value):
    """``value`` as the params field ``key`` holds it (arrays stay arrays of the default's dtype,
    scalars scalars), once checked to be of the default's kind (:func:`_check_value`)."""
    if hasattr(default, "shape") and getattr(default, "ndim", 0) > 0:
        kind = _kind_of(np.zeros((), default.dtype)[()])
        _check_value(game, key, kind, value, scalar=False)
        if kind == "int" and np.size(value):
            low, high = np.iinfo(default.dtype).min, np.iinfo(default.dtype).max
            if not (low <= np.min(value) and np.max(value) <= high):
                raise BadInput(
                    f"{game}: option {key} takes whole numbers in [{low}, {high}] "
                    f"({default.dtype}), got {value!r}"
                )
        # its shape is the game's to check (validate_params)
        return jnp.asarray(value, dtype=default.dtype)
    kind = _kind_of(default)
    if kind is None:
        return value
    _check_value(game, key, kind, value)
    return type(default)(value)
