"""ViZDoom behind the host contract: ``vizdoom:SCENARIO`` and ``vizdoom:freedoom2/MAP01``.

The real Doom engine, headless, with the Freedoom WADs ViZDoom ships. :class:`VizDoomEnv` reads
frames, position, cells, objects and Wuji's state features (Def. 3), and fires crash, stuck (Wuji
§III-B) and user-given logical oracles.

* chosen: cells of 64 map units, because that is about a corridor's width.
* chosen: feature ranges (health 0 to 200 …), because the engine states none.
* chosen: stuck needs movement buttons held, because turning on the spot is not a bug.

Example: ``jgtest run random --game vizdoom:freedoom2/MAP01 --game-arg assertions=my_rules:RULES``.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from envs_bridge.protocol import HostEnv, check_frames, episode_seed, host_telemetry, load_named

#: The actions on a full level: one button each.
LEVEL_BUTTONS = (
    "MOVE_FORWARD",
    "MOVE_BACKWARD",
    "TURN_LEFT",
    "TURN_RIGHT",
    "MOVE_LEFT",
    "MOVE_RIGHT",
    "ATTACK",
    "USE",
)
#: The game variables read each step, in ``info["state"]``'s order after position and angle.
STATE_VARIABLES = ("HEALTH", "SELECTED_WEAPON_AMMO", "KILLCOUNT", "ITEMCOUNT")
#: Doom's player is 56 units tall: a sector with less room between floor and ceiling is not
#: walkable.
PLAYER_HEIGHT = 56
#: Every game variable read, by name: what an assertion's predicate receives.
VARIABLES = ("POSITION_X", "POSITION_Y", "ANGLE", *STATE_VARIABLES)
#: Doom's invariants, checked on every level: health is capped at 200 (a soul sphere's or a
#: megasphere's; the engine's ``deh.MaxSoulsphere``), and the ammunition of the weapon in hand is a
#: count, or −1, the engine's value for a weapon that uses none (the fist: ``my_way_home``'s and
#: ``health_gathering``'s player is unarmed).
DOOM_ASSERTIONS = {
    "health never above 200": lambda v: v["HEALTH"] <= 200,
    "ammunition never negative": lambda v: v["SELECTED_WEAPON_AMMO"] >= -1,
}


def _vizdoom():
    import vizdoom

    return vizdoom


def levels() -> tuple[str, ...]:
    """The names ``vizdoom:`` takes: the scenarios ViZDoom ships and the WADs' maps (as
    patterns)."""
    vzd = _vizdoom()
    scenarios = sorted(
        f[: -len(".cfg")] for f in os.listdir(vzd.scenarios_path) if f.endswith(".cfg")
    )
    return (*scenarios, "freedoom1/E1M1…E4M9", "freedoom2/MAP01…MAP32")


class VizDoomEnv(HostEnv):
    """``num_envs`` ViZDoom games of ``level``, stepped one after another in this process.

    A scenario (``basic``, any ``*.cfg`` ViZDoom ships) keeps its map, buttons, rewards and episode
    length, each button one action; a full level (``freedoom2/MAP01``, ``freedoom1/E1M1`` …) has
    eight actions (forward, back, turn left and right, strafe left and right, attack, use) and no
    reward but the engine's. What the bridge reads from the engine each step:

    * **frames**: the screen, RGB (160 × 120 by default, ``resolution``);
    * **position** ``(x, y)`` in map units and the angle, from the game variables;
    * **cells**: the level's bounding box (its sectors' lines, read once) in squares of
      ``cell_size`` map units, :attr:`map_shape`; the **walkable area** (:attr:`walkable`) is the
      cells whose centre lies in a sector with room for the player (:data:`PLAYER_HEIGHT`), the
      denominator of coverage; :attr:`walls` are the blocking lines, the bird's-eye map's drawing
      (:func:`jgtest.report.level_maps.level_map`);
    * **objects**: the labels buffer, each thing in view with its name, id and screen box
      (``info["objects"]``: one list per game);
    * **frame time**: the wall time of the engine's step, rendering included (``make_action``);
    * **state**: health, ammo, kills and items collected (``info["state"]``, ``float32[N, 4]``);
    * **state features** (Wuji's Def. 3): every game variable read, position and angle first
      (``info["features"]``, ``float32[N, 7]``, :data:`VARIABLES`' order), in the ranges
      :attr:`feature_bounds`: the level's bounds, 0–360°, health 0–200 (Doom's cap), ammunition
      0–200 (a bullet's cap without a backpack), kills and items 0–50 (a level with more fills
      the top interval);
    * **the level finished**: ``info["level_finished"]``, an episode that ended alive before the
      cap (a level's exit, a scenario's goal);
    * **crashes** (bug 0): an engine that dies is restarted, and the step is a crash;
    * **stuck** (bug 1): Wuji's stuck oracle (§III-B, :func:`jgtest.oracles.stuck`) over the
      position: the player is within ``stuck_distance`` map units of the mean of its last
      ``stuck_steps`` positions while at least three quarters of those steps pressed a movement
      button. Defaults: 70 steps (8 s of game time at 4 tics a step) and 16 units (the player's
      radius): a player that walks into a wall slides along it or turns away within that time,
      one held in place by the level's geometry does not;
    * **logical** (bugs 2…): assertions over the game variables, each ``{name: predicate}`` with
      ``predicate(variables) -> bool`` (true while the invariant holds) over a dict of
      :data:`VARIABLES` (``"HEALTH"``, ``"POSITION_X"`` …): :data:`DOOM_ASSERTIONS`, and those the
      user adds (``assertions=``: a dict, or ``module:name`` naming one, so that a record names
      them and replays).

    Each episode of game ``i`` starts from :func:`envs_bridge.protocol.episode_seed`
    ``(seed, i, episode)``, so that a record's seed, game and episode and its actions replay it
    (:func:`jgtest.host_loop.replay_host_record`).

    Args:
      level: a scenario (``basic``) or ``WAD/MAP`` (``freedoom2/MAP01``).
      num_envs: games stepped one after another.
      seed: campaign seed (:func:`envs_bridge.protocol.episode_seed`).
      max_steps_in_episode: the cap (a full level's; a scenario keeps its own timeout if shorter).
      cell_size: the coverage squares' side, in map units.
      frame_skip: engine tics a step (4: 35 tics/s become about 9 steps/s of game time).
      first_game: the campaign's index of game 0 (game ``i`` here is ``first_game + i`` there: its
        episodes' seeds, :func:`envs_bridge.protocol.episode_seed`).
      assertions: the user's invariants, added to :data:`DOOM_ASSERTIONS` (see above).
      stuck_steps: the stuck oracle's window, in steps (see above).
      stuck_distance: the stuck oracle's distance, in map units.
      resolution: the screen, ``"WIDTHxHEIGHT"`` of ViZDoom's (``"160x120"``: the agents' frames; a
        load test renders what a player sees, ``"640x480"``, where drawing is most of a step's
        time).
      skill: Doom's skill, 1–5 (ViZDoom's default, 3, when ``None``): which things a level holds
        (E1M1's shotgun is placed at skills 1 and 2 only) and how hard its monsters hit.
      game_args: the engine's command-line arguments, e.g. ``"-nomonsters"``.
      level_info: also read, each step, every thing in the level (``info["things"]``: one list per
        game of ``(name, id, x, y)``) and every sector's floor and ceiling (``info["sectors"]``: one
        ``float32[S, 2]`` per game, the WAD's sector order): the events a plan's validations read
        (:mod:`jgtest.plans.doom`). The engine then reports them on every step, which costs time.

    Raises:
      ValueError: an unknown level (the message lists them), assertions that are not a dict of
        functions or whose names clash.
    """

    #: Signals (:mod:`jgtest.signals`): the engine's position, the labels' objects, real frame
    #: times, crashes.
    signals = frozenset(
        {
            "cells",
            "position",
            "state_features",
            "game_reward",
            "oracle_inputs",
            "rgb_frames",
            "objects",
            "frame_time",
        }
    )
    replayable = True

    def __init__(
        self,
        level: str,
        num_envs: int = 1,
        seed: int = 0,
        max_steps_in_episode: int = 2100,
        cell_size: int = 64,
        frame_skip: int = 4,
        first_game: int = 0,
        assertions: dict | str | None = None,
        stuck_steps: int = 70,
        stuck_distance: float = 16.0,
        resolution: str = "160x120",
        skill: int | None = None,
        game_args: str = "",
        level_info: bool = False,
    ):
        vzd = _vizdoom()
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self._resolution = getattr(vzd.ScreenResolution, f"RES_{resolution.upper()}", None)
        if self._resolution is None:
            known = sorted(
                (r[4:].lower() for r in dir(vzd.ScreenResolution) if r.startswith("RES_")),
                key=lambda r: [int(v) for v in r.split("x")],
            )
            raise ValueError(
                f"ViZDoom renders no resolution {resolution!r}; resolutions: {', '.join(known)}"
            )
        if skill is not None and not 1 <= int(skill) <= 5:
            raise ValueError(f"Doom's skill is 1 to 5, got {skill}")
        self._skill, self._game_args, self._level_info = skill, str(game_args), bool(level_info)
        self.name, self.level, self.num_envs = f"vizdoom:{level}", level, int(num_envs)
        self.max_steps_in_episode, self._skip, self._seed, self._first = (
            int(max_steps_in_episode),
            int(frame_skip),
            int(seed),
            int(first_game),
        )
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
        self._games = [self.start_engine() for _ in range(self.num_envs)]
        self.action_names = tuple(
            str(b).split(".")[-1] for b in self._games[0].get_available_buttons()
        )
        self.num_actions = len(self.action_names)
        self._assertions = {**DOOM_ASSERTIONS, **_user_assertions(assertions)}
        self.bug_kinds = ("crash", "stuck", *("logical",) * len(self._assertions))
        self._bug_names = (
            "crash",
            f"stuck: within {stuck_distance:g} units over {stuck_steps} steps of moving",
            *self._assertions,
        )
        self._moving = np.array(["MOVE_" in name for name in self.action_names])
        if stuck_steps < 1 or stuck_distance <= 0:
            raise ValueError(
                "stuck_steps must be at least 1 and stuck_distance above 0, got "
                f"{stuck_steps} and {stuck_distance}"
            )
        self._stuck_steps, self._stuck_distance = int(stuck_steps), float(stuck_distance)
        # the last positions, a ring
        self._trail = np.zeros((self.num_envs, self._stuck_steps, 2), np.float64)
        self._trail_sum = np.zeros((self.num_envs, 2), np.float64)
        # whether each of those steps pressed a movement button
        self._moves = np.zeros((self.num_envs, self._stuck_steps), bool)
        self._episodes = np.zeros(self.num_envs, np.int64)
        self._steps = np.zeros(self.num_envs, np.int64)
        self._done = np.zeros(self.num_envs, bool)
        self._last = [None] * self.num_envs
        self._new_episode(0)
        self.frame_shape = self._games[0].get_state().screen_buffer.shape
        self.cell_size = int(cell_size)
        self._geometry()

    def _geometry(self) -> None:
        """The level's map, from its sectors, read once on a game of its own (the engine reports
        every sector on every step once asked to, which would double a step's cost): :attr:`bounds`,
        :attr:`map_shape`, :attr:`walls` and :attr:`walkable`."""
        game = self.start_engine(sectors=True)
        try:
            game.new_episode()
            sectors = game.get_state().sectors
        finally:
            game.close()
        lines = np.asarray(
            [(line.x1, line.y1, line.x2, line.y2) for s in sectors for line in s.lines], np.float64
        )
        self.bounds = (
            lines[:, [0, 2]].min(),
            lines[:, [1, 3]].min(),
            lines[:, [0, 2]].max(),
            lines[:, [1, 3]].max(),
        )
        size = self.cell_size
        self.map_shape = (
            int((self.bounds[3] - self.bounds[1]) // size) + 1,
            int((self.bounds[2] - self.bounds[0]) // size) + 1,
        )
        self.num_cells = self.map_shape[0] * self.map_shape[1]
        self.walls = [
            (line.x1, line.y1, line.x2, line.y2)
            for s in sectors
            for line in s.lines
            if line.is_blocking
        ]
        rows, cols = np.divmod(np.arange(self.num_cells), self.map_shape[1])
        centres = np.stack(
            [self.bounds[0] + (cols + 0.5) * size, self.bounds[1] + (rows + 0.5) * size], axis=1
        )
        walkable = np.zeros(self.num_cells, bool)
        for sector in sectors:
            if sector.ceiling_height - sector.floor_height >= PLAYER_HEIGHT:
                walkable |= _inside(
                    centres,
                    np.asarray(
                        [(line.x1, line.y1, line.x2, line.y2) for line in sector.lines], np.float64
                    ),
                )
        self.walkable = walkable
        low = np.array([self.bounds[0], self.bounds[1], 0, 0, 0, 0, 0], np.float32)
        self.feature_bounds = (
            low,
            np.array([self.bounds[2], self.bounds[3], 360, 200, 200, 50, 50], np.float32),
        )

    @property
    def bug_names(self) -> tuple[str, ...]:
        return self._bug_names

    def start_engine(self, sectors: bool = False):
        """A running ``vizdoom.DoomGame`` of the level, set up as the bridge plays it (screen,
        buttons, labels, game variables; ``sectors``: the level's geometry on every state),
        headless."""
        vzd = _vizdoom()
        game = vzd.DoomGame()
        if "cfg" in self._setup:
            game.load_config(self._setup["cfg"])
        else:
            game.set_doom_game_path(self._setup["wad"])
            game.set_doom_map(self._setup["map"])
            game.set_available_buttons([getattr(vzd.Button, b) for b in LEVEL_BUTTONS])
            game.set_episode_timeout(0)
        game.set_screen_resolution(self._resolution)
        game.set_screen_format(vzd.ScreenFormat.RGB24)
        game.set_window_visible(False)
        game.set_sound_enabled(False)
        # not the working directory
        game.set_doom_config_path(os.path.join(tempfile.gettempdir(), "jgtest_vizdoom.ini"))
        game.set_labels_buffer_enabled(True)
        game.set_sectors_info_enabled(sectors or self._level_info)
        game.set_objects_info_enabled(self._level_info)
        if self._skill is not None:
            game.set_doom_skill(int(self._skill))
        if self._game_args:
            game.add_game_args(self._game_args)
        game.set_available_game_variables(
            [
                getattr(vzd.GameVariable, v)
                for v in ("POSITION_X", "POSITION_Y", "ANGLE", *STATE_VARIABLES)
            ]
        )
        game.set_mode(vzd.Mode.PLAYER)
        game.init()
        return game

    def _new_episode(self, i: int) -> None:
        game = self._games[i]
        game.set_seed(episode_seed(self._seed, self._first + i, int(self._episodes[i])))
        game.new_episode()
        self._steps[i] = 0
        self._moves[i], self._trail[i], self._trail_sum[i] = False, 0.0, 0.0

    def _read(self, i: int) -> dict:
        state = self._games[i].get_state()
        if state is None:  # an episode's last step has no state: the previous one stands
            return dict(self._last[i])
        values = state.game_variables
        objects = [
            (
                label.object_name,
                int(label.object_id),
                int(label.x),
                int(label.y),
                int(label.width),
                int(label.height),
            )
            for label in state.labels
        ]
        variables = dict(zip(VARIABLES, values.tolist()))
        broken = [not check(variables) for check in self._assertions.values()]
        out = {
            "frame": state.screen_buffer,
            "variables": values,
            "objects": objects,
            "broken": broken,
        }
        if self._level_info:
            out["things"] = [
                (thing.name, int(thing.id), float(thing.position_x), float(thing.position_y))
                for thing in state.objects
            ]
            out["sectors"] = np.asarray(
                [(sector.floor_height, sector.ceiling_height) for sector in state.sectors],
                np.float32,
            )
        self._last[i] = out
        return out

    def _cells(self, position: np.ndarray) -> np.ndarray:
        """The coverage cell under each position (clipped to the level's bounds)."""
        col = np.clip((position[:, 0] - self.bounds[0]) // self.cell_size, 0, self.map_shape[1] - 1)
        row = np.clip((position[:, 1] - self.bounds[1]) // self.cell_size, 0, self.map_shape[0] - 1)
        return (row * self.map_shape[1] + col).astype(np.int32)

    def _stuck(self, position: np.ndarray, actions, autoreset) -> np.ndarray:
        """Bug 1 for each game after its step (the class docstring); the window restarts with each
        episode."""
        n = self._stuck_steps
        full = self._steps > n  # a whole window before this step
        mean = self._trail_sum / n
        moving = self._moves.sum(axis=1) * 4 >= n * 3
        offset = position - mean
        stuck = (
            full
            & moving
            & (np.einsum("ij,ij->i", offset, offset) < self._stuck_distance**2)
            & ~autoreset
        )
        live = np.flatnonzero(~autoreset)
        slot = (self._steps[live] - 1) % n
        # the ring's sum, kept as it turns
        self._trail_sum[live] += position[live] - self._trail[live, slot]
        self._trail[live, slot] = position[live]
        self._moves[live, slot] = self._moving[np.asarray(actions)[live]]
        return stuck

    def _batch(
        self, rows: list[dict], reward, elapsed_ms, crashed, autoreset, actions=None, finished=None
    ) -> tuple[np.ndarray, dict]:
        frames = check_frames(
            np.stack([r["frame"] for r in rows]), (self.num_envs, *self.frame_shape), self.name
        )
        variables = np.stack([r["variables"] for r in rows]).astype(np.float32)
        position = variables[:, :2]
        stuck = (
            np.zeros(self.num_envs, bool)
            if actions is None
            else self._stuck(position, actions, autoreset)
        )
        broken = (
            np.asarray([r["broken"] for r in rows], bool).reshape(
                self.num_envs, len(self._assertions)
            )
            & ~autoreset[:, None]
        )
        fired = np.concatenate([crashed[:, None], stuck[:, None], broken], axis=1)
        telemetry = host_telemetry(
            position, self._cells(position), fired, reward, elapsed_ms, crashed
        )
        info = {
            "telemetry": telemetry,
            "autoreset": autoreset,
            "angle": variables[:, 2],
            "state": variables[:, 3:],
            "features": variables,
            "objects": [r["objects"] for r in rows],
            "level_finished": np.zeros(self.num_envs, bool) if finished is None else finished,
        }
        if self._level_info:
            info["things"], info["sectors"] = (
                [r["things"] for r in rows],
                [r["sectors"] for r in rows],
            )
        return frames, info

    def reset(self, seed: int, episode: int = 0):
        """Every game starts episode ``episode`` (0: the campaign's first) of the campaign
        ``seed``."""
        self._seed = int(seed)
        self._episodes[:], self._done[:] = episode, False
        self._last = [None] * self.num_envs
        for i in range(self.num_envs):
            self._new_episode(i)
        zeros = np.zeros(self.num_envs, np.float32)
        return self._batch(
            [self._read(i) for i in range(self.num_envs)],
            zeros,
            zeros,
            np.zeros(self.num_envs, bool),
            np.zeros(self.num_envs, bool),
        )

    def step(self, actions):
        vzd = _vizdoom()
        actions = self.check_actions(actions)
        autoreset = self._done.copy()
        reward, elapsed_ms = (
            np.zeros(self.num_envs, np.float32),
            np.zeros(self.num_envs, np.float32),
        )
        terminated, truncated, crashed, finished = (np.zeros(self.num_envs, bool) for _ in range(4))
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
                self._games[i] = self.start_engine()
            elapsed_ms[i] = (time.perf_counter() - start) * 1e3
            self._steps[i] += 1
            if crashed[i]:
                continue
            ended, capped = game.is_episode_finished(), self._steps[i] >= self.max_steps_in_episode
            if ended:
                dead = game.is_player_dead()
                terminated[i] = dead or not capped
                # the level's exit (or the scenario's goal) reached
                finished[i] = terminated[i] and not dead
            truncated[i] = not terminated[i] and (ended or capped)
        self._done = terminated | truncated
        frames, info = self._batch(
            [self._read(i) for i in range(self.num_envs)],
            reward,
            elapsed_ms,
            crashed,
            autoreset,
            actions,
            finished,
        )
        return frames, reward, terminated, truncated, info

    def close(self) -> None:
        for game in getattr(self, "_games", []):
            game.close()
        self._games = []


def _user_assertions(assertions: dict | str | None) -> dict:
    """The user's assertions (a dict of predicates, or ``module:name`` naming one), checked."""
    if assertions is None:
        return {}
    if isinstance(assertions, str):
        assertions = load_named(
            assertions, "dict of assertions", lambda found: isinstance(found, dict)
        )
    if not isinstance(assertions, dict) or not all(
        isinstance(k, str) and callable(f) for k, f in assertions.items()
    ):
        raise ValueError("ViZDoom assertions are a dict {name: predicate(variables) -> bool}")
    clash = sorted(set(assertions) & set(DOOM_ASSERTIONS))
    if clash:
        raise ValueError(
            f"assertion name(s) {', '.join(clash)} are Doom's own (DOOM_ASSERTIONS): name "
            "yours differently"
        )
    return assertions


def _inside(points: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Whether each point lies inside the polygon whose edges are ``edges`` (``[E, 4]``, in any
    order: a sector's lines), by the even-odd rule: a ray to the right crosses an odd number of
    edges."""
    x, y = points[:, :1], points[:, 1:]
    x1, y1, x2, y2 = (edges[None, :, k] for k in range(4))
    straddles = (y1 > y) != (y2 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
    return (straddles & (x < crossing)).sum(axis=1) % 2 == 1
