"""The base class of every jgtest game: a gymnax 1.x environment plus the hooks testing needs.

:class:`TestingEnv`'s ``step`` returns ``obs, state, reward, terminated, truncated, info`` with
``info["telemetry"]`` a :class:`jgtest.types.Telemetry`, and auto-resets like gymnax's.

* chosen: ``step_env`` gets the step's key itself and the reset key is ``fold_in(key,
  AUTO_RESET_COUNTER)``, where gymnax splits the key in two, because that is one threefry block
  instead of two on every vmapped step.
* chosen: concrete actions are checked against the action space before anything runs, because
  traced ones cannot be; each game documents what it does with an out-of-range traced action.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import numpy as np
from gymnax.environments import environment, spaces

from jgtest.envs import rng
from jgtest.errors import BadFile
from jgtest.signals import DEVICE_DEFAULT

#: Kinds of bugs: the oracles' (crash, stuck, logical, balance, low FPS) and ``"texture"``, found by
#: testing an object in the park (PPGTA; :mod:`jgtest.methods.park.ooi_testing`), not by an oracle.
BUG_KINDS = ("crash", "stuck", "logical", "balance", "low_fps", "texture")


def check_recorded_bug(game: str, bug_kinds: tuple[str, ...], bug_id: int, kind: str) -> None:
    """Refuses a bug record's ``bug_id`` and ``kind`` that ``game``'s bugs (``bug_kinds``) do not
    have: a record of another game, or an edited one. A record of no injected bug (``bug_id`` −1)
    passes.

    Raises:
      BadFile: naming the bug and both kinds.
    """
    if bug_id >= len(bug_kinds):
        raise BadFile(
            f"the record names bug {bug_id} but {game} has {len(bug_kinds)} bugs "
            "(a record of another game?)"
        )
    if bug_id >= 0 and bug_kinds[bug_id] != kind:
        raise BadFile(
            f"the record says bug {bug_id} is a {kind} bug, but {game}'s bug {bug_id} is a "
            f"{bug_kinds[bug_id]} bug (an edited record?)"
        )


def check_shape(game: str, what: str, value, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a numpy array, or ``ValueError`` naming ``game``'s ``what`` unless it has
    ``shape``."""
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(f"{game}: {what} must have shape {shape}, got {array.shape}")
    return array


#: Folded into a step's key to make its auto-reset key. A draw of ``n`` values
#: from a key uses the threefry blocks at counters ``0 .. n-1``, and
#: ``fold_in(key, i)`` is the block at counter ``i``; this last counter is
#: reached only by a single draw of 2**32 values from the step key, so the
#: reset key never equals anything ``step_env`` draws.
AUTO_RESET_COUNTER = 0xFFFFFFFF


def step_with_reset(env, params, state, action, key_step, key_reset):
    """One auto-resetting step: ``step_env``, truncation, then ``reset_env(key_reset)`` if done.

    Returns ``(obs, state, reward, terminated, truncated, info)`` like gymnax,
    with ``info["final_observation"]`` the observation before any reset.
    """
    obs_st, state_st, reward, terminated, info = env.step_env(key_step, state, action, params)
    truncated = env.is_truncated(state_st, params)
    done = terminated | truncated
    obs_re, state_re = env.reset_env(key_reset, params)
    state = jax.tree.map(lambda r, s: jax.lax.select(done, r, s), state_re, state_st)
    obs = jax.tree.map(lambda r, s: jax.lax.select(done, r, s), obs_re, obs_st)
    info = {**info, "terminated": terminated, "truncated": truncated, "final_observation": obs_st}
    return obs, state, reward, terminated, truncated, info


class TestingEnv(environment.Environment):
    """Common surface of the jgtest games: what a test campaign needs to know about a game.

    * ``bug_kinds``: one oracle kind per injected bug (``"crash"``, ``"stuck"``, ``"logical"``,
      ``"balance"`` or ``"low_fps"``), so ``len(bug_kinds)`` is the length of
      ``telemetry.bugs_fired``;
    * ``num_cells`` / ``map_shape``: the coverage cells and their bird's-eye layout;
    * ``validate_params``: a host-side check that refuses bad ``EnvParams`` (bugs outside the map,
      ...) with a clear message;
    * ``randomize``: a jittable draw of new injected-bug placements (Wuji randomises bugs per run);
      games with fixed placements return the params unchanged;
    * ``state_features`` / ``state_feature_bounds``: Wuji's game state (Def. 3), the feature vector
      whose bucket tuples its exploration score and state coverage count; by default the
      observation itself.

    * ``draw`` (optional): a game whose observation is what to draw rather than pixels (PacMaze's
      colour index a cell) draws it as ``uint8[h, w, 3]`` RGB, so that only a learner that reads
      pixels (:class:`jgtest.envs.wrappers.DrawFrames`) pays for them.

    A subclass sets ``env_id`` and ``num_actions`` (class attributes, or properties where they
    depend on the game's options), builds ``self._default_params`` in its constructor, and
    writes ``reset_env``, ``step_env``, ``get_obs`` and the hooks above.
    """

    #: Registered id, e.g. ``"BlockMaze-v0"``; set by subclasses.
    env_id: str = ""
    #: Whether the game's bugs are found by executing tests on it (ParkWorld's texture bugs:
    #: :mod:`jgtest.methods.park.ooi_testing`) rather than fired by oracles; such a game reports no
    #: ``bugs_fired`` (``bug_kinds`` is empty).
    bugs_found_by_tests: bool = False
    #: The signals the game provides to testing methods (:mod:`jgtest.signals`): by default coverage
    #: cells, position, state features, the game's reward and the oracles' inputs.
    signals: frozenset[str] = DEVICE_DEFAULT

    @property
    def name(self) -> str:
        return self.env_id or type(self).__name__

    @property
    def default_params(self):
        """The game's parameters as its constructor built them (``self._default_params``)."""
        return self._default_params

    # ----- testing metadata -------------------------------------------------
    @property
    def bug_kinds(self) -> tuple[str, ...]:
        """Oracle kind of each injected bug (one entry per ``bugs_fired`` slot)."""
        raise NotImplementedError

    def action_space(self, params=None) -> spaces.Discrete:
        """``Discrete(num_actions)``: every jgtest game has a discrete action set."""
        return spaces.Discrete(self.num_actions)

    @property
    def num_bugs(self) -> int:
        return len(self.bug_kinds)

    @property
    def map_shape(self) -> tuple[int, int]:
        """Bird's-eye layout of the coverage cells (rows, cols)."""
        raise NotImplementedError

    @property
    def num_cells(self) -> int:
        rows, cols = self.map_shape
        return rows * cols

    def validate_params(self, params) -> None:
        """Raises ``ValueError`` naming the problem if ``params`` are unusable.

        Host-side (reads concrete values); the base check covers episode length.
        """
        max_steps = int(np.asarray(params.max_steps_in_episode))
        if max_steps <= 0:
            raise ValueError(f"{self.name}: max_steps_in_episode must be positive, got {max_steps}")

    def check_map_shape(self, what: str, value) -> np.ndarray:
        """``value`` (a params array, ``what``) as a numpy array, or ``ValueError`` unless it has
        :attr:`map_shape`."""
        array = np.asarray(value)
        if array.shape != self.map_shape:
            raise ValueError(
                f"{self.name}: {what} shape {array.shape} differs from the map's {self.map_shape}"
            )
        return array

    def randomize(self, key: jax.Array, params):
        """New injected-bug placements drawn with ``key`` (jittable).

        Games whose bugs sit at fixed places from their paper (RELINE's
        CartPole, Pac-Man gates) return ``params`` unchanged.
        """
        del key
        return params

    def state_features(self, obs: jax.Array) -> jax.Array:
        """Wuji's game state (Def. 3, "a fixed-length vector" of the game's aspects) of flattened
        observations ``[..., obs_size] -> [..., n]``, jittable.

        The default is the observation itself; a game whose observation carries features that
        tick every step (timers, cooldowns) narrows it, or nearly every step is a new state.
        """
        return obs

    def state_feature_bounds(self, params) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``, ``float32[n]`` each: the range of each :meth:`state_features`
        feature, cut into Wuji's equal buckets (§V-C). Default: the observation space's bounds."""
        space = self.observation_space(params)
        low, high = (
            np.broadcast_to(np.asarray(b, np.float32), space.shape).reshape(-1)
            for b in (space.low, space.high)
        )
        return low, high

    # ----- checked entry points --------------------------------------------
    def check_action(self, action: Any, params=None) -> None:
        """Raises ``ValueError`` if a concrete ``action`` is outside the action space."""
        if isinstance(action, jax.core.Tracer):
            return
        space = self.action_space(params if params is not None else self.default_params)
        value = np.asarray(action)
        if isinstance(space, spaces.Discrete):
            if not np.issubdtype(value.dtype, np.integer):
                raise ValueError(
                    f"{self.name}: actions must be integers in [0, {space.n}), "
                    f"got dtype {value.dtype}"
                )
            bad = (value < 0) | (value >= space.n)
            if np.any(bad):
                raise ValueError(
                    f"{self.name}: action {value[bad].ravel()[0]} is out of range; "
                    f"expected an integer in [0, {space.n})"
                )
        elif isinstance(space, spaces.Box):
            low = np.broadcast_to(np.asarray(space.low), space.shape)
            high = np.broadcast_to(np.asarray(space.high), space.shape)
            if np.any(value < low) or np.any(value > high) or not np.all(np.isfinite(value)):
                raise ValueError(
                    f"{self.name}: action {value.tolist()} is outside "
                    f"[{low.tolist()}, {high.tolist()}]"
                )

    def step(self, key, state, action, params=None):
        """Auto-resetting step (see the module docstring) after checking a concrete ``action``."""
        self.check_action(action, params)
        return self._auto_reset_step(
            key, state, action, self.default_params if params is None else params
        )

    @partial(jax.jit, static_argnames=("self",))
    def _auto_reset_step(self, key, state, action, params):
        return step_with_reset(
            self, params, state, action, key, rng.fold_in(key, AUTO_RESET_COUNTER)
        )
