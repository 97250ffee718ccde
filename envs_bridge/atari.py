"""Every Atari game envpool ships, as ``ale:GAME`` (``ale:Breakout``, ``ale:Pong``, …).

``ale:MsPacman`` keeps its own bridge (:mod:`envs_bridge.ale`); every other envpool ``*-v5`` game is
an :class:`AtariEnv`, its cells from the RAM where AtariARI annotates the player
(:data:`RAM_PLAYER`, Anand et al., 2019), else from a hash of the frame (:func:`cells_from`).

* chosen: no episodic life, no reward clipping, no sticky actions, because a seed and actions then
  replay.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from envs_bridge.gym import HASH_CELLS, frame_hashes
from envs_bridge.protocol import HostEnv, check_frames, host_telemetry

#: The player's RAM bytes ``(x, y, room)`` where AtariARI annotates them (``None``: not annotated).
RAM_PLAYER = {
    "Asteroids": (73, 74, None),
    "Berzerk": (19, 11, None),
    "Bowling": (29, 40, None),
    "Boxing": (32, 34, None),
    "Breakout": (72, None, None),
    "DemonAttack": (22, None, None),
    "Freeway": (None, 14, None),
    "Frostbite": (102, 100, None),
    "Hero": (27, 31, 28),
    "MontezumaRevenge": (42, 43, 3),
    "Pitfall": (97, 105, None),
    "Pong": (46, 51, None),
    "PrivateEye": (63, 86, 92),
    "Qbert": (43, 67, None),
    "Riverraid": (51, None, None),
    "Seaquest": (70, 97, None),
    "Skiing": (25, None, None),
    "SpaceInvaders": (28, None, None),
    "Tennis": (26, 24, None),
    "Venture": (85, 26, 90),
    "YarsRevenge": (32, 31, None),
}
#: Cells of a RAM position: 32 × 32 blocks of 8 pixels (a byte's range), per room (up to 256).
BLOCK, BLOCKS = 8, 32


@functools.cache
def known_games() -> tuple[str, ...]:
    """The Atari games envpool ships (its Atari ``*-v5`` ids, without the suffix)."""
    import envpool
    from envpool.atari.registration import atari_game_list

    names = {"".join(part.capitalize() for part in game.split("_")) for game in atari_game_list}
    return tuple(sorted(n for n in names if f"{n}-v5" in envpool.list_all_envs()))


def cells_from(game: str) -> str:
    """``"ram"`` where :data:`RAM_PLAYER` annotates ``game``'s player, else ``"frame hash"``."""
    return "ram" if game in RAM_PLAYER else "frame hash"


class AtariEnv(HostEnv):
    """``num_envs`` copies of the Atari game ``game`` through envpool.

    Frames are ALE's screens, grayscale and resized (84 × 84 by default), one per step of 4
    emulator frames. Where :data:`RAM_PLAYER` annotates the player (AtariARI's ``atari_dict``),
    the position is ``(x, y)`` from its bytes (0 where an axis has none) and the cell the position
    in 8-pixel blocks, per room where the game has rooms; elsewhere the cell is a coarse hash of
    the frame (:func:`envs_bridge.gym.frame_hashes`) and the game gives no position. The frame
    time is the batch's step wall time (envpool steps its games together on its threads), the
    same for every game of the batch.

    Args:
      game: an envpool Atari game (``Breakout``), not ``MsPacman`` (its own bridge).
      num_envs: games stepped together.
      seed: envpool's seed; :meth:`reset` with another seed rebuilds the pool.
      frame_size: ``(height, width)`` of the grayscale frames.
      sticky_action_prob: ALE's repeat-action probability (0: replays are exact).
      max_steps_in_episode: the cap, in steps of 4 frames.

    Raises:
      ValueError: a game envpool does not ship (the message lists those it does).
    """

    #: Signals (:mod:`jgtest.signals`) of every Atari game; ``position`` where the RAM annotates it.
    signals = frozenset({"cells", "game_reward", "rgb_frames", "frame_time"})

    @classmethod
    def declared_signals(cls, name: str, options: dict) -> frozenset[str]:
        return cls.signals | ({"position"} if name.partition(":")[2] in RAM_PLAYER else set())

    def __init__(
        self,
        game: str,
        num_envs: int = 1,
        seed: int = 0,
        frame_size: tuple[int, int] = (84, 84),
        sticky_action_prob: float = 0.0,
        max_steps_in_episode: int = 27_000,
    ):
        known = known_games()
        if game not in known or game == "MsPacman":
            raise ValueError(f"unknown ALE game {game!r}; envpool ships: {', '.join(known)}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.name, self.num_envs, self.game = f"ale:{game}", int(num_envs), game
        self.frame_shape = (int(frame_size[0]), int(frame_size[1]), 1)
        self.max_steps_in_episode, self.bug_kinds = int(max_steps_in_episode), ()
        self._ram = RAM_PLAYER.get(game)
        rooms = 256 if self._ram is not None and self._ram[2] is not None else 1
        self.num_cells = rooms * BLOCKS * BLOCKS if self._ram is not None else HASH_CELLS
        self._options = dict(
            num_envs=self.num_envs,
            batch_size=self.num_envs,
            stack_num=1,
            gray_scale=True,
            frame_skip=4,
            img_height=self.frame_shape[0],
            img_width=self.frame_shape[1],
            episodic_life=False,
            reward_clip=False,
            repeat_action_probability=float(sticky_action_prob),
            max_episode_steps=self.max_steps_in_episode,
        )
        self._pool, self._seed = None, None
        self._build(seed)
        self.num_actions = int(self._pool.action_space.n)
        self.action_names = tuple(f"action {a}" for a in range(self.num_actions))

    def _build(self, seed: int) -> None:
        import envpool

        self.close()
        self._pool = envpool.make(
            f"{self.game}-v5", env_type="gymnasium", seed=int(seed), **self._options
        )
        self._seed = int(seed)

    def _read(self, frames: np.ndarray, ram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(position [N, 2], cell [N])`` from the RAM where annotated, else the frame hash."""
        if self._ram is None:
            return np.zeros((self.num_envs, 2), np.float32), frame_hashes(frames, self.num_cells)
        x_at, y_at, room_at = self._ram
        column = lambda at: (
            ram[:, at].astype(np.int64) if at is not None else np.zeros(self.num_envs, np.int64)
        )
        x, y, room = column(x_at), column(y_at), column(room_at)
        return np.stack([x, y], axis=1).astype(np.float32), (
            room * BLOCKS + y // BLOCK
        ) * BLOCKS + x // BLOCK

    def _observe(self, obs, reward, ram, elapsed_ms: float, autoreset) -> tuple[np.ndarray, dict]:
        frames = check_frames(
            obs.reshape(self.num_envs, *self.frame_shape),
            (self.num_envs, *self.frame_shape),
            self.name,
        )
        position, cell = self._read(frames, ram)
        zeros = np.zeros(self.num_envs, bool)
        telemetry = host_telemetry(
            position,
            cell,
            np.zeros((self.num_envs, 0), bool),
            reward,
            np.full(self.num_envs, elapsed_ms),
            zeros,
        )
        return frames, {"telemetry": telemetry, "autoreset": autoreset, "ram": ram}

    def reset(self, seed: int):
        if seed != self._seed:
            self._build(seed)
        obs, info = self._pool.reset()
        self._done = np.zeros(self.num_envs, bool)
        return self._observe(
            obs,
            np.zeros(self.num_envs, np.float32),
            info["ram"],
            0.0,
            np.zeros(self.num_envs, bool),
        )

    def step(self, actions):
        actions = self.check_actions(actions)
        start = time.perf_counter()
        obs, reward, terminated, truncated, info = self._pool.step(actions)
        elapsed_ms = (time.perf_counter() - start) * 1e3
        autoreset, self._done = self._done, terminated | truncated
        reward = np.where(autoreset, 0.0, reward).astype(np.float32)
        frames, out = self._observe(obs, reward, info["ram"], elapsed_ms, autoreset)
        return frames, reward, terminated, truncated, out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
