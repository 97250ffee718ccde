"""Wrappers for jgtest games: episode statistics, frames drawn on read, frame stacking,
grayscale/resize, OD mask.

Each keeps the gymnax 1.x ``step`` contract, is jit- and vmap-safe and passes attribute access
through to the wrapped game (``bug_kinds``, ``num_cells``, ...).

* chosen: frames go through :mod:`jgtest.frames`, because the host loop's
  :class:`ObservationPipeline` does too: an agent sees the same observation on device and on a
  real game.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import spaces
from gymnax.wrappers.purerl import GymnaxWrapper

from jgtest.coverage import CellSet, CellSetState, cell_set
from jgtest.frames import gray_resized, od_mask, stack_fill, stack_push


# ----- episode statistics ---------------------------------------------------------
@struct.dataclass
class EpisodeStatisticsState:
    env_state: Any
    episode_return: jax.Array
    episode_length: jax.Array
    bugs_found: jax.Array  # bool[num_bugs], this episode so far
    cells: CellSetState | None  # distinct cells of this episode so far (None: not tracked)
    returned_episode_return: jax.Array
    returned_episode_length: jax.Array
    returned_episode_bugs: jax.Array
    returned_episode_cells: jax.Array


class EpisodeStatistics(GymnaxWrapper):
    """Tracks return, length, bugs found so far and distinct cells visited.

    ``info`` gains, for the running episode, ``episode_return``,
    ``episode_length``, ``episode_bugs`` (count of distinct injected bugs fired)
    and ``episode_cells`` (distinct coverage cells), and for the last finished
    episode the same with a ``returned_`` prefix, plus ``returned_episode``
    (true on the step an episode ended). Values for the step that ends an
    episode include that step.

    Distinct cells are kept in one cell set per env (:mod:`jgtest.coverage`),
    counted as they are added and cleared when an episode ends: by default
    :func:`jgtest.coverage.cell_set` for the game's ``num_cells`` and at most
    ``max_steps_in_episode`` (of the default params) cells an episode, so a
    game with a huge cell space gets a small hash set, not a map per env. A
    hash set that fills up (an episode longer than it was sized for) sets
    ``info["episode_cells_overflowed"]``; its count is then a lower bound.

    Args:
      env: the game.
      cells: the cell set to use, ``None`` for the default, or ``False`` to not
        track cells (no ``*_cells`` entries in ``info``; saves the set's memory
        and time).
    """

    def __init__(self, env, cells: CellSet | None | bool = None):
        super().__init__(env)
        if cells is None or cells is True:
            cells = cell_set(
                env.num_cells, max_distinct=int(env.default_params.max_steps_in_episode)
            )
        self.cells: CellSet | None = cells or None

    @partial(jax.jit, static_argnames=("self",))
    def reset(self, key, params=None):
        obs, env_state = self._env.reset(key, params)
        zero_f, zero_i = jnp.float32(0.0), jnp.int32(0)
        state = EpisodeStatisticsState(
            env_state=env_state,
            episode_return=zero_f,
            episode_length=zero_i,
            bugs_found=jnp.zeros((self._env.num_bugs,), bool),
            cells=None if self.cells is None else self.cells.init(),
            returned_episode_return=zero_f,
            returned_episode_length=zero_i,
            returned_episode_bugs=zero_i,
            returned_episode_cells=zero_i,
        )
        return obs, state

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key, state: EpisodeStatisticsState, action, params=None):
        obs, env_state, reward, terminated, truncated, info = self._env.step(
            key, state.env_state, action, params
        )
        tel = info["telemetry"]
        done = terminated | truncated
        ret = state.episode_return + reward
        length = state.episode_length + 1
        bugs = state.bugs_found | tel.bugs_fired
        n_bugs = jnp.sum(bugs).astype(jnp.int32)
        stats = {"episode_return": ret, "episode_length": length, "episode_bugs": n_bugs}
        returned = {
            "returned_episode_return": jnp.where(done, ret, state.returned_episode_return),
            "returned_episode_length": jnp.where(done, length, state.returned_episode_length),
            "returned_episode_bugs": jnp.where(done, n_bugs, state.returned_episode_bugs),
        }
        cells = state.cells
        if self.cells is not None:
            cells, _ = self.cells.add(cells, tel.cell)
            stats["episode_cells"] = cells.size
            stats["episode_cells_overflowed"] = cells.overflowed
            returned["returned_episode_cells"] = jnp.where(
                done, cells.size, state.returned_episode_cells
            )
            cells = self.cells.clear(cells, done)
        new_state = EpisodeStatisticsState(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, ret),
            episode_length=jnp.where(done, 0, length),
            bugs_found=jnp.where(done, False, bugs),
            cells=cells,
            **{"returned_episode_cells": state.returned_episode_cells, **returned},
        )
        info = {**info, **stats, "returned_episode": done, **returned}
        return obs, new_state, reward, terminated, truncated, info


# ----- observation wrappers -------------------------------------------------------
def _map_final_observation(info: dict, transform) -> dict:
    """``info`` with ``final_observation`` (the observation before an auto-reset,
    which agents bootstrap from on truncation) passed through the wrapper's
    ``transform``, so it has the shape and content of the wrapped observations."""
    if "final_observation" not in info:
        return info
    return {**info, "final_observation": transform(info["final_observation"])}


@struct.dataclass
class FrameStackState:
    env_state: Any
    frames: jax.Array  # [*obs_shape[:-1], num_frames * C]


class FrameStack(GymnaxWrapper):
    """Stacks the last ``num_frames`` observations along the last (channel) axis.

    Observations of shape ``[..., C]`` become ``[..., num_frames * C]``, oldest
    first (the DQN input of RELINE §3.1.2: "a set of contiguous screenshots ...
    in our case 4"). On reset, and after an episode ends (auto-reset), the
    stack is filled with the first frame.
    """

    def __init__(self, env, num_frames: int = 4):
        super().__init__(env)
        if num_frames < 1:
            raise ValueError(f"num_frames must be at least 1, got {num_frames}")
        self.num_frames = int(num_frames)

    def observation_space(self, params) -> spaces.Box:
        inner = self._env.observation_space(params)
        shape = (*inner.shape[:-1], inner.shape[-1] * self.num_frames)
        tile = lambda b: jnp.tile(jnp.broadcast_to(jnp.asarray(b), inner.shape), self.num_frames)
        return spaces.Box(tile(inner.low), tile(inner.high), shape, inner.dtype)

    @partial(jax.jit, static_argnames=("self",))
    def reset(self, key, params=None):
        obs, env_state = self._env.reset(key, params)
        frames = stack_fill(obs, self.num_frames)
        return frames, FrameStackState(env_state=env_state, frames=frames)

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key, state: FrameStackState, action, params=None):
        obs, env_state, reward, terminated, truncated, info = self._env.step(
            key, state.env_state, action, params
        )
        frames = jnp.where(
            terminated | truncated, stack_fill(obs, self.num_frames), stack_push(state.frames, obs)
        )
        info = _map_final_observation(info, lambda final: stack_push(state.frames, final))
        return (
            frames,
            FrameStackState(env_state=env_state, frames=frames),
            reward,
            terminated,
            truncated,
            info,
        )


class ObservationMap(GymnaxWrapper):
    """Base of the wrappers that transform each observation by ``self._convert``, the
    ``final_observation`` too (:func:`_map_final_observation`)."""

    def _convert(self, obs):
        raise NotImplementedError

    @partial(jax.jit, static_argnames=("self",))
    def reset(self, key, params=None):
        obs, env_state = self._env.reset(key, params)
        return self._convert(obs), env_state

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key, state, action, params=None):
        obs, env_state, reward, terminated, truncated, info = self._env.step(
            key, state, action, params
        )
        info = _map_final_observation(info, self._convert)
        return self._convert(obs), env_state, reward, terminated, truncated, info


class DrawFrames(ObservationMap):
    """The game's RGB frames as the observation, for a game whose step returns what to draw
    (``env.draw``, e.g. :class:`jgtest.envs.pacmaze.PacMaze`'s dots and actors).

    Such a game draws no pixels in its step, so a campaign that reads none pays none; a learner
    that reads pixels wraps the game in this, and draws them once a step.
    """

    def __init__(self, env):
        super().__init__(env)
        if not callable(getattr(env, "draw", None)):
            raise ValueError(
                f"DrawFrames needs a game that draws its observations (env.draw); "
                f"{getattr(env, 'name', type(env).__name__)} returns its frames as they are"
            )

    def observation_space(self, params) -> spaces.Box:
        inner = self._env.observation_space(params)
        frame = jax.eval_shape(self._env.draw, jax.ShapeDtypeStruct(inner.shape, inner.dtype))
        return spaces.Box(0, 255, frame.shape, frame.dtype)

    def _convert(self, obs):
        return self._env.draw(obs)


class GrayscaleResize(ObservationMap):
    """RGB ``uint8[H, W, 3]`` frames to grayscale ``uint8[h, w, 1]`` at ``size``.

    RELINE §4.1.1 feeds SuperTuxKart screenshots "resized to 200x150 pixels and
    converted in grayscale". ``size`` is ``(height, width)``; ``None`` keeps the size.
    """

    def __init__(self, env, size: tuple[int, int] | None = None):
        super().__init__(env)
        inner = env.observation_space(env.default_params)
        if len(inner.shape) != 3 or inner.shape[-1] not in (1, 3):
            raise ValueError(
                f"GrayscaleResize needs [H, W, 1|3] frames, got observation shape {inner.shape}"
                + (" (wrap the game in DrawFrames first)" if hasattr(env, "draw") else "")
            )
        self.size = tuple(inner.shape[:2]) if size is None else (int(size[0]), int(size[1]))

    def observation_space(self, params) -> spaces.Box:
        inner = self._env.observation_space(params)
        return spaces.Box(0, 255, (*self.size, 1), inner.dtype)

    def _convert(self, frame):
        return gray_resized(frame, self.size)


class ODMask(ObservationMap):
    """Applies :func:`od_mask` with a fixed ``box`` to every RGB frame.

    For a box that follows the object under test, call :func:`od_mask` with the
    box of the step (PPGTA computes it from the detector's output).
    """

    def __init__(self, env, box: tuple[int, int, int, int]):
        super().__init__(env)
        r0, c0, r1, c1 = (int(v) for v in box)
        h, w = env.observation_space(env.default_params).shape[:2]
        if not (0 <= r0 <= r1 <= h and 0 <= c0 <= c1 <= w):
            raise ValueError(f"OD box {box} is not inside the {h}x{w} frame")
        self.box = (r0, c0, r1, c1)

    def _convert(self, frame):
        return od_mask(frame, jnp.asarray(self.box))


class ObservationPipeline(struct.PyTreeNode):
    """The on-device observation pipeline for frames that come from the host.

    A bridged game's ``uint8[N, H, W, C]`` frames become what
    ``FrameStack(GrayscaleResize(game, size), num_frames)`` gives on device:
    grayscale at ``size``, the last ``num_frames`` stacked (oldest first), the
    stack refilled with the first frame of a new episode. Pure and jittable::

        pipeline = ObservationPipeline(size=(84, 84), num_frames=4)
        stack = pipeline.reset(frames)                   # [N, 84, 84, 4]
        stack = pipeline.push(stack, frames, fresh)      # fresh: bool[N], a new episode began

    Attributes:
      size: ``(height, width)`` the frames are resized to.
      num_frames: frames stacked (RELINE §3.1.2: 4).
      crop_rows: ``(first, end)`` rows kept after the resize, or ``None`` for all (RELINE's
        replication package resizes Ms. Pac-Man's screens to 110 × 84 and keeps rows 18-102,
        ``lib/wrappers.py``'s ``ProcessFrame84``).
    """

    size: tuple[int, int] = struct.field(pytree_node=False, default=(84, 84))
    num_frames: int = struct.field(pytree_node=False, default=4)
    crop_rows: tuple[int, int] | None = struct.field(pytree_node=False, default=None)

    @property
    def frame_shape(self) -> tuple[int, int]:
        """``(height, width)`` of the agent's frames: :attr:`size`, less the rows cropped."""
        if self.crop_rows is None:
            return self.size
        first, end = self.crop_rows
        if not 0 <= first < end <= self.size[0]:
            raise ValueError(f"crop_rows {self.crop_rows} are not rows of a frame {self.size} high")
        return end - first, self.size[1]

    def frame(self, frames: jax.Array) -> jax.Array:
        frame = gray_resized(jnp.asarray(frames), self.size)
        if self.crop_rows is None:
            return frame
        return frame[..., self.crop_rows[0] : self.crop_rows[1], :, :]

    def reset(self, frames: jax.Array) -> jax.Array:
        return stack_fill(self.frame(frames), self.num_frames)

    def push(self, stack: jax.Array, frames: jax.Array, fresh: jax.Array) -> jax.Array:
        frame = self.frame(frames)
        fresh = jnp.asarray(fresh).reshape(-1, *([1] * (stack.ndim - 1)))
        return jnp.where(fresh, stack_fill(frame, self.num_frames), stack_push(stack, frame))

    def ring_reset(self, frames: jax.Array) -> FrameRing:
        """The frames of a new episode in every game, as a :class:`FrameRing`."""
        frame = self.frame(frames)[..., 0]
        buffer = jnp.broadcast_to(frame[None], (self.num_frames, *frame.shape))
        return FrameRing(
            buffer=buffer, newest=jnp.int32(0), age=jnp.ones(frame.shape[0], jnp.int32)
        )

    def ring_push(self, ring: FrameRing, frames: jax.Array, fresh: jax.Array) -> FrameRing:
        """``ring`` with ``frames`` written over its oldest slot: one frame a game is written,
        nothing moves.

        ``fresh`` (``bool[N]``) games start a new episode with these frames: their ``age``
        restarts at 1, and :meth:`ring_view` repeats the new frame in place of the old
        episode's, so no slot is rewritten. Donate ``ring`` to the jitted caller and the
        write happens in place.
        """
        newest = (ring.newest + 1) % self.num_frames
        buffer = jax.lax.dynamic_update_index_in_dim(
            ring.buffer, self.frame(frames)[..., 0].astype(ring.buffer.dtype), newest, 0
        )
        age = jnp.where(jnp.asarray(fresh), 1, jnp.minimum(ring.age + 1, self.num_frames))
        return FrameRing(buffer=buffer, newest=newest, age=age)

    def ring_view(self, ring: FrameRing) -> jax.Array:
        """The ``[N, H, W, num_frames]`` stacks :meth:`push` would hold (oldest first; a game's
        frames from before its episode began replaced by the episode's first)."""
        back = jnp.minimum(
            self.num_frames - 1 - jnp.arange(self.num_frames)[None, :], ring.age[:, None] - 1
        )
        # [N, K]: the slot of each game's k-th oldest frame
        slots = (ring.newest - back) % self.num_frames
        games = jnp.arange(ring.age.shape[0])[:, None]
        return jnp.moveaxis(ring.buffer[slots, games], 1, -1)


class FrameRing(struct.PyTreeNode):
    """Each game's last ``K`` frames in a ring (:meth:`ObservationPipeline.ring_push`).

    Pushing a frame writes one slot (``N·H·W`` bytes) where a stack that is shifted
    writes all ``K`` and, for a new episode, fills ``K`` more; the ordered stack is
    built only when read (:meth:`ObservationPipeline.ring_view`: a policy that does
    not look at the frames, such as the random agent, never pays for it).

    Attributes:
      buffer: ``[K, N, H, W]`` frames; ``buffer[newest]`` is the last written.
      newest: the slot written last (``int32`` scalar, shared by the games).
      age: ``int32[N]``: frames of each game's running episode in the ring, at most ``K``.
    """

    buffer: jax.Array
    newest: jax.Array
    age: jax.Array
