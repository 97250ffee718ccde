"""A toy host game for tests of the host contract's users (the game farm, the host loop)."""

from __future__ import annotations

import time

import numpy as np

from envs_bridge.protocol import GameCrashed, HostEnv, host_telemetry

EPISODE = 20


class ToyGame(HostEnv):
    """A counter game: the frame is ``(seed + 3 t + sum of actions) % 256`` everywhere.

    Action 1 pays 1; episodes end (terminated) after 20 steps; next-step auto-reset.
    ``faults`` maps an episode seed to ``(kind, step)``: at that step index of
    an episode reset with that seed the game raises GameCrashed (``"crash"``),
    sleeps ``hang_s`` (``"hang"``) or returns a NaN float frame (``"nan"``).
    """

    name = "toy"
    num_actions = 3
    action_names = ("stay", "score", "skip")
    frame_shape = (8, 8, 1)
    bug_kinds = ()
    num_cells = EPISODE + 1
    max_steps_in_episode = EPISODE

    def __init__(self, num_envs: int = 1, faults: dict | None = None, hang_s: float = 60.0):
        self.num_envs, self.faults, self.hang_s = num_envs, dict(faults or {}), hang_s

    def _observe(self, reward: float, autoreset: bool):
        frames = np.full(
            (self.num_envs, *self.frame_shape),
            (self.seed + 3 * self.t + self.total) % 256,
            np.uint8,
        )
        telemetry = host_telemetry(
            position=[[self.t, self.total]] * self.num_envs,
            cell=[self.t] * self.num_envs,
            bugs_fired=np.zeros((self.num_envs, 0)),
            game_reward=[reward] * self.num_envs,
            frame_time_ms=[0.0] * self.num_envs,
            crashed=[False] * self.num_envs,
        )
        return frames, {"telemetry": telemetry, "autoreset": np.full(self.num_envs, autoreset)}

    def reset(self, seed: int):
        self.seed, self.t, self.total = int(seed), 0, 0
        return self._observe(0.0, False)

    def step(self, actions):
        action = int(self.check_actions(actions)[0])
        if self.t == EPISODE:
            frames, info = self.reset(self.seed)
            info["autoreset"][:] = True
            return frames, np.zeros(1, np.float32), np.zeros(1, bool), np.zeros(1, bool), info
        kind, at = self.faults.get(self.seed, (None, -1))
        if self.t == at and kind == "crash":
            raise GameCrashed(f"toy: crashed at step {at}")
        if self.t == at and kind == "hang":
            time.sleep(self.hang_s)
        self.t, self.total = self.t + 1, self.total + action
        reward = float(action == 1)
        frames, info = self._observe(reward, False)
        if self.t - 1 == at and kind == "nan":
            frames = np.full(frames.shape, np.nan, np.float32)
        return (
            frames,
            np.full(1, reward, np.float32),
            np.full(1, self.t == EPISODE),
            np.zeros(1, bool),
            info,
        )


def toy_value(seed: int, actions) -> int:
    return (seed + 3 * len(actions) + sum(actions)) % 256
