"""ViZDoom as a real game behind the host contract: ``vizdoom:SCENARIO`` and ``vizdoom:freedoom2/MAP01``.

The real Doom engine (ViZDoom, from PyPI, with the Freedoom WADs it ships: nothing is downloaded),
headless, ``num_envs`` games in this process stepped one after another, each step timed.

* ``vizdoom:basic`` (any ``*.cfg`` of ViZDoom's scenarios): the scenario's map, buttons, rewards
  and episode length; each button is one action.
* ``vizdoom:freedoom2/MAP01`` (``freedoom1/E1M1`` …): a full level of the WAD ViZDoom ships, with
  eight actions (forward, back, turn left and right, strafe left and right, attack, use) and no
  reward but the engine's.

What the bridge reads from the engine each step:

* **frames**: the screen, RGB (160 × 120 by default);
* **position** ``(x, y)`` in map units and the angle, from the game variables;
* **cells**: the level's bounding box (its sectors' lines, read once) in squares of
  ``cell_size`` map units (64 by default, about a corridor's width); :attr:`VizDoomEnv.map_shape`;
* **objects**: the labels buffer, each thing in view with its name, id and screen box
  (``info["objects"]``: one list per game);
* **frame time**: the wall time of the engine's step, rendering included (``make_action``);
* **state**: health, ammo, kills and items collected (``info["state"]``, ``float32[N, 4]``);
* **crashes**: an engine that dies is restarted, and the step is a crash.

Each episode of game ``i`` starts from the seed :func:`envs_bridge.protocol.episode_seed` ``(seed, i,
episode)``, so that a record's seed, game and episode and its actions replay it
(:func:`jgtest.host_loop.replay_host_record`: ``first_game`` and ``reset(seed, episode=E)``).
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from envs_bridge.protocol import HostEnv, check_frames, episode_seed, host_telemetry

#: The actions on a full level: one button each.
LEVEL_BUTTONS = ("MOVE_FORWARD", "MOVE_BACKWARD", "TURN_LEFT", "TURN_RIGHT", "MOVE_LEFT", "MOVE_RIGHT", "ATTACK", "USE")
#: The game variables read each step, in ``info["state"]``'s order after position and angle.
STATE_VARIABLES = ("HEALTH", "SELECTED_WEAPON_AMMO", "KILLCOUNT", "ITEMCOUNT")


def _vizdoom():
    import vizdoom

    return vizdoom


def levels() -> tuple[str, ...]:
    """The names ``vizdoom:`` takes: the scenarios ViZDoom ships and the WADs' maps (as patterns)."""
    vzd = _vizdoom()
    scenarios = sorted(f[: -len(".cfg")] for f in os.listdir(vzd.scenarios_path) if f.endswith(".cfg"))
    return (*scenarios, "freedoom1/E1M1…E4M9", "freedoom2/MAP01…MAP32")


class VizDoomEnv(HostEnv):
    """``num_envs`` ViZDoom games of ``level`` (module docstring).

    Args:
      level: a scenario (``basic``) or ``WAD/MAP`` (``freedoom2/MAP01``).
      num_envs: games stepped one after another.
      seed: campaign seed (:func:`envs_bridge.protocol.episode_seed`).
      max_steps_in_episode: the cap (a full level's; a scenario keeps its own timeout if shorter).
      cell_size: the coverage squares' side, in map units.
      frame_skip: engine tics a step (4: 35 tics/s become about 9 steps/s of game time).
      first_game: the campaign's index of game 0 (game ``i`` here is ``first_game + i`` there: its
        episodes' seeds, :func:`envs_bridge.protocol.episode_seed`).

    Raises:
      ValueError: an unknown level (the message lists them).
    """

    #: Signals (:mod:`jgtest.signals`): the engine's position, the labels' objects, real frame times, crashes.
    signals = frozenset({"cells", "position", "game_reward", "oracle_inputs", "rgb_frames", "objects", "frame_time"})
    replayable = True

    def __init__(self, level: str, num_envs: int = 1, seed: int = 0, max_steps_in_episode: int = 2100, cell_size: int = 64, frame_skip: int = 4,
                 first_game: int = 0):  # fmt: skip
        vzd = _vizdoom()
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.name, self.level, self.num_envs = f"vizdoom:{level}", level, int(num_envs)
        self.max_steps_in_episode, self._skip, self._seed, self._first = int(max_steps_in_episode), int(frame_skip), int(seed), int(first_game)
        wad, _, map_name = level.partition("/")
        if map_name:
            path = os.path.join(os.path.dirname(vzd.__file__), f"{wad}.wad")
            if not os.path.exists(path):
                raise ValueError(f"unknown ViZDoom level {level!r}; levels: {', '.join(levels())}")
            self._setup = {"wad": path, "map": map_name.upper()}
        else:
            cfg = os.path.join(vzd.scenarios_path, f"{level}.cfg")
            if not os.path.exists(cfg):
                raise ValueError(f"unknown ViZDoom level {level!r}; levels: {', '.join(levels())}")
            self._setup = {"cfg": cfg}
        self._games = [self._start() for _ in range(self.num_envs)]
        self.action_names = tuple(str(b).split(".")[-1] for b in self._games[0].get_available_buttons())
        self.num_actions = len(self.action_names)
        self.bug_kinds = ("crash",)
        self._episodes = np.zeros(self.num_envs, np.int64)
        self._steps = np.zeros(self.num_envs, np.int64)
        self._done = np.zeros(self.num_envs, bool)
        self._last = [None] * self.num_envs
        self._new_episode(0)
        state = self._games[0].get_state()
        self.frame_shape = state.screen_buffer.shape
        xs = [v for s in state.sectors for line in s.lines for v in (line.x1, line.x2)]
        ys = [v for s in state.sectors for line in s.lines for v in (line.y1, line.y2)]
        self.bounds = (min(xs), min(ys), max(xs), max(ys))
        self.cell_size = int(cell_size)
        self.map_shape = (int((self.bounds[3] - self.bounds[1]) // cell_size) + 1, int((self.bounds[2] - self.bounds[0]) // cell_size) + 1)
        self.num_cells = self.map_shape[0] * self.map_shape[1]
        self.walls = [(line.x1, line.y1, line.x2, line.y2) for s in state.sectors for line in s.lines if line.is_blocking]

    def _start(self):
        vzd = _vizdoom()
        game = vzd.DoomGame()
        if "cfg" in self._setup:
            game.load_config(self._setup["cfg"])
        else:
            game.set_doom_game_path(self._setup["wad"])
            game.set_doom_map(self._setup["map"])
            game.set_available_buttons([getattr(vzd.Button, b) for b in LEVEL_BUTTONS])
            game.set_episode_timeout(0)
        game.set_screen_resolution(vzd.ScreenResolution.RES_160X120)
        game.set_screen_format(vzd.ScreenFormat.RGB24)
        game.set_window_visible(False)
        game.set_sound_enabled(False)
        game.set_doom_config_path(os.path.join(tempfile.gettempdir(), "jgtest_vizdoom.ini"))  # not the working directory
        game.set_labels_buffer_enabled(True)
        game.set_sectors_info_enabled(True)
        game.set_available_game_variables([getattr(vzd.GameVariable, v) for v in ("POSITION_X", "POSITION_Y", "ANGLE", *STATE_VARIABLES)])
        game.set_mode(vzd.Mode.PLAYER)
        game.init()
        return game

    def _new_episode(self, i: int) -> None:
        game = self._games[i]
        game.set_seed(episode_seed(self._seed, self._first + i, int(self._episodes[i])))
        game.new_episode()
        self._steps[i] = 0

    def _read(self, i: int) -> dict:
        state = self._games[i].get_state()
        if state is None:  # an episode's last step has no state: the previous one stands
            return dict(self._last[i])
        x, y, angle, *rest = state.game_variables
        col = int((x - self.bounds[0]) // self.cell_size)
        row = int((y - self.bounds[1]) // self.cell_size)
        cell = int(np.clip(row, 0, self.map_shape[0] - 1) * self.map_shape[1] + np.clip(col, 0, self.map_shape[1] - 1))
        objects = [(label.object_name, int(label.object_id), int(label.x), int(label.y), int(label.width), int(label.height)) for label in state.labels]
        out = {"frame": state.screen_buffer, "position": (x, y), "angle": angle, "cell": cell, "state": rest, "objects": objects}
        self._last[i] = out
        return out

    def _batch(self, rows: list[dict], reward, elapsed_ms, crashed, autoreset) -> tuple[np.ndarray, dict]:
        frames = check_frames(np.stack([r["frame"] for r in rows]), (self.num_envs, *self.frame_shape), self.name)
        telemetry = host_telemetry([r["position"] for r in rows], [r["cell"] for r in rows], crashed[:, None], reward, elapsed_ms, crashed)
        info = {"telemetry": telemetry, "autoreset": autoreset, "angle": np.asarray([r["angle"] for r in rows], np.float32),
                "state": np.asarray([r["state"] for r in rows], np.float32), "objects": [r["objects"] for r in rows]}  # fmt: skip
        return frames, info

    def reset(self, seed: int, episode: int = 0):
        """Every game starts episode ``episode`` (0: the campaign's first) of the campaign ``seed``."""
        self._seed = int(seed)
        self._episodes[:], self._done[:] = episode, False
        self._last = [None] * self.num_envs
        for i in range(self.num_envs):
            self._new_episode(i)
        zeros = np.zeros(self.num_envs, np.float32)
        return self._batch([self._read(i) for i in range(self.num_envs)], zeros, zeros, np.zeros(self.num_envs, bool), np.zeros(self.num_envs, bool))

    def step(self, actions):
        vzd = _vizdoom()
        actions = self.check_actions(actions)
        autoreset = self._done.copy()
        reward, elapsed_ms = np.zeros(self.num_envs, np.float32), np.zeros(self.num_envs, np.float32)
        terminated, truncated, crashed = (np.zeros(self.num_envs, bool) for _ in range(3))
        for i, game in enumerate(self._games):
            if autoreset[i]:
                self._episodes[i] += 1
                self._new_episode(i)
                continue
            buttons = [0] * self.num_actions
            buttons[int(actions[i])] = 1
            start = time.perf_counter()
            try:
                reward[i] = game.make_action(buttons, self._skip)
            except vzd.ViZDoomUnexpectedExitException:
                crashed[i] = terminated[i] = True
                self._games[i] = self._start()
            elapsed_ms[i] = (time.perf_counter() - start) * 1e3
            self._steps[i] += 1
            if not crashed[i]:
                terminated[i] = game.is_episode_finished() and (game.is_player_dead() or self._steps[i] < self.max_steps_in_episode)
                truncated[i] = not terminated[i] and (game.is_episode_finished() or self._steps[i] >= self.max_steps_in_episode)
        self._done = terminated | truncated
        frames, info = self._batch([self._read(i) for i in range(self.num_envs)], reward, elapsed_ms, crashed, autoreset)
        return frames, reward, terminated, truncated, info

    def close(self) -> None:
        for game in getattr(self, "_games", []):
            game.close()
        self._games = []

