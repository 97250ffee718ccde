"""Plans refuse what does not fit them in one line naming the place: integers out of their bounds (a
radius of 2**31 no longer wraps in int32), files that are missing, directories, not UTF-8 or not
JSON, a damaged navigator, and every ``jgtest plan`` command's user mistakes (exit 2, one ``error:``
line on stderr)."""

import dataclasses
import json
from pathlib import Path

import jax
import numpy as np
import pytest

import jgtest
from jgtest.cli import main
from jgtest.errors import BadFile, BadInput
from jgtest.plans import dungeon as game
from jgtest.plans.agent import OUTCOMES, RunSettings, run_plans
from jgtest.plans.compiled import compile_plan, stack_plans
from jgtest.plans.model import PLAN_INT_MAX, PlanError, load_plan, parse_plan
from jgtest.plans.navigation import NavigatorConfig, load_navigator

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans" / "dungeon"
BIG = 2**31


def _plan(node=None, rule=None) -> dict:
    """A one-node plan (``node`` replacing its node), with ``rule`` as its only rule when given."""
    return {
        "game": "Dungeon-v0",
        "nodes": [node or {"actor": "switch", "action": "interact"}],
        **({"rules": [rule]} if rule else {}),
    }


def _rule(**precondition) -> dict:
    return {"preconditions": [{"actor_near": "enemy", **precondition}], "action": "attack"}


@pytest.mark.parametrize(
    "plan, message",
    [
        (
            _plan({"actor": "switch", "radius": BIG}),
            f"nodes[0].radius: {BIG} is above the largest tolerance radius, 32768",
        ),
        (
            _plan({"location": [1, 1], "wait": BIG}),
            f"nodes[0].wait: {BIG} is above the largest wait, 32768",
        ),
        (
            _plan({"actor": "shrine", "instance": BIG}),
            f"nodes[0].instance: {BIG} is above the largest actor instance, 32768",
        ),
        (
            _plan({"location": [1, BIG]}),
            f"nodes[0].location[1]: {BIG} is above the largest map coordinate, 32768",
        ),
        (
            _plan(rule=_rule(distance=BIG)),
            f"rules[0].preconditions[0].distance: {BIG} is above the largest precondition "
            "distance, 32768",
        ),
        (
            _plan(rule={**_rule(), "priority": -BIG}),
            f"rules[0].priority: {-BIG} is below the smallest priority, -32768",
        ),
        (
            _plan(
                rule={
                    "preconditions": [{"actor_near": "enemy"}, {"health_below": BIG}],
                    "action": "attack",
                }
            ),
            f"rules[0].preconditions[1].health_below: {BIG} is above the largest health threshold, "
            "32768",
        ),
        (
            _plan(
                rule={
                    "preconditions": [{"actor_near": "enemy", "health_below": 2}],
                    "action": "attack",
                }
            ),
            "rules[0].preconditions[0]: a precondition is either actor_near or health_below "
            "(exactly one of them)",
        ),
    ],
)
def test_integers_above_their_bounds_are_refused_naming_the_field(plan, message):
    with pytest.raises(PlanError) as error:
        parse_plan(plan)
    assert str(error.value) == message
    assert isinstance(error.value, BadInput)


def test_the_largest_integers_fit_the_compiled_plan_and_the_largest_radius_is_reached_at_once():
    env, params = jgtest.make("Dungeon-v0")
    largest = parse_plan(
        _plan(
            {"location": [1, 1], "radius": PLAN_INT_MAX, "wait": PLAN_INT_MAX},
            {**_rule(distance=PLAN_INT_MAX), "priority": -PLAN_INT_MAX},
        )
    )
    compiled = compile_plan(largest, env)
    assert (
        compiled.node_radius.dtype == np.int32
        and int(compiled.node_radius[0]) == int(compiled.node_wait[0]) == PLAN_INT_MAX
    )
    assert (
        int(compiled.rule_value[0, 0]) == PLAN_INT_MAX
        and int(compiled.rule_priority[0]) == -PLAN_INT_MAX
    )
    # every cell is within the radius
    reached = parse_plan(_plan({"location": [1, 1], "radius": PLAN_INT_MAX}))
    agent, _ = run_plans(
        env,
        game,
        params,
        stack_plans([reached], env),
        jax.vmap(jax.random.key)(np.arange(1)),
        RunSettings(max_steps=5),
    )
    # not "unreachable"
    assert OUTCOMES[int(agent.outcome[0, 0])] == "passed" and int(agent.node_done_at[0, 0, 0]) == 0


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        ("a directory", "a directory, not a file"),
        (b'{"game": "Dungeon-v0", "name": "caf\xe9"}', "not UTF-8 text (byte 0xe9 at offset 35)"),
        (
            b"{not json",
            "not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char "
            "1))",
        ),
        (b"[" * 100_000, "not JSON (nested too deeply)"),
        (b"1" * 5000, "not JSON (Exceeds the limit (4300 digits) for integer string conversion"),
        (b"[]", "plan: a plan is a JSON object with a 'game'"),
    ],
)
def test_plan_files_that_cannot_be_read_are_refused_naming_the_path(tmp_path, content, message):
    path = tmp_path / "plan.json"
    if content == "a directory":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(BadFile if content != b"[]" else PlanError) as error:
        load_plan(path)
    assert str(error.value).startswith(f"{path}: {message}")


def test_a_byte_order_mark_and_integral_floats_are_accepted(tmp_path):
    path = tmp_path / "plan.json"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps(_plan({"actor": "shrine", "instance": 0.0, "radius": 2.0})).encode()
    )
    node = load_plan(path).nodes[0]
    assert node.instance == 0 and node.radius == 2 and isinstance(node.radius, int)


def test_a_damaged_navigator_folder_is_refused_naming_the_file(tmp_path):
    (tmp_path / "navigator.msgpack").write_bytes(b"not msgpack")
    with pytest.raises(BadFile, match=f"^{tmp_path}/navigator.json: no such file$"):
        load_navigator(tmp_path)
    (tmp_path / "navigator.json").write_text("[1]")
    with pytest.raises(
        BadFile,
        match=r"navigator.json: not a saved navigator \(its config is missing or has other "
        r"fields\)$",
    ):
        load_navigator(tmp_path)
    (tmp_path / "navigator.json").write_text(
        json.dumps({"config": dataclasses.asdict(NavigatorConfig(hidden_sizes=(16,)))})
    )
    with pytest.raises(
        BadFile,
        match=r"navigator.msgpack: not the parameters of the navigator in navigator.json "
        r"\(unpack\(b\) received extra data.\)$",
    ):
        load_navigator(tmp_path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A folder of bad inputs to the plan commands."""
    where = tmp_path_factory.mktemp("bad")
    (where / "broken.json").write_text("{not json")
    (where / "latin1.json").write_bytes(b'{"name": "caf\xe9"}')
    (where / "big_radius.json").write_text(json.dumps(_plan({"actor": "switch", "radius": BIG})))
    (where / "big_wait.json").write_text(json.dumps(_plan({"location": [1, 1], "wait": BIG})))
    doom = lambda *nodes, **more: json.dumps(
        {"game": "vizdoom:freedoom1/E1M1", "nodes": list(nodes), **more}
    )
    (where / "doom_rule.json").write_text(
        doom(
            {"actor": "door"}, rules=[{"preconditions": [{"actor_near": "door"}], "action": "use"}]
        )
    )
    (where / "doom_fifth_shotgun.json").write_text(
        doom({"actor": "door", "action": "use"}, {"actor": "shotgun", "instance": 4})
    )
    (where / "doom_use_shotgun.json").write_text(doom({"actor": "shotgun", "action": "use"}))
    (where / "doom_location.json").write_text(doom({"location": [1, 1]}))
    (where / "doom_no_map.json").write_text(
        json.dumps({"game": "vizdoom:freedoom1/E9M9", "nodes": [{"actor": "door"}]})
    )
    (where / "plan.json").mkdir()
    (where / "empty").mkdir()
    (where / "a_file").write_text("fly\n")
    return where


#: ``jgtest plan`` argv (``{d}``: the folder of bad inputs, ``{ex}``: the example plans) and the one
#: line each prints.
BAD_INVOCATIONS = [
    (["run", "{d}/missing.json"], "{d}/missing.json: no such file"),
    (["run", "{d}/plan.json"], "{d}/plan.json: a directory, not a file"),
    (
        ["run", "{d}/broken.json"],
        "{d}/broken.json: not JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1))",
    ),
    (["run", "{d}/latin1.json"], "{d}/latin1.json: not UTF-8 text (byte 0xe9 at offset 13)"),
    (
        ["run", "{d}/big_radius.json"],
        f"{{d}}/big_radius.json: nodes[0].radius: {BIG} is above the largest tolerance radius, "
        "32768",
    ),
    (
        ["run", "{d}/big_wait.json"],
        f"{{d}}/big_wait.json: nodes[0].wait: {BIG} is above the largest wait, 32768",
    ),
    (["run", "{ex}/complete_level.json", "--seeds", "0"], "--seeds must be at least 1, got 0"),
    (
        ["run", "{ex}/complete_level.json", "--max-steps", "0"],
        "--max-steps must be at least 1, got 0",
    ),
    (
        ["run", "{ex}/complete_level.json", "--game", "CartPoleBugs-v0"],
        "{ex}/complete_level.json: the plan is for Dungeon-v0, not --game CartPoleBugs-v0",
    ),
    (
        ["run", "{ex}/complete_level.json", "--out", "{d}/a_file"],
        "{d}/a_file: a file, not a folder",
    ),
    (
        [
            "run",
            "{ex}/complete_level.json",
            "--navigator",
            "learned",
            "--navigator-from",
            "{d}/empty",
        ],
        "{d}/empty: no trained navigator (train one: `jgtest plan train-navigator --out "
        "{d}/empty`)",
    ),
    (["run", "{d}/doom_rule.json"], "{d}/doom_rule.json: rules: this game's plans take no rules"),
    (
        ["run", "{d}/doom_fifth_shotgun.json"],
        "{d}/doom_fifth_shotgun.json: nodes[1].instance: freedoom1/E1M1 has 2 shotgun(s), "
        "instances 0–1; got 4",
    ),
    (
        ["run", "{d}/doom_use_shotgun.json"],
        "{d}/doom_use_shotgun.json: nodes[0].action: a shotgun is picked up by walking onto it: no "
        "action",
    ),
    (
        ["run", "{d}/doom_location.json"],
        "{d}/doom_location.json: nodes[0]: a node targets one of the game's things (an actor); "
        "this game's plans take no locations",
    ),
    (
        ["run", "{d}/doom_no_map.json"],
        "{d}/doom_no_map.json: game: freedoom1.wad has no map E9M9; maps: "
        + ", ".join(f"E{e}M{m}" for e in range(1, 5) for m in range(1, 10)),
    ),
    (
        ["run", "{ex}/../freedoom/e1m1_door_shotgun_exit.json", "--game", "Dungeon-v0"],
        "{ex}/../freedoom/e1m1_door_shotgun_exit.json: the plan is for vizdoom:freedoom1/E1M1, not "
        "--game Dungeon-v0",
    ),
    (
        ["run", "{ex}/../freedoom/e1m1_door_shotgun_exit.json", "--variant", "door_stuck"],
        "--variant door_stuck: a ViZDoom level has no variants (normal only)",
    ),
    (["suite", "{d}/nowhere"], "{d}/nowhere: no such folder"),
    (["suite", "{d}/a_file"], "{d}/a_file: not a folder"),
    (["suite", "{d}/empty"], "{d}/empty: no *.json plans"),
    (["from-text", "{d}/missing.txt", "-o", "{d}/out.json"], "{d}/missing.txt: no such file"),
    (
        ["from-text", "{d}/latin1.json", "-o", "{d}/out.json"],
        "{d}/latin1.json: not UTF-8 text (byte 0xe9 at offset 13)",
    ),
    (
        [
            "from-text",
            "{d}/a_file",
            "--game",
            "vizdoom:freedoom1/E1M1",
            "--reader",
            "lexicon",
            "-o",
            "{d}/out.json",
        ],
        "--game vizdoom:freedoom1/E1M1: the lexicon reader has words for Dungeon-v0 only; read it "
        "by meaning (--reader combined)",
    ),
    (
        ["from-text", "{d}/a_file", "--game", "CartPoleBugs-v0", "-o", "{d}/out.json"],
        "game: plans run on Dungeon-v0 and ViZDoom's levels (vizdoom:freedoom1/E1M1 …), got "
        "'CartPoleBugs-v0'",
    ),
    (
        ["record", "--actions", "{d}/missing.actions", "-o", "{d}/out.json"],
        "{d}/missing.actions: no such file",
    ),
    (
        ["record", "--actions", "{d}/a_file", "-o", "{d}/out.json"],
        "{d}/a_file: line 1: unknown action 'fly' (one of move_north, move_south, move_east, "
        "move_west, interact, attack, jump, wait, or its index)",
    ),
    (
        ["record", "--actions", "{ex}/session.actions", "--every", "0", "-o", "{d}/out.json"],
        "--every must be at least 1, got 0",
    ),
    (
        ["record", "--actions", "{ex}/session.actions", "-o", "{d}/nowhere/out.json"],
        "{d}/nowhere/out.json: cannot write it (No such file or directory)",
    ),
    (
        ["train-navigator", "--steps", "10"],
        "--steps must be at least 40,960 (ten updates of 64 games x 64 steps), got 10",
    ),
    (["train-navigator", "--out", "{d}/a_file"], "{d}/a_file: a file, not a folder"),
]


@pytest.mark.parametrize(
    "argv, message", BAD_INVOCATIONS, ids=[" ".join(argv[:2]) for argv, _ in BAD_INVOCATIONS]
)
def test_bad_plan_invocations_exit_2_with_one_error_line(files, argv, message, capsys):
    fill = lambda text: text.format(d=files, ex=EXAMPLES)
    assert main(["plan", *map(fill, argv)]) == 2
    assert capsys.readouterr().err == f"error: {fill(message)}\n"
