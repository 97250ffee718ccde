"""A tiny Gymnasium game the project does not ship, for the gym: bridge's tests: a corridor of 12
cells, actions left / stay / right, an episode ends at the right end or after 30 steps. Its
observation is the position (not an image), so the bridge draws frames with ``render()``. Walking
right from cell 4 raises (the game's crash bug)."""

import gymnasium
import numpy as np
from gymnasium import spaces

LENGTH, CRASH_CELL = 12, 4


class Corridor(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(0, LENGTH - 1, (1,), np.float32)
        self.x = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = int(self.np_random.integers(0, 3))
        return np.array([self.x], np.float32), {"x": self.x}

    def step(self, action):
        if self.x == CRASH_CELL and action == 2:
            raise RuntimeError("the corridor's fifth tile has no floor")
        self.x = int(np.clip(self.x + int(action) - 1, 0, LENGTH - 1))
        return (
            np.array([self.x], np.float32),
            1.0 if self.x == LENGTH - 1 else 0.0,
            self.x == LENGTH - 1,
            False,
            {"x": self.x},
        )

    def render(self):
        frame = np.zeros((16, 48, 3), np.uint8)
        frame[:, 4 * self.x : 4 * self.x + 4] = 255
        return frame


gymnasium.register("Tiny-v0", entry_point=Corridor, max_episode_steps=30)


def telemetry(obs, info, env):
    """Position and cell from the game's state."""
    return {"position": (float(env.unwrapped.x), 0.0), "cell": env.unwrapped.x}


def telemetry_bad_shape(obs, info, env):
    return {"position": (1.0, 2.0, 3.0)}


def telemetry_nan(obs, info, env):
    return {"frame_time_ms": float("nan")}


#: While ``broken``, :func:`telemetry_late_nan` reports a NaN position from its 150th call on.
LATE_NAN = {"broken": True, "calls": 0}


def telemetry_late_nan(obs, info, env):
    """:func:`telemetry`, failing mid-campaign while ``LATE_NAN["broken"]`` (a bug its author then
    fixes)."""
    LATE_NAN["calls"] += 1
    fields = telemetry(obs, info, env)
    return (
        {**fields, "position": (float("nan"), 0.0)}
        if LATE_NAN["broken"] and LATE_NAN["calls"] >= 150
        else fields
    )


def telemetry_bad_cell(obs, info, env):
    return {"cell": 1e9}


class BrokenScreen(Corridor):
    """The corridor whose screen breaks: from cell 3 on, ``render()`` returns NaN pixels (a game
    fault the bridge cannot turn into a bug record)."""

    def render(self):
        frame = super().render().astype(np.float32)
        if self.x >= 3:
            frame[0, 0] = np.nan
        return frame


gymnasium.register("TinyBrokenScreen-v0", entry_point=BrokenScreen, max_episode_steps=30)
