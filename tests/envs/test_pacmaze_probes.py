"""PacMaze's probe table (:mod:`jgtest.methods.reline.pacmaze_probes`): the twin beside the real
Ms. Pac-Man and the paper's random row, from the committed results and measured again here."""

import importlib.util
import json
from pathlib import Path

import pytest

import jgtest
from jgtest.methods.reline import pacmaze_probes as probes

ROOT = Path(__file__).resolve().parents[2]
TABLE = json.loads((ROOT / "benchmarks/results/pacmaze_probes.json").read_text())
ENV, PARAMS = jgtest.make("PacMaze-v0")


def within(twin: float, real: float, share: float) -> bool:
    return abs(twin - real) <= share * real


def test_the_committed_probe_table_holds():
    twin, real = TABLE["twin"], TABLE["real"]
    # the routes and the random player's life: the twin within 20% of the real game
    for name, steps in real["route_steps"].items():
        assert within(twin["route_steps"][name], steps, 0.2), name
    assert within(twin["random"]["steps_per_life"], real["random"]["steps_per_life"], 0.2)
    # the speeds: the twin's are the real game's, to a hundredth of a cell a step
    for who, speeds in real["cells_per_moving_step"].items():
        assert twin["cells_per_moving_step"][who] == pytest.approx(speeds, abs=0.01), who
    # the ghost-blind gate walker's round: the same share of episodes reach n gates on both
    for twin_n, real_n in zip(
        twin["walker_round"]["gates_at_least_n_per_1000"],
        real["walker_round"]["gates_at_least_n_per_1000"],
    ):
        assert within(twin_n, real_n, 0.2)
    # the random player finds the gates as the paper's does, within ±50% (10,000 episodes)
    assert twin["random"]["episodes"] >= 10_000
    for found, paper in zip(twin["random"]["gates_at_least_n_per_1000"], probes.PAPER_RANDOM_GATES):
        assert 0.5 * paper <= found <= 1.5 * paper, (found, paper)


def test_the_twin_side_is_the_committed_one():
    # The routes and speeds exactly; the random player on a smaller sample (1,000 episodes).
    walk = probes.twin_walk(ENV, PARAMS, probes.GateWalker(PARAMS))
    committed = TABLE["twin"]["route_steps"]
    assert walk == [
        committed["start_to_first_gate"],
        committed["start_to_first_gate"] + committed["between_mouths_of_a_side"],
    ]
    random = probes.twin_random(ENV, PARAMS, 1000, seed=1)
    assert within(random["steps_per_life"], TABLE["twin"]["random"]["steps_per_life"], 0.05)
    assert within(random["steps_per_life"], TABLE["real"]["random"]["steps_per_life"], 0.2)
    at_least_1, at_least_2 = random["gates_at_least_n_per_1000"][:2]
    assert 12 <= at_least_1 <= 36 and 8.5 <= at_least_2 <= at_least_1  # paper: 24 and 17


@pytest.mark.skipif(importlib.util.find_spec("envpool") is None, reason="needs the bridges extra")
def test_the_real_walk_is_the_committed_one():
    # The real game without sticky actions replays exactly: the walker's route is the same.
    from envs_bridge.ale import MsPacmanEnv

    with MsPacmanEnv(num_envs=1, seed=0) as env:
        walk = probes.real_walk(probes.GateWalker(PARAMS), env)
    committed = TABLE["real"]["route_steps"]
    assert walk[0] == committed["start_to_first_gate"]
    assert walk[1] - walk[0] == committed["between_mouths_of_a_side"]
