"""The kart twin's render field against the package's frame-time logs: the probe table of
:mod:`jgtest.methods.reline.kart_probes` (``benchmarks/kart_probes.py`` runs it at 300 episodes)."""

import json
from pathlib import Path

import numpy as np
import pytest

import jgtest
from jgtest.methods.reline import RelineConfig
from jgtest.methods.reline.kart_probes import driver_action, probe_table

LOGS = json.loads(
    (Path(__file__).parents[3] / "benchmarks/results/reline_kart_package_logs.json").read_text()
)


@pytest.fixture(scope="module")
def table():
    _, params = jgtest.make("KartTrack-v0")
    config = RelineConfig(game="KartTrack-v0")
    return probe_table(
        params, config.train_load_offset_ms, config.train_load_scale, episodes=60, seed=1
    )


def test_t_by_relines_rule_lands_on_the_packages(table):
    # the package: calibration laps 12.76 ± 0.45 ms, t_b = mean + 5 sd = 15.03, t = 18.36
    calibration = LOGS["logs"]["calibration"]["frame_ms"]
    assert table["calibration"]["frame_ms"]["mean"] == pytest.approx(calibration["mean"], abs=0.3)
    assert table["calibration"]["frame_ms"]["sd"] == pytest.approx(calibration["sd"], rel=0.25)
    assert table["t_b_ms"] == pytest.approx(15.03, abs=0.5)
    assert table["t_ms"] == pytest.approx(LOGS["package_threshold_ms"], abs=0.5)
    assert table["calibration"]["share_above_t"] == 0.0


def test_the_random_karts_slow_steps_match_the_packages_within_a_factor_of_1_5(table):
    package = LOGS["logs"]["random"]["share_above_package_t"]  # 0.385
    assert package / 1.5 <= table["random"]["share_above_t"] <= 1.5 * package
    # it drifts slower along its episodes, as the package's (18.0 → 19.3 ms by tenth)
    tenths = table["random"]["mean_by_tenth_of_episode"]
    assert tenths[-1] > tenths[0] + 1.0
    # a kart driving down the road under the same load is rarely slow (rl-baseline: 4.5%)
    assert table["driver"]["share_above_t"] < 0.02
    assert table["driver"]["steps_per_episode"] < 200  # it finishes its laps


def test_the_driver_steers_back_to_the_centreline():
    obs = np.zeros(14, np.float32)
    obs[3] = 0.5  # right of the centreline: throttle + left
    assert int(driver_action(obs)) == 3
    obs[3] = -0.5
    assert int(driver_action(obs)) == 4
    assert int(driver_action(np.zeros(14, np.float32))) == 1
