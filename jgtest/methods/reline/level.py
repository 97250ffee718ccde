"""RELINE on a real level (ViZDoom, Freedoom's maps) or a Gymnasium game with a position (§2, §4).

:func:`run_level`: the phases of :mod:`jgtest.methods.reline.real_game` with a level's terms
(:class:`LevelTerms`; :class:`PositionTerms` on a Gymnasium game). The paper says how to carry
RELINE to another game (§2); where it is silent:

* chosen: ``r_g`` = the engine's reward + 1 a cell first entered, because that is progress.
* chosen: ``r_p`` = 10 a frame over ``t`` anywhere, because a player goes everywhere walkable.
* chosen: the finish bonus at the level's exit; the calibration cut at the stuck oracle.
* chosen: episodes of 90 s of game time, the kart's (§4.1.3), on a player's 640 × 480 screen.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jgtest.envs.wrappers import ObservationPipeline
from jgtest.methods.reline import real_game
from jgtest.methods.reline.config import RelineConfig
from jgtest.report.level_maps import level_map
from jgtest.rewards import SLOW_FRAME_REWARD

#: 4 stacked grayscale frames of 60 × 80 (height, width): half the engine's screen each way.
PIPELINE = ObservationPipeline(size=(60, 80), num_frames=4)
#: Steps of an episode: 90 s of game time (the paper's kart episode, §4.1.3) at 35 tics a second, 4
#: a step; ``--quick``: the quick kart's 225.
EPISODE_STEPS = {"full": 788, "quick": 225}
#: The screen the load test renders: a player's 640 × 480, where drawing is most of a step's time
#: (at the agents' 160 × 120 the game's logic is, and every place costs about the same).
RESOLUTION = "640x480"
#: What a first visit to a cell pays in ``r_g``.
NEW_CELL_REWARD = 1.0


class LevelRelineReward(real_game.HostRelineReward):
    """RELINE's reward on a level: ``r_g`` = the engine's reward + :data:`NEW_CELL_REWARD` a cell
    first entered in the episode (the engine reports no progress along a level, and first visits
    are the progress a player makes through the map), ``r_p`` = 10 a frame over ``t`` (the kart's
    value, §4.1.2, without its ``|centering| ≤ θ`` condition: a level's every walkable place is one
    a player goes), finished on reaching the exit (``info["level_finished"]``)."""

    def __init__(self, num_envs: int, num_cells: int, threshold_ms: float):
        super().__init__(num_envs, threshold_ms)
        self.visited = np.zeros((num_envs, num_cells), bool)

    def reset(self) -> None:
        super().reset()
        self.visited[:] = False

    def terms(self, game_reward, terminated, info):
        tel, fresh = info["telemetry"], info["autoreset"]
        self.visited[fresh] = False
        rows = np.arange(len(tel.cell))
        new = ~self.visited[rows, tel.cell]
        self.visited[rows, tel.cell] = True
        r_g = np.asarray(game_reward, np.float32) + NEW_CELL_REWARD * new
        r_p = np.where(tel.frame_time_ms > self.threshold_ms, SLOW_FRAME_REWARD, 0.0)
        return r_g, r_p, terminated & info.get("level_finished", np.zeros_like(terminated))


class PositionTerms(real_game.GameTerms):
    """What RELINE reads of any bridged game with a position and frame times (a Gymnasium game whose
    telemetry gives the position): the level's reward; the calibration cut where the game's stuck
    oracle first fires, if it has one; a point's place is the mean position of the visits to its
    cell the evaluations saw; the replay check replays rl-baseline's longest evaluation episode."""

    pipeline = PIPELINE

    def __init__(self, config: RelineConfig, game):
        super().__init__(config, game)
        self._position_sum = np.zeros((game.num_cells, 2))
        self._visits = np.zeros(game.num_cells)

    def reward(self, threshold_ms):
        return LevelRelineReward(self.game.num_envs, self.game.num_cells, threshold_ms)

    def calibration_steps(self, out):
        if "stuck" not in self.game.bug_kinds:
            return out["valid"]
        stuck = out["telemetry"].bugs_fired[..., self.game.bug_kinds.index("stuck")]
        return out["valid"] & (np.cumsum(stuck, axis=-1) == 0)

    def observe(self, out):
        cells, valid = out["telemetry"].cell[out["valid"]], out["valid"]
        np.add.at(self._position_sum, cells, out["telemetry"].position[valid])
        np.add.at(self._visits, cells, 1)

    def coordinates(self, cells):
        cells = np.asarray(cells)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = self._position_sum[cells] / self._visits[cells, None]
        return {"x": mean[:, 0], "y": mean[:, 1]}

    def describe(self, where):
        return f"x {where['x']:.1f}, y {where['y']:.1f} (the mean position of the cell's visits)"

    def replay_episode(self, out):
        return int(np.argmax(out["valid"].sum(axis=1))), False

    def sections(self, values):
        order = list(
            dict.fromkeys(int(c) for c in values[0])
        )  # the cells in the order the first replay entered them
        index = {c: i for i, c in enumerate(order)}
        section = np.vectorize(lambda c: index.get(int(c), -1))(values)
        return (
            section,
            np.arange(len(order), dtype=float),
            "area (the episode's cells, in the order it entered them)",
        )

    def plot_points(self, points, path: Path, outs) -> Path:
        found = {
            a: (
                np.array([(p["x"], p["y"]) for p in ps]).reshape(-1, 2),
                np.array([p["confidence"] for p in ps]),
            )
            for a, ps in points.items()
        }
        traces = {a: out["telemetry"].position[out["valid"]] for a, out in outs.items()}
        return level_map(
            getattr(self.game, "walls", ()),
            path,
            points=found,
            traces=traces,
            title=f"{self.config.game}: low-FPS points over the evaluation's traces",
        )


class LevelTerms(PositionTerms):
    """What RELINE reads of a level; the game is a :class:`envs_bridge.vizdoom.VizDoomEnv`: a
    point's place is its cell's centre on the level's map, and the replay check prefers an episode
    that reached the exit (the engine is deterministic given its seed and actions); its sections are
    the cells the episode passed through, in the order it first entered them."""

    info_keys = ("level_finished",)

    def coordinates(self, cells):
        rows, cols = np.divmod(np.asarray(cells), self.game.map_shape[1])
        size = self.game.cell_size
        return {
            "x": self.game.bounds[0] + (cols + 0.5) * size,
            "y": self.game.bounds[1] + (rows + 0.5) * size,
        }

    def describe(self, where):
        return f"x {where['x']:.0f}, y {where['y']:.0f} (the {self.game.cell_size}-unit cell there)"

    def replay_episode(self, out):
        finished = np.flatnonzero((out["level_finished"] & out["valid"]).any(axis=1))
        return (int(finished[0]), True) if finished.size else super().replay_episode(out)

    def extra(self):
        game = self.game
        return {
            "level": {
                "bounds": [float(b) for b in game.bounds],
                "cell_size": game.cell_size,
                "map_shape": list(game.map_shape),
                "walkable_cells": int(game.walkable.sum()),
            }
        }


def episode_options(config: RelineConfig) -> dict:
    """A level's episode length (:data:`EPISODE_STEPS`) and :data:`RESOLUTION`, unless the run gives
    its own."""
    if not config.game.startswith("vizdoom:"):
        return {}
    given = dict(config.game_kwargs)
    options = {
        "max_steps_in_episode": EPISODE_STEPS["quick" if config.quick else "full"],
        "resolution": RESOLUTION,
    }
    return {k: v for k, v in options.items() if k not in given}


def run_level(
    config: RelineConfig, out_dir: str | Path, progress=None, resume: bool = False
) -> dict:
    """Runs the campaign (:func:`jgtest.methods.reline.real_game.run_real_game` with
    :class:`LevelTerms` on a level, :class:`PositionTerms` on a Gymnasium game)."""
    terms = LevelTerms if config.game.startswith("vizdoom:") else PositionTerms
    return real_game.run_real_game(
        config, terms, out_dir, progress, resume, game_options=episode_options(config)
    )
