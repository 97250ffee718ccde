"""RELINE on the real SuperTuxKart (pystk2 through the host loop; Tufano et al., 2022, §4).

:func:`run_supertuxkart`: the phases of :mod:`jgtest.methods.reline.real_game` on one race in
this process (:mod:`envs_bridge.supertuxkart`) with the kart's terms (:class:`KartTerms`): the
reward of §4.1.2, the calibration cut where the kart got stuck (§4.1.3, footnote 2), the replay
check by :data:`SECTIONS` stretches of the lap.

* chosen: frames at the bridge's render size, 96 × 128 (:data:`PIPELINE`; the paper: 200 × 150).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jgtest.envs.wrappers import ObservationPipeline
from jgtest.methods.reline import real_game
from jgtest.methods.reline.analysis import track_points_plot
from jgtest.methods.reline.config import PAPER_KART, RelineConfig
from jgtest.oracles.kart_stuck import until_stuck
from jgtest.rewards import kart_performance_reward, kart_progress_reward, kart_stalled_steps

#: 4 stacked grayscale frames at the bridge's render size (height, width).
PIPELINE = ObservationPipeline(size=(96, 128), num_frames=4)
#: Sections of the lap in the replay check.
SECTIONS = 20


class KartRelineReward(real_game.HostRelineReward):
    """RELINE's kart reward over a host game's steps (§4.1.2), as ``RelineReward(env, "kart")`` on
    device.

    ``r_g`` = :func:`jgtest.rewards.kart_progress_reward` and ``r_p`` =
    :func:`jgtest.rewards.kart_performance_reward` (10 when the step's render time exceeds
    ``threshold_ms`` within ``θ`` of the centre line, only while the kart advances: the
    package's rule, :func:`jgtest.rewards.kart_stalled_steps`); the lap is finished on
    ``terminated``.
    """

    def __init__(self, num_envs: int, threshold_ms: float, theta: float, progress_cap: float):
        super().__init__(num_envs, threshold_ms)
        self.theta, self.progress_cap = float(theta), float(progress_cap)
        self.stalled = np.zeros(num_envs, np.int32)

    def reset(self) -> None:
        super().reset()
        self.stalled[:] = 0

    def terms(self, game_reward, terminated, info):
        centering = info["centering"]
        r_g = kart_progress_reward(
            centering, info["delta_path_done"], self.theta, self.progress_cap
        )
        stalled = kart_stalled_steps(self.stalled, centering, info["delta_path_done"], self.theta)
        self.stalled = np.where(info["autoreset"], 0, np.asarray(stalled)).astype(np.int32)
        r_p = kart_performance_reward(
            centering,
            info["telemetry"].frame_time_ms,
            self.threshold_ms,
            self.theta,
            stalled=stalled,
        )
        return r_g, r_p, terminated


def cell_centres(game, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(path_done, centering)`` at the centre of each of the bridge's cells."""
    n_path, n_cent = game.map_shape
    rows, cols = np.divmod(np.asarray(cells), n_cent)
    span = game.centering_span
    return (rows + 0.5) * game.track_length / n_path, -span + (cols + 0.5) * 2 * span / n_cent


class KartTerms(real_game.GameTerms):
    """What RELINE reads of the real kart's race: the reward of §4.1.2 (:class:`KartRelineReward`),
    the calibration cut where the kart got stuck (:func:`jgtest.oracles.kart_stuck.until_stuck`),
    and the replay check on an rl-baseline evaluation episode that completed the lap (else its
    longest) by :data:`SECTIONS` stretches of ``path_done``: the race is deterministic, so a
    restart with the same seed and actions drives the same lap. The cells are the bridge's: 200
    buckets of ``path_done`` along the lap × 24 of ``centering`` over ``±1.5 θ``; a point's
    coordinates are its cell's centre (:func:`cell_centres`)."""

    pipeline = PIPELINE
    info_keys = ("delta_path_done", "path_done")
    section_key = "path_done"
    paper = PAPER_KART

    def __init__(self, config: RelineConfig, game):
        super().__init__(config, game)
        if not hasattr(game, "track_length"):  # the race loads its track on its first reset
            game.reset(config.seed * 100_000 + 50_000)

    def reward(self, threshold_ms):
        return KartRelineReward(
            self.game.num_envs, threshold_ms, self.config.theta, self.config.progress_cap
        )

    def calibration_steps(self, out):
        return until_stuck(out["delta_path_done"], out["valid"])

    def coordinates(self, cells):
        path_done, centering = cell_centres(self.game, cells)
        return {"path_done": path_done, "centering": centering}

    def describe(self, where):
        return f"path_done {where['path_done']:.0f} m, centering {where['centering']:+.1f}"

    def replay_episode(self, out):
        laps = np.flatnonzero(
            out["valid"].sum(axis=1) < self.game.max_steps_in_episode
        )  # ended before the cap: the lap is done
        return (
            (int(laps[0]), True) if laps.size else (int(np.argmax(out["valid"].sum(axis=1))), False)
        )

    def sections(self, values):
        edges = np.linspace(0.0, self.game.track_length, SECTIONS + 1)
        section = np.clip(
            np.searchsorted(edges, np.mod(values, self.game.track_length), side="right") - 1,
            0,
            SECTIONS - 1,
        )
        return section, edges[:-1], "section start (path_done, m)"

    def plot_points(self, points, path: Path, outs) -> Path:
        return track_points_plot(
            self.config.theta, self.game.road_half_width, self.game.track_length
        )(points, path)


def run_supertuxkart(
    config: RelineConfig, out_dir: str | Path, progress=None, resume: bool = False
) -> dict:
    """Runs the campaign (:func:`jgtest.methods.reline.real_game.run_real_game` with
    :class:`KartTerms`)."""
    return real_game.run_real_game(config, KartTerms, out_dir, progress, resume)
