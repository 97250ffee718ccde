"""Explicit plans on a real Doom level (Freedoom's E1M1 through ViZDoom): the level's vocabulary
from its WAD, and the example plans run on the real engine: one that passes, one that fails naming
its node, its door and the validation that timed out, and a switch whose tagged lift moves."""

import json
from pathlib import Path

import pytest

pytest.importorskip("vizdoom")

from jgtest.cli import main  # noqa: E402
from jgtest.plans.doom import actor_name, plans_of  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans" / "freedoom"


def test_the_levels_things_are_the_plan_vocabulary_nearest_first():
    vocabulary = plans_of("freedoom1/E1M1")
    assert {"door", "blue door", "exit", "shotgun", "blue card", "switch"} <= set(
        vocabulary.ACTOR_TYPES
    )
    doors = vocabulary.targets["door"]
    assert doors[0].sector == 10  # the door nearest the start: the first on the way out
    assert (
        vocabulary.targets["blue door"][0].key == "blue"
        and vocabulary.targets["blue card"][0].key == "blue"
    )
    # placed at skills 1-2: the level's skill 2
    assert vocabulary.targets["shotgun"][0].faces == ((816, 624),)
    assert vocabulary.targets["exit"][0].used  # E1M1 ends at a switch (special 11)
    assert (
        actor_name("BlueCard") == "blue card"
        and actor_name("BFG9000") == "bfg 9000"
        and actor_name("Shotgun") == "shotgun"
    )


def test_the_example_plans_pass_and_fail_on_the_real_engine(tmp_path, capsys):
    assert (
        main(
            [
                "plan",
                "suite",
                str(EXAMPLES),
                "--out",
                str(tmp_path),
                "--junit",
                str(tmp_path / "plans.xml"),
            ]
        )
        == 1
    )
    reports = json.loads((tmp_path / "report.json").read_text())
    # a level's defaults
    assert (reports["game"], reports["seeds"], reports["max_steps"]) == (
        "vizdoom:freedoom1/E1M1",
        1,
        2000,
    )
    (passing,) = reports["plans"][str(EXAMPLES / "e1m1_door_shotgun_exit.json")]
    assert passing["passed"] and passing["nodes_done"] == 3 and passing["steps"] < 2000
    door, shotgun, exit_ = passing["validations"]
    assert (door["variable"], door["observed_change"], door["status"]) == (
        "sector 10 ceiling",
        56.0,
        "passed",
    )
    assert (shotgun["variable"], shotgun["observed_change"], shotgun["status"]) == (
        "Shotgun at (816, 624)",
        -1.0,
        "passed",
    )
    assert (exit_["variable"], exit_["observed_change"], exit_["status"]) == (
        "level finished",
        1.0,
        "passed",
    )
    (failing,) = reports["plans"][str(EXAMPLES / "e1m1_blue_door_without_key.json")]
    assert (
        not failing["passed"]
        and failing["outcome"] == "validation failed"
        and failing["nodes_done"] == 2
    )
    assert failing["failure"] == (
        "node 2: use blue door #0: expected sector 71 ceiling +56 after use within 60 steps; "
        "observed +0 (timeout: the event never came)"
    )
    (switch,) = reports["plans"][str(EXAMPLES / "e1m1_lift_switch.json")]
    assert switch["passed"] and [
        (v["variable"], v["observed_change"]) for v in switch["validations"]
    ] == [("sectors tagged 1 moved", 1.0)]
    assert "1/1" in capsys.readouterr().out
    assert 'failures="1"' in (tmp_path / "plans.xml").read_text()


def test_a_thing_already_taken_is_not_picked_up_again():
    from jgtest.plans.doom import run_plan
    from jgtest.plans.model import parse_plan

    nodes = [{"actor": "door", "action": "use"}, {"actor": "shotgun"}, {"actor": "shotgun"}]
    report = run_plan(parse_plan({"game": "vizdoom:freedoom1/E1M1", "nodes": nodes}), seed=0)
    assert [v["status"] for v in report["validations"]] == ["passed", "passed", "timeout"]
    assert report["failure"] == (
        "node 2: go to shotgun #0: expected Shotgun at (816, 624) -1 after reaching it within 30 "
        "steps; "
        "observed +0 (timeout: the event never came)"
    )
