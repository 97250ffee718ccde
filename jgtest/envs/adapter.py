"""Any JAX game with gymnax's API as a jgtest game: :func:`adapt`, and ``gymnax:ID`` or
``craftax:ID`` by name.

The adapted game jits, vmaps and auto-resets like the twins and reports a
:class:`jgtest.types.Telemetry` each step, so the same oracles, coverage and bug records apply::

    env, params = jgtest.adapt(inner, inner_params, telemetry=fn, num_cells=4096)

* chosen: without a telemetry function, the cell is a hash of the quantized observation
  (:func:`observation_cell`), because every game has observation bounds.
* chosen: a false assertion fires a ``logical`` bug once per episode, as the twins' bugs fire.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jgtest import extras
from jgtest.envs.base import TestingEnv
from jgtest.errors import BadInput
from jgtest.signals import DEVICE_DEFAULT
from jgtest.types import Telemetry, check_telemetry_fields

#: The telemetry fields a user's function may return, with the shape each must have.
TELEMETRY_FIELDS = {"position": (2,), "cell": (), "frame_time_ms": (), "crashed": ()}
#: Cells of the observation hash used when the telemetry gives no cell.
HASH_CELLS = 65_536


class AdapterError(BadInput):
    """A game or function the adapter cannot use; the message names what is wrong."""


@struct.dataclass
class AdaptedState(environment.EnvState):
    inner: Any
    #: bool[max(num_bugs, 1)]: each assertion failed already this episode (never empty: orbax saves
    #: no empty array)
    seen: jax.Array
    time: int


@struct.dataclass
class AdaptedParams(environment.EnvParams):
    inner: Any = None
    max_steps_in_episode: int = 10_000


def observation_cell(obs: jax.Array, low: jax.Array, high: jax.Array, num_cells: int) -> jax.Array:
    """A cell from the observation: each feature quantized to 16 levels over ``[low, high]``, the
    levels hashed (a polynomial hash mod 2**31) into ``[0, num_cells)``. Jittable."""
    flat = obs.reshape(-1).astype(jnp.float32)
    span = jnp.where(jnp.isfinite(high - low) & (high > low), high - low, 1.0)
    levels = jnp.clip(
        jnp.floor((flat - jnp.where(jnp.isfinite(low), low, 0.0)) / span * 16), 0, 15
    ).astype(jnp.uint32)
    weights = jnp.asarray(np.array([pow(31, i, 2**31) for i in range(flat.size)], np.uint32))
    return (jnp.sum(levels * weights, dtype=jnp.uint32) % jnp.uint32(num_cells)).astype(jnp.int32)


class AdaptedGame(TestingEnv):
    """A gymnax-API game as a jgtest game; build it with :func:`adapt`.

    The game must provide ``reset_env(key, params)``, ``step_env(key, state, action, params)``,
    ``action_space`` (discrete), ``observation_space`` and ``default_params``. Its own ``done`` is
    split into terminated and truncated with the adapter's step counter and
    ``max_steps_in_episode``.
    """

    def __init__(
        self,
        env,
        env_params,
        name: str,
        telemetry: Callable | None = None,
        num_cells: int | None = None,
        map_shape: tuple[int, int] | None = None,
        assertions: dict[str, Callable] | None = None,
        state_features: Callable | None = None,
        state_feature_bounds: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        super().__init__()
        self.inner, self.env_id, self._telemetry = env, name, telemetry
        self._inner_params = env_params if env_params is not None else env.default_params
        self._assertions = tuple((assertions or {}).items())
        self._features, self._feature_bounds = state_features, state_feature_bounds
        self._num_cells = int(num_cells or (np.prod(map_shape) if map_shape else HASH_CELLS))
        self._map_shape = tuple(map_shape) if map_shape else (1, self._num_cells)
        if int(np.prod(self._map_shape)) != self._num_cells:
            raise AdapterError(
                f"{name}: map_shape {self._map_shape} has {int(np.prod(self._map_shape))} cells, "
                f"num_cells is {self._num_cells}"
            )
        self.signals = (
            DEVICE_DEFAULT
            - ({"position"} if telemetry is None else set())
            - ({"oracle_inputs"} if not self._assertions else set())
        )

    @property
    def default_params(self) -> AdaptedParams:
        inner = self._inner_params
        steps = (
            getattr(inner, "max_steps_in_episode", None)
            or getattr(inner, "max_timesteps", None)
            or 10_000
        )
        return AdaptedParams(inner=inner, max_steps_in_episode=int(steps))

    @property
    def bug_kinds(self) -> tuple[str, ...]:
        return ("logical",) * len(self._assertions)

    @property
    def map_shape(self) -> tuple[int, int]:
        return self._map_shape

    @property
    def num_actions(self) -> int:
        return int(self.inner.action_space(self.inner.default_params).n)

    def observation_space(self, params: AdaptedParams):
        return self.inner.observation_space(params.inner)

    def reset_env(self, key, params: AdaptedParams):
        obs, inner = self.inner.reset_env(key, params.inner)
        return obs, AdaptedState(
            inner=inner, seen=jnp.zeros(max(len(self._assertions), 1), bool), time=0
        )

    def step_env(self, key, state: AdaptedState, action, params: AdaptedParams):
        obs, inner, reward, done, info = self.inner.step_env(key, state.inner, action, params.inner)
        time = state.time + 1
        fields = self.read(obs, inner, params.inner)
        failed = jnp.stack(
            [~jnp.asarray(check(obs, inner, params.inner), bool) for _, check in self._assertions]
            or [jnp.bool_(False)]
        )
        bugs = len(self._assertions)
        telemetry = Telemetry.make(
            position=fields["position"],
            cell=fields["cell"],
            bugs_fired=(failed & ~state.seen)[:bugs],
            game_reward=reward,
            frame_time_ms=fields.get("frame_time_ms", 0.0),
            crashed=fields.get("crashed", False),
        )
        terminated = jnp.asarray(done, bool) & (time < params.max_steps_in_episode)
        state = AdaptedState(inner=inner, seen=state.seen | failed, time=time)
        return obs, state, jnp.asarray(reward, jnp.float32), terminated, {"telemetry": telemetry}

    def read(self, obs, inner, inner_params) -> dict:
        """The telemetry fields of a step: the user's function's, else the observation's cell."""
        if self._telemetry is None:
            space = self.inner.observation_space(inner_params)
            low, high = (
                jnp.broadcast_to(jnp.asarray(b, jnp.float32), space.shape).reshape(-1)
                for b in (space.low, space.high)
            )
            return {
                "position": jnp.zeros(2),
                "cell": observation_cell(obs, low, high, self._num_cells),
            }
        fields = dict(self._telemetry(obs, inner, inner_params))
        fields.setdefault("position", jnp.zeros(2))
        return fields

    def state_features(self, obs: jax.Array) -> jax.Array:
        return obs if self._features is None else self._features(obs)

    def state_feature_bounds(self, params) -> tuple[np.ndarray, np.ndarray]:
        if self._feature_bounds is not None:
            return tuple(np.asarray(b, np.float32) for b in self._feature_bounds)
        return super().state_feature_bounds(params)

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def check(self, params: AdaptedParams) -> None:
        """Refuses what cannot work before a campaign compiles: a telemetry field of the wrong
        shape (traced), then one concrete reset and step whose fields must be finite and whose
        cell must be in range (:class:`AdapterError` names the field)."""
        where = f"{self.name}: telemetry function"
        obs, state = jax.eval_shape(self.inner.reset_env, jax.random.key(0), params.inner)
        if self._telemetry is not None:
            out = jax.eval_shape(self._telemetry, obs, state, params.inner)
            check_telemetry_fields(out, TELEMETRY_FIELDS, where, AdapterError)
            if "cell" not in out:
                raise AdapterError(f"{where} must return cell, an int in [0, num_cells)")
            for key, value in out.items():
                if tuple(value.shape) != TELEMETRY_FIELDS[key]:
                    raise AdapterError(
                        f"{where} returned {key} of shape {tuple(value.shape)}, expected "
                        f"{TELEMETRY_FIELDS[key]}"
                    )

        def first_step(key):
            return self.step_env(key, self.reset_env(key, params)[1], 0, params)[4]["telemetry"]

        tel = jax.device_get(jax.jit(first_step)(jax.random.key(0)))
        for key in ("position", "frame_time_ms"):
            if not np.all(np.isfinite(getattr(tel, key))):
                raise AdapterError(f"{where} returned {key} = {getattr(tel, key)}: NaN or infinite")
        if not 0 <= int(tel.cell) < self._num_cells:
            raise AdapterError(
                f"{where} returned cell {int(tel.cell)}, outside [0, {self._num_cells}) (set "
                "num_cells)"
            )


def adapt(
    env,
    env_params=None,
    telemetry: Callable | None = None,
    *,
    name: str | None = None,
    num_cells: int | None = None,
    map_shape: tuple[int, int] | None = None,
    assertions: dict[str, Callable] | None = None,
    state_features: Callable | None = None,
    state_feature_bounds: tuple | None = None,
    max_steps_in_episode: int | None = None,
) -> tuple[AdaptedGame, AdaptedParams]:
    """``(game, params)``: the gymnax-API ``env`` with its ``env_params`` as a jgtest game
    (:class:`AdaptedGame`).

    Args:
      env: the gymnax-API game.
      env_params: its parameters (default: its ``default_params``).
      telemetry: ``telemetry(obs, state, params) -> dict``, jittable, with ``position`` (two
        numbers) and ``cell`` (an int in ``[0, num_cells)``), and optionally ``frame_time_ms`` and
        ``crashed``. Its shapes are checked here, and one reset and step run here to refuse NaN.
        Without it, the cell is :func:`observation_cell` of the observation over its space's
        bounds, and the game provides no position.
      name: the game's name in reports (default: the class name).
      num_cells: coverage cells the telemetry's ``cell`` ranges over.
      map_shape: their bird's-eye layout, ``(rows, cols)``.
      assertions: ``{name: fn(obs, state, params) -> bool}``, the game's invariants (e.g. health
        never above its maximum); a step where one is false fires a ``logical`` bug, once per
        episode.
      state_features: Wuji's game state (Def. 3), ``state_features(obs) -> vector``; by default
        the observation.
      state_feature_bounds: its ``(low, high)`` bounds.
      max_steps_in_episode: episode length (default: the game's parameter of that name, else
        ``max_timesteps``, else 10,000).

    Raises:
      AdapterError: a game without a discrete action set, a map that does not hold ``num_cells``,
        a telemetry field of the wrong shape, NaN, or a cell out of range.
    """
    name = name or type(env).__name__
    space = env.action_space(env.default_params)
    if not hasattr(space, "n"):
        raise AdapterError(
            f"{name}: jgtest's agents choose among discrete actions; this game's action space is "
            f"{type(space).__name__}"
        )
    options = (telemetry, num_cells, map_shape, assertions, state_features, state_feature_bounds)
    game = AdaptedGame(env, env_params, name, *options)
    params = game.default_params
    if max_steps_in_episode is not None:
        params = params.replace(max_steps_in_episode=int(max_steps_in_episode))
    game.check(params)
    return game, params


#: The prefixes :func:`by_name` takes (``jgtest.make("gymnax:CartPole-v1")``).
PREFIXES = ("gymnax", "craftax")
#: Craftax's map side (cells per row and column of a floor) and floors, per game.
CRAFTAX_MAPS = {
    "Craftax-Classic-Symbolic-v1": (64, 1),
    "Craftax-Classic-Pixels-v1": (64, 1),
    "Craftax-Symbolic-v1": (48, 9),
    "Craftax-Pixels-v1": (48, 9),
}
#: Craftax-Classic-Symbolic's observation ends with the inventory (12), the intrinsics (health,
#: food, drink, energy), the direction (4), the light level and sleeping: Wuji's state features
#: are the inventory and intrinsics, each in [0, 1) (divided by 10 by the game's renderer).
CRAFTAX_CLASSIC_FEATURES = slice(-22, -6)


def craftax_telemetry(side: int):
    """Craftax's telemetry: the player's ``(row, col)`` as position, the cell its floor's row-major
    index."""

    def telemetry(obs, state, params):
        level = getattr(state, "player_level", 0)
        row, col = state.player_position[0], state.player_position[1]
        return {
            "position": state.player_position.astype(jnp.float32),
            "cell": (level * side + row) * side + col,
        }

    return telemetry


def _within(values, low, high) -> jax.Array:
    values = jnp.stack([jnp.asarray(v).reshape(-1) for v in values])
    return jnp.all((values >= low) & (values <= high))


#: Craftax's invariants, the logical assertions its adapted games check: the intrinsics stay within
#: the game's cap of 9; in Craftax-Classic, every inventory count too.
CRAFTAX_ASSERTIONS = {
    "health, food, drink and energy stay in [0, 9]": lambda obs, s, params: _within(
        [s.player_health, s.player_food, s.player_drink, s.player_energy], 0, 9
    ),
}
CRAFTAX_CLASSIC_ASSERTIONS = {
    **CRAFTAX_ASSERTIONS,
    "every inventory count stays in [0, 9]": lambda obs, s, params: _within(
        jax.tree.leaves(s.inventory), 0, 9
    ),
}


@functools.lru_cache(maxsize=16)
def _by_name(name: str, options: tuple) -> tuple[AdaptedGame, AdaptedParams]:
    return _adapt_by_name(name, **dict(options))


def by_name(name: str, **kwargs) -> tuple[AdaptedGame, AdaptedParams]:
    """``gymnax:ID`` (any of ``gymnax.registered_envs``) or ``craftax:ID`` adapted; ``kwargs``:
    :func:`adapt`'s ``max_steps_in_episode`` and ``num_cells``. Built and checked once per name and
    options (the check compiles a step), then shared.

    Raises:
      ValueError: an unknown id, or an option the adapter does not have.
    """
    return _by_name(name, tuple(sorted(kwargs.items())))


def _adapt_by_name(name: str, **kwargs) -> tuple[AdaptedGame, AdaptedParams]:
    """:func:`by_name`, uncached.

    Raises:
      ValueError: an unknown id, or an option the adapter does not have.
    """
    prefix, _, game_id = name.partition(":")
    unknown = sorted(set(kwargs) - {"max_steps_in_episode", "num_cells"})
    if unknown:
        raise ValueError(
            f"{name}: unknown option(s) {', '.join(unknown)}; options: max_steps_in_episode, "
            "num_cells"
        )
    if prefix == "gymnax":
        import gymnax

        if game_id not in gymnax.registered_envs:
            raise ValueError(
                f"unknown gymnax game {game_id!r}; gymnax has: {', '.join(gymnax.registered_envs)}"
            )
        env, env_params = gymnax.make(game_id)
        return adapt(env, env_params, name=name, **kwargs)
    if prefix == "craftax":
        if game_id not in CRAFTAX_MAPS:
            raise ValueError(
                f"unknown Craftax game {game_id!r}; Craftax has: {', '.join(CRAFTAX_MAPS)}"
            )
        extras.require("craftax", "craftax", name)
        from craftax.craftax_env import make_craftax_env_from_name

        side, floors = CRAFTAX_MAPS[game_id]
        features = {}
        if game_id == "Craftax-Classic-Symbolic-v1":
            width = CRAFTAX_CLASSIC_FEATURES.stop - CRAFTAX_CLASSIC_FEATURES.start
            features = {
                "state_features": lambda obs: obs[..., CRAFTAX_CLASSIC_FEATURES],
                "state_feature_bounds": (np.zeros(width), np.ones(width)),
            }
        env = make_craftax_env_from_name(game_id, auto_reset=False)
        assertions = CRAFTAX_CLASSIC_ASSERTIONS if "Classic" in game_id else CRAFTAX_ASSERTIONS
        return adapt(
            env,
            env.default_params,
            craftax_telemetry(side),
            name=name,
            map_shape=(floors * side, side),
            assertions=assertions,
            **features,
            **kwargs,
        )
    raise ValueError(f"unknown adapted game {name!r}; use gymnax:ID or craftax:ID")
