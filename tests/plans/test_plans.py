"""Explicit plans on the Dungeon: the article's three-step plan and its Video 1 regression, rules
that pre-empt, validations bound to events and delays, plans as JSON with clear errors, and the
CLI."""

import json
from operator import itemgetter
from pathlib import Path

import jax
import numpy as np
import pytest

import jgtest
from jgtest.errors import BadFile
from jgtest.plans import dungeon as game
from jgtest.plans.agent import run_plans
from jgtest.plans.compiled import stack_plans
from jgtest.plans.model import PlanError, load_plan, parse_plan
from jgtest.plans.record import keyboard_actions, parse_actions, record_plan
from jgtest.plans.report import run_report

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans" / "dungeon"
PLANS = [
    load_plan(EXAMPLES / name)
    for name in ("complete_level.json", "attack_enemies.json", "collect_and_teleport.json")
]
SEEDS = 3


@pytest.fixture(scope="module")
def recorded():
    """The example play session, recorded as a plan (run with the others, as the fourth plan)."""
    env, params = jgtest.make("Dungeon-v0")
    actions = parse_actions(
        (EXAMPLES / "session.actions").read_text().splitlines(), env.action_names
    )
    return record_plan(env, params, actions)


def _run(variant: str, plans: list):
    env, params = jgtest.make("Dungeon-v0", variant=variant)
    agent, trace = run_plans(
        env, game, params, stack_plans(plans, env), jax.vmap(jax.random.key)(np.arange(SEEDS))
    )
    agent, trace = jax.device_get((agent, trace))
    reports = [
        [run_report(plan, jax.tree.map(itemgetter((p, s)), agent), env, s) for s in range(SEEDS)]
        for p, plan in enumerate(plans)
    ]
    return agent, trace, reports


@pytest.fixture(scope="module")
def runs(recorded):
    """The example plans and the recorded one (index 3) under each variant, one jitted call a
    variant."""
    return {
        variant: _run(variant, [*PLANS, recorded])
        for variant in ("normal", "switch_out_of_reach", "door_stuck")
    }


def test_the_three_step_plan_passes_and_the_switch_out_of_reach_fails_it(runs):
    _, _, normal = runs["normal"]
    assert all(r["passed"] and r["nodes_done"] == 3 for r in normal[0])
    assert [v["status"] for v in normal[0][0]["validations"]] == ["passed"] * 3
    _, _, out_of_reach = runs["switch_out_of_reach"]
    for report in out_of_reach[0]:  # the article's Video 1: the switch moved too high to reach
        assert not report["passed"] and report["outcome"] == "validation failed"
        assert report["failure"].startswith(
            "node 0: interact switch #0: expected door_open +1 after switch_toggled"
        )
        assert "observed +0 (timeout" in report["failure"]
    # the switch toggles, the door does not open: a wrong post-state
    _, _, stuck = runs["door_stuck"]
    assert all("door_open" in r["failure"] and "wrong post-state" in r["failure"] for r in stuck[0])


def test_a_rule_pre_empts_the_nodes_and_its_kill_count_validation_passes(runs):
    agent, _, reports = runs["normal"]
    for s, report in enumerate(reports[1]):
        attacks = [v for v in report["validations"] if v["source"] == "rule 0"]
        assert (
            report["passed"]
            and attacks
            and all(
                v["action"] == "attack" and v["variable"] == "kills" and v["status"] == "passed"
                for v in attacks
            )
        )
        done = agent.node_done_at[1, s][: len(PLANS[1].nodes)]
        # the nodes resumed in order after the rule
        assert (done >= 0).all() and (np.diff(done) > 0).all()
        first_attack = min(v["step"] for v in attacks)
        assert done[0] < first_attack < done[2]  # pre-empted between the switch and the shrine


def test_waiting_location_and_teleport_nodes(runs):
    agent, trace, reports = runs["normal"]
    events = list(game.EVENTS)
    for s, report in enumerate(reports[2]):
        assert report["passed"], report["failure"]
        collected = np.flatnonzero(trace["events"][2, s][:, events.index("item_collected")])
        # waited 3 steps on it
        assert collected.size == 1 and agent.node_done_at[2, s, 0] >= collected[0] + 3
        hops = np.abs(np.diff(trace["pos"][2, s], axis=0)).sum(-1)
        assert hops.max() > 2  # teleported to the switch


def test_a_recorded_play_session_replays_as_a_plan_that_passes(runs, recorded):
    assert [(n.actor, n.action) for n in recorded.nodes if n.action] == [
        ("switch", "interact"),
        ("lava", "jump"),
        ("shrine", "interact"),
    ]
    # the cells kept every 5 steps between the actions
    assert sum(n.location is not None for n in recorded.nodes) == 2
    _, _, reports = runs["normal"]
    assert all(r["passed"] for r in reports[3])


def test_keyboard_keys_and_action_files():
    import io

    env, _ = jgtest.make("Dungeon-v0")
    keys = list(keyboard_actions(env, io.StringIO("ssExf .q dd")))
    # x ignored, q stops
    assert [env.action_names[a] for a in keys] == [
        "move_south",
        "move_south",
        "interact",
        "attack",
        "jump",
        "wait",
    ]
    with pytest.raises(ValueError, match="line 3: unknown action 'fly'"):
        parse_actions(["move_north", "# a comment", "fly"], env.action_names)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"nodes": []}, "nodes: an empty plan"),
        ({"nodes": [{"actor": "dragon"}]}, "nodes[0].actor: 'dragon' is not one of"),
        ({"nodes": [{"actor": "switch", "action": "fly"}]}, "nodes[0].action: 'fly' is not one of"),
        (
            {"nodes": [{"actor": "switch", "radius": -1}]},
            "nodes[0].radius: -1 is below the smallest tolerance radius, 0",
        ),
        (
            {"nodes": [{"actor": "switch", "location": [1, 1]}]},
            "nodes[0]: a node targets either an actor or a location",
        ),
        (
            {"rules": [{"preconditions": [], "action": "attack"}]},
            "rules[0].preconditions: a rule without preconditions",
        ),
        ({"game": "Tetris-v0"}, "game: plans run on Dungeon-v0"),
    ],
)
def test_bad_plans_get_clear_errors(change, message):
    plan = {"game": "Dungeon-v0", "nodes": [{"actor": "switch", "action": "interact"}], **change}
    with pytest.raises(PlanError) as error:
        parse_plan(plan)
    assert message in str(error.value)


def test_plans_round_trip_through_json_and_bind_to_the_level(tmp_path, recorded):
    for plan in [*PLANS, recorded]:
        path = tmp_path / "plan.json"
        path.write_text(plan.to_json())
        assert load_plan(path) == plan
    env, _ = jgtest.make("Dungeon-v0")
    with pytest.raises(
        PlanError,
        match=r"nodes\[0\].instance: the level has 1 shrine actor\(s\), not an instance 2",
    ):
        stack_plans(
            [parse_plan({"game": "Dungeon-v0", "nodes": [{"actor": "shrine", "instance": 2}]})], env
        )
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(BadFile, match="broken.json: not JSON"):
        load_plan(tmp_path / "broken.json")


def test_plan_cli_exit_codes_and_report(tmp_path, capsys):
    from jgtest.cli import main

    plan = str(EXAMPLES / "complete_level.json")
    assert main(["plan", "run", plan, "--seeds", "2", "--out", str(tmp_path / "ok")]) == 0
    assert (
        main(
            [
                "plan",
                "run",
                plan,
                "--seeds",
                "2",
                "--variant",
                "switch_out_of_reach",
                "--out",
                str(tmp_path / "bad"),
            ]
        )
        == 1
    )
    report = json.loads((tmp_path / "bad" / "report.json").read_text())
    runs = report["plans"][plan]
    assert len(runs) == 2 and not runs[0]["passed"] and "interact switch" in runs[0]["failure"]
    assert "FAILED" in capsys.readouterr().out
    (tmp_path / "empty.json").write_text(json.dumps({"game": "Dungeon-v0", "nodes": []}))
    assert main(["plan", "run", str(tmp_path / "empty.json")]) == 2
    assert (
        capsys.readouterr().err
        == f"error: {tmp_path / 'empty.json'}: nodes: an empty plan: it needs at least one node\n"
    )


def test_the_scripted_navigator_completes_the_plan_on_random_levels():
    env, params = jgtest.make("Dungeon-v0", variant="random_layout")
    agent, _ = run_plans(
        env, game, params, stack_plans(PLANS[:1], env), jax.vmap(jax.random.key)(np.arange(32))
    )
    outcomes = np.asarray(agent.outcome[0])
    # the learned navigator's reference
    assert (outcomes == 1).mean() >= 0.9, np.bincount(outcomes, minlength=6)
