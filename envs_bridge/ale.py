"""The real Atari Ms. Pac-Man (ALE, through envpool) with RELINE's four gate bugs.

RELINE (Tufano et al., 2022) puts four low-FPS bugs at the first maze's tunnel mouths, "the four
gates indicated by the white arrows in Fig. 2-(b)", each firing the first time an episode visits
it (§3.1.3); five actions and +1 a dot (§3.1.2). :class:`MsPacmanEnv` reads them from the RAM;
:class:`XlaMsPacman` is its step in JAX, for a collection loop inside one ``jit``.

* chosen: 4 frames a step (Mnih et al., 2015, cited in §3.1.2), because Gym's ``-v0`` drew 2 to 4.
* chosen: no sticky actions and no random no-ops at reset, because an action trace then replays
  exactly, whatever the seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from envs_bridge.protocol import DeviceTelemetry, HostEnv, check_frames
from jgtest.types import Telemetry

#: RELINE's actions (§3.1.2) in its order, and ALE's minimal-set ids for them.
ACTION_NAMES = ("up", "right", "down", "left", "noop")
ALE_ACTIONS = (1, 2, 4, 3, 0)  # ALE: NOOP 0, UP 1, RIGHT 2, LEFT 3, DOWN 4

#: RAM bytes (AtariARI): player x, player y, dots eaten.
RAM_X, RAM_Y, RAM_DOTS = 10, 16, 119
#: The RAM bytes :class:`RamTelemetry` reads, in its column order (:meth:`RamTelemetry.take`).
RAM_READ = np.array([RAM_X, RAM_Y, RAM_DOTS])
#: Tunnel rows (RAM y) of the first maze, the tolerance around them, and the x beyond the maze
#: columns.
TUNNEL_ROWS = (50, 98)
ROW_TOLERANCE = 2
LEFT_MOUTH_X, RIGHT_MOUTH_X = 17, 159
GATE_NAMES = ("upper-left", "upper-right", "lower-left", "lower-right")
#: Coverage cells: 8×8-pixel squares of the 256×256 RAM coordinate space.
CELL_PIXELS, CELLS_PER_ROW = 8, 32


def gates_at(x, y):
    """``bool[..., 4]``: which gate (:data:`GATE_NAMES` order) the position is in.

    Works on numpy and jax arrays alike (operators only), so the numpy path and
    :class:`RamTelemetry` share it.
    """
    left, right = x <= LEFT_MOUTH_X, x >= RIGHT_MOUTH_X
    upper = abs(y - TUNNEL_ROWS[0]) <= ROW_TOLERANCE
    lower = abs(y - TUNNEL_ROWS[1]) <= ROW_TOLERANCE
    return [upper & left, upper & right, lower & left, lower & right]


def position_cell(x, y):
    """Coverage cell of a RAM position (8×8-pixel squares), numpy or jax."""
    return (y // CELL_PIXELS) * CELLS_PER_ROW + x // CELL_PIXELS


#: :func:`gates_at` and :func:`position_cell` tabulated over the 256 × 256 RAM positions, indexed
#: ``[x, y]``: the host path reads both with one lookup each (its per-step numpy work is a fixed
#: cost of every step, see benchmarks/bridge_throughput.py).
_X, _Y = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
GATES_TABLE = np.stack(gates_at(_X, _Y), axis=-1)
CELL_TABLE = position_cell(_X, _Y).astype(np.int32)


@dataclasses.dataclass(frozen=True)
class RamTelemetry(DeviceTelemetry):
    """Ms. Pac-Man's telemetry from RAM, in JAX: the host loop's jitted step and the XLA loop use
    it.

    The rules of :meth:`MsPacmanEnv.step`'s numpy path: the gates by :func:`gates_at`, each
    fired on its first visit of an episode, the dots eaten this step (RAM byte 119) as the
    game reward, and nothing on an ``autoreset`` step. :meth:`take` keeps the three RAM
    bytes read (:data:`RAM_READ`: 24 bytes at 8 games where the RAM is 1 KB), and
    :meth:`init` and :meth:`step` read its ``ram[:, 0:3]`` = x, y, dots. The carry:
    ``(gates found bool[N, 4], dots eaten int32[N])``.
    """

    keys: tuple[str, ...] = ("ram",)

    def take(self, info):
        return {"ram": info["ram"][:, RAM_READ]}

    @staticmethod
    def _read(raw):
        """``(x, y, dots)``, ``int32[N]`` each, from :meth:`take`'s columns."""
        import jax.numpy as jnp

        ram = jnp.asarray(raw["ram"]).astype(jnp.int32)
        return ram[:, 0], ram[:, 1], ram[:, 2]

    def init(self, raw):
        import jax.numpy as jnp

        dots = self._read(raw)[2]
        return jnp.zeros((dots.shape[0], len(GATE_NAMES)), bool), dots

    def step(self, carry, raw, autoreset):
        import jax.numpy as jnp

        found, dots_before = carry
        x, y, dots = self._read(raw)
        fresh = jnp.asarray(autoreset)[:, None]
        found = found & ~fresh
        fired = jnp.stack(gates_at(x, y), axis=-1) & ~fresh & ~found
        reward = jnp.where(autoreset, 0, jnp.maximum(dots - dots_before, 0))
        telemetry = Telemetry.make(
            position=jnp.stack([x, y], axis=-1),
            cell=position_cell(x, y),
            bugs_fired=fired,
            game_reward=reward,
            frame_time_ms=jnp.zeros(x.shape),
            crashed=jnp.zeros(x.shape, bool),
        )
        return (found | fired, dots), telemetry


RAM_TELEMETRY = RamTelemetry()


class MsPacmanEnv(HostEnv):
    """``num_envs`` games of the real Ms. Pac-Man on the host contract.

    * **Position**: Ms. Pac-Man's ``(x, y)`` from the console RAM that envpool returns in
      ``info["ram"]``: byte 10 is x, byte 16 is y (the AtariARI annotation, Anand et al., 2019).
      In the first maze x runs over the maze columns 18…158; inside a tunnel it goes past them
      (12…17 on the left, 159…171 on the right), on two rows only: y = 50 (upper tunnel) and
      y = 98 (lower tunnel). A recorded trace that drives the player into each gate is a test
      fixture (``tests/bridges/data/mspacman_gates.json``).
    * **Gates** (:func:`gates_at`): bug ``k`` fires when the player is inside a tunnel mouth:
      ``|y − row| ≤ 2`` and ``x ≤ 17`` (left) or ``x ≥ 159`` (right), in the order upper-left,
      upper-right, lower-left, lower-right.
    * **Game reward**: the dots eaten this step, from RAM byte 119 (the AtariARI
      ``dots_eaten_count``; energizers count as dots), not ALE's score, which also pays for ghosts
      and fruit; ``reward="score"`` gives ALE's score, the reward RELINE's replication package
      trained on.
    * **Actions**: RELINE's five in its order, mapped to ALE's minimal action set
      (:data:`ALE_ACTIONS`).
    * **Frames**: grayscaled and resized by envpool's C++ (area interpolation; the host loop only
      stacks them). Envpool seeds game ``i`` with ``seed + i``; with sticky actions a trace
      replays only in a game seeded as the one that recorded it.

    Args:
      num_envs: games stepped together (envpool's batch; one thread pool).
      seed: envpool's seed (game ``i`` gets ``seed + i``); :meth:`reset` with
        another seed rebuilds the pool.
      frame_size: ``(height, width)`` of the grayscale frames.
      sticky_action_prob: ALE's repeat-action probability.
      max_steps_in_episode: the cap (steps of 4 frames).
      num_threads: envpool's threads (0: one per game, up to the cores).
      reward: ``"dots"`` (the paper's +1 a dot, §3.1.2), ``"score"`` (ALE's score: 10 a dot,
        50 an energizer, more for ghosts and fruit) or ``"sign"`` (the score's sign, +1 a step
        that scores: the replication package's, whose ``lib/wrappers.py`` clips the score with
        ``ClipRewardEnv``). With ``"score"`` or ``"sign"`` the telemetry is computed on the host
        (``device_telemetry`` is ``None``: :class:`RamTelemetry` counts dots).
      intro_steps: steps at the start of each episode the host loop plays with the noop action and
        does not count as the agent's: RELINE's package waits out the game's intro with 65 no-ops
        after each reset (``msPacman_RELINE.py``, ``Agent._reset``), in which Ms. Pac-Man does not
        move whatever is pressed (she first moves on step 66).
      screens: the frames are ALE's native RGB screens (``210 × 160 × 3``, ``frame_size``
        ignored; the host loop's pipeline grays and resizes them), and ``info["ram_gates"]``
        holds the gates the RAM position is in at each step (``bool[N, 4]``).
      ssim_gates: with ``screens``, a second gate detector from pixels, ``screens ->
        bool[N, 4]``, whose flags each step adds as ``info["ssim_gates"]``: the replication
        package's frame-similarity check is ``envs_bridge.ale_ssim.SsimGates()`` (≈ 13 ms a
        game a step here).
    """

    #: Signals (:mod:`jgtest.signals`): RAM position and cells, the score, the frames, the injected
    #: low-FPS gates (RELINE §3.1.3).
    signals = frozenset(
        {"cells", "position", "game_reward", "oracle_inputs", "rgb_frames", "frame_time"}
    )

    name = "ale:MsPacman"
    action_names = ACTION_NAMES
    device_telemetry = RAM_TELEMETRY
    bug_kinds = ("low_fps",) * 4
    num_cells = CELLS_PER_ROW * CELLS_PER_ROW

    def __init__(
        self,
        num_envs: int = 1,
        seed: int = 0,
        frame_size: tuple[int, int] = (84, 84),
        sticky_action_prob: float = 0.0,
        max_steps_in_episode: int = 27_000,
        num_threads: int = 0,
        reward: str = "dots",
        intro_steps: int = 0,
        screens: bool = False,
        ssim_gates: Callable[[np.ndarray], np.ndarray] | None = None,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if not 0.0 <= sticky_action_prob <= 1.0:
            raise ValueError(f"sticky_action_prob must be in [0, 1], got {sticky_action_prob}")
        if ssim_gates is not None and not screens:
            raise ValueError("ssim_gates looks at ALE's RGB screens: set screens=True too")
        self.num_envs = int(num_envs)
        self.num_actions = len(ACTION_NAMES)
        self.frame_shape = (210, 160, 3) if screens else (int(frame_size[0]), int(frame_size[1]), 1)
        self._screens, self._ssim = bool(screens), ssim_gates
        if not (isinstance(intro_steps, int) and intro_steps >= 0):
            raise ValueError(f"intro_steps must be a count >= 0, got {intro_steps!r}")
        self.intro_steps, self.noop_action = intro_steps, ACTION_NAMES.index("noop")
        if reward not in ("dots", "score", "sign"):
            raise ValueError(f"reward must be 'dots', 'score' or 'sign', got {reward!r}")
        self._score, self._sign = reward in ("score", "sign"), reward == "sign"
        if self._score:
            self.device_telemetry = None
        self.max_steps_in_episode = int(max_steps_in_episode)
        self._options = dict(
            num_envs=self.num_envs,
            batch_size=self.num_envs,
            stack_num=1,
            gray_scale=not screens,
            frame_skip=4,
            img_height=self.frame_shape[0],
            img_width=self.frame_shape[1],
            noop_max=1,
            episodic_life=False,
            reward_clip=False,
            repeat_action_probability=float(sticky_action_prob),
            max_episode_steps=self.max_steps_in_episode,
            num_threads=int(num_threads),
        )
        self._ale_actions = np.asarray(ALE_ACTIONS, np.int32)
        self._pool, self._seed, self._frame_batch, self._tallied = None, None, None, True
        self._zeros, self._false = (
            np.zeros(self.num_envs, np.float32),
            np.zeros(self.num_envs, bool),
        )
        self._zeros.flags.writeable = self._false.flags.writeable = (
            False  # shared by every step's telemetry
        )
        self._build(seed)

    def _build(self, seed: int) -> None:
        import envpool

        self.close()
        self._pool = envpool.make(
            "MsPacman-v5", env_type="gymnasium", seed=int(seed), **self._options
        )
        self._seed = int(seed)

    @property
    def pool(self):
        """The envpool environment (for its XLA handle: ``env.pool.xla()``)."""
        return self._pool

    def _frames(self, obs) -> np.ndarray:
        # envpool's [N, 1, H, W] as [N, H, W, 1]: a reshape keeps the view C-contiguous with plain
        # strides (moveaxis gives the size-1 axis a stride JAX copies slowly, +0.1 ms a step).
        frames = (
            np.ascontiguousarray(obs.transpose(0, 2, 3, 1))
            if self._screens
            else obs.reshape(len(obs), *self.frame_shape)
        )
        # checked once per batch shape
        if (frames.shape, frames.dtype) == (
            self._frame_batch,
            np.uint8,
        ):
            return frames
        frames = check_frames(frames, (self.num_envs, *self.frame_shape), self.name)
        self._frame_batch = frames.shape
        return frames

    def _observe(self, ram, reward_dots, autoreset, info) -> dict:
        x, y = ram[:, RAM_X], ram[:, RAM_Y]
        fired = GATES_TABLE[x, y] & ~autoreset[:, None] & ~self._found
        self._found |= fired
        telemetry = Telemetry(
            position=ram[:, [RAM_X, RAM_Y]].astype(np.float32),
            cell=CELL_TABLE[x, y],
            bugs_fired=fired,
            game_reward=reward_dots,
            frame_time_ms=self._zeros,
            crashed=self._false,
        )
        extras = {k: info[k] for k in ("ram_gates", "ssim_gates") if k in info}
        return {
            "telemetry": telemetry,
            "autoreset": autoreset,
            "ram": ram,
            "lives": info["lives"],
            **extras,
        }

    def reset(self, seed: int):
        if seed != self._seed:
            self._build(seed)
        obs, info = self._pool.reset()
        self._found = np.zeros((self.num_envs, len(GATE_NAMES)), bool)
        self._done = np.zeros(self.num_envs, bool)
        self._dots = info["ram"][:, RAM_DOTS].astype(np.int32)
        self._tallied = True
        autoreset = np.zeros(self.num_envs, bool)
        return self._frames(obs), self._observe(
            info["ram"], np.zeros(self.num_envs, np.float32), autoreset, info
        )

    def step_raw(self, actions):
        out = self._step_raw(actions)
        self._tallied = False  # the numpy telemetry's gates and dots are not kept up to date
        return out

    def _step_raw(self, actions):
        actions = self.check_actions(actions)
        obs, score, terminated, truncated, info = self._pool.step(self._ale_actions[actions])
        autoreset, self._done = self._done, terminated | truncated
        frames = self._frames(obs)
        info = {
            "autoreset": autoreset,
            "ram": info["ram"],
            "lives": info["lives"],
            "score": score,
            **self._screen_gates(frames, info["ram"]),
        }
        return frames, terminated, truncated, info

    def _screen_gates(self, frames, ram) -> dict:
        """With ``screens``: the gates by RAM at this step and, with ``ssim_gates``, by the
        screens."""
        if not self._screens:
            return {}
        gates = {"ram_gates": GATES_TABLE[ram[:, RAM_X], ram[:, RAM_Y]]}
        if self._ssim is not None:
            gates["ssim_gates"] = self._ssim(frames)
        return gates

    def step(self, actions):
        if not self._tallied:
            raise RuntimeError(f"{self.name}: step() after step_raw() in the same run: reset first")
        frames, terminated, truncated, info = self._step_raw(actions)
        ram, autoreset = info["ram"], info["autoreset"]
        self._found[autoreset] = False
        dots = ram[:, RAM_DOTS].astype(np.int32)
        score = np.sign(info["score"]) if self._sign else info["score"]
        reward = np.where(
            autoreset, 0, score if self._score else np.maximum(dots - self._dots, 0)
        ).astype(np.float32)
        self._dots = dots
        return frames, reward, terminated, truncated, self._observe(ram, reward, autoreset, info)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


class XlaMsPacman:
    """:class:`MsPacmanEnv`'s step as pure JAX over envpool's XLA handle (``env.pool.xla()``).

    The same rules as the host path (gates by :func:`gates_at`, first visit
    per episode, dots from RAM byte 119, next-step auto-reset), carried in
    arrays so that a ``lax.scan`` of :meth:`step` runs the game inside ``jit``.
    Creating it resets the pool asynchronously; :meth:`start` receives those
    first frames.
    """

    def __init__(self, env: MsPacmanEnv):
        import jax.numpy as jnp

        if env.device_telemetry is None:
            raise ValueError(
                "the XLA loop reads Ms. Pac-Man's RAM telemetry (dots as the reward): build "
                "the game with reward='dots'"
            )

        self._jnp = jnp
        self.num_envs, self.frame_shape = env.num_envs, env.frame_shape
        env.pool.async_reset()
        self.handle, self._recv, self._send, self._step = env.pool.xla()
        self._ale_actions = jnp.asarray(ALE_ACTIONS, jnp.int32)

    def _frames(self, obs):
        return self._jnp.moveaxis(obs, 1, -1)

    def start(self, handle):
        """``(handle, frames, carry)`` after the reset; ``carry`` = (:class:`RamTelemetry`'s,
        done)."""
        handle, (obs, _, _, _, info) = self._recv(handle)
        return (
            handle,
            self._frames(obs),
            (RAM_TELEMETRY.init(RAM_TELEMETRY.take(info)), self._jnp.zeros(self.num_envs, bool)),
        )

    def step(self, handle, carry, actions):
        """``(handle, frames, carry, telemetry, done, autoreset)`` after ``actions`` (RELINE's
        ids)."""
        tally, autoreset = carry
        handle, (obs, _, terminated, truncated, info) = self._step(
            handle, self._ale_actions[actions]
        )
        tally, telemetry = RAM_TELEMETRY.step(tally, RAM_TELEMETRY.take(info), autoreset)
        done = terminated | truncated
        return handle, self._frames(obs), (tally, done), telemetry, done, autoreset
