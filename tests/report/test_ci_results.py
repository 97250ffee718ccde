"""Results a CI server reads: JUnit XML that validates against the format's schema and parses with
junitparser, the documented exit codes, and ``jgtest verify`` telling fixed bugs from present
ones."""

from pathlib import Path

import pytest
import xmlschema
from junitparser import JUnitXml

from jgtest.cli import main
from jgtest.records import read_bug_records

SCHEMA = xmlschema.XMLSchema(Path(__file__).resolve().parents[1] / "data" / "junit.xsd")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plans" / "dungeon"
#: Block Maze's bugs as placed by default, bug 2 moved to a floor cell no short episode reaches: the
#: game with that bug fixed.
BUG_2_MOVED = "bug_pos=[[1,3],[1,13],[14,13],[5,5],[5,14],[7,8],[9,3],[11,7],[13,14],[14,1]]"
CAMPAIGN = ["run", "random", "--game", "BlockMaze-v0", "--envs", "16", "--steps", "200", "--quiet"]


def _cases(path) -> dict:
    SCHEMA.validate(str(path))
    return {case.name: case for suite in JUnitXml.fromfile(str(path)) for case in suite}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("ci")
    code = main(
        [
            *CAMPAIGN,
            "--out",
            str(out / "run"),
            "--junit",
            str(out / "run.xml"),
            "--fail-on-bugs",
            "--shrink",
        ]
    )
    return out, code


def test_a_campaign_that_found_bugs_fails_the_build_and_says_how_to_replay_each(campaign):
    out, code = campaign
    assert code == 1  # --fail-on-bugs
    records = read_bug_records(out / "run" / "bugs.jsonl")
    cases = _cases(out / "run.xml")
    # one test case per distinct bug, each with one failure: how Jenkins and GitLab list them
    assert len(cases) == len({r.bug_id for r in records}) > 1
    assert all(name.startswith("BlockMaze-v0 · logical · bug ") for name in cases)
    failures = [case.result[0] for case in cases.values()]
    assert all(len(case.result) == 1 for case in cases.values())
    assert all(f.text.startswith("jgtest replay ") and f.text.endswith("--min") for f in failures)
    index = int(failures[0].text.split("--index ")[1].split()[0])
    assert main(["replay", str(out / "run" / "bugs.jsonl"), "--index", str(index), "--min"]) == 0


def test_bugs_do_not_fail_the_build_unless_asked(tmp_path):
    assert main([*CAMPAIGN, "--out", str(tmp_path / "run")]) == 0


def test_verify_says_which_bug_the_change_fixed(campaign, capsys):
    out, _ = campaign
    records = read_bug_records(out / "run" / "bugs.jsonl")
    assert 2 in {r.bug_id for r in records}, "the campaign found bug 2"
    capsys.readouterr()
    code = main(
        ["verify", str(out / "run"), "--game-arg", BUG_2_MOVED, "--junit", str(out / "verify.xml")]
    )
    assert code == 1  # some are still present
    cases = _cases(out / "verify.xml")
    fixed = {name for name, case in cases.items() if not case.result}
    assert fixed and all(name.endswith("logical bug 2") for name in fixed)
    assert all(
        case.result[0].type == "still present" for name, case in cases.items() if name not in fixed
    )
    assert (
        f"{len(cases) - len(fixed)} still present, 0 changed, {len(fixed)} fixed"
        in capsys.readouterr().out
    )
    # the game unchanged: nothing fixed
    assert main(["verify", str(out / "run" / "bugs.jsonl")]) == 1


def test_plan_runs_in_junit_and_verified_against_a_build_with_one_bug_fixed(tmp_path, capsys):
    # A build with two bugs: the shrine out of reach (the level plans fail at their shrine node) and
    # enemies no attack kills (the attacking plan fails at its rule first). The fix of the shrine
    # leaves the other bug in.
    two_bugs = "shrine_out_of_reach+enemies_immortal"
    assert (
        main(
            [
                "plan",
                "suite",
                str(EXAMPLES),
                "--variant",
                two_bugs,
                "--seeds",
                "2",
                "--out",
                str(tmp_path),
                "--junit",
                str(tmp_path / "plans.xml"),
            ]
        )
        == 1
    )
    failing = {name: case for name, case in _cases(tmp_path / "plans.xml").items() if case.result}
    # the validations that failed
    assert sorted(failing) == [
        "node 2: interact shrine #3 (shrine_active)",
        "rule 0: attack enemy #4 (kills)",
    ]
    assert all(
        f.text.startswith("jgtest plan run ") and f"--variant {two_bugs}" in f.text
        for case in failing.values()
        for f in case.result
    )
    report = tmp_path / "report.json"
    capsys.readouterr()
    assert (
        main(
            [
                "verify",
                str(report),
                "--game-arg",
                'variant="enemies_immortal"',
                "--junit",
                str(tmp_path / "verify.xml"),
            ]
        )
        == 1
    )
    assert "2 still present, 0 changed, 2 fixed" in capsys.readouterr().out
    verdicts = {
        name.split(" seed")[0]: bool(case.result)
        for name, case in _cases(tmp_path / "verify.xml").items()
    }
    # the shrine's bug fixed, the attack's still there
    assert verdicts == {"attack_enemies.json": True, "complete_level.json": False}
    assert main(["verify", str(report), "--game-arg", 'variant="normal"']) == 0
    assert "0 still present, 0 changed, 4 fixed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            '{"kind": "logical", "game": "CartPoleBugs-v0", "bug_id": 7, "step": 0, "episode": 0, '
            '"seed": 0, "env_index": 0, "actions": [1]}',
            "record 0: the record names bug 7 but CartPoleBugs-v0 has 2 bugs",
        ),
        (
            '{"kind": "logical", "game": "BlockMaze-v0", "bug_id": 1, "step": 0, "episode": 0, '
            '"seed": 0, "env_index": 0, "actions": [9]}',
            "record 0: the record of BlockMaze-v0",
        ),
    ],
)
def test_verify_names_a_record_it_cannot_replay(tmp_path, capsys, records, message):
    path = tmp_path / "bugs.jsonl"
    path.write_text(records + "\n")
    assert main(["verify", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_verify_skips_a_corrupt_line_by_number_and_verifies_the_rest(campaign, tmp_path, capsys):
    out, _ = campaign
    lines = (out / "run" / "bugs.jsonl").read_text().splitlines()
    path = tmp_path / "bugs.jsonl"
    path.write_text("\n".join([lines[0], "{torn", *lines[1:]]) + "\n")
    with pytest.warns(UserWarning, match=r"bugs.jsonl:2: skipping a line"):
        main(["verify", str(path)])
    assert f"{len(lines)} still present" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:.*RGB-array rendering")
def test_a_game_fault_exits_3(tmp_path, capsys):
    code = main(
        [
            "run",
            "random",
            "--game",
            "gym:tests.bridges.tiny_gym:TinyBrokenScreen-v0",
            "--episodes",
            "4",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "error: the game failed:" in err and "NaN" in err


def test_replay_show_prints_the_trace_and_marks_where_the_bug_fires(campaign, capsys):
    out, _ = campaign
    record = read_bug_records(out / "run" / "bugs.jsonl")[0]
    assert main(["replay", str(out / "run" / "bugs.jsonl"), "--index", "0", "--show"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(record.actions) + 1  # a line a step, then the verdict
    assert lines[record.step].startswith(f"step {record.step:>5d}  action {record.actions[-1]}")
    assert lines[record.step].endswith(f"<- bug {record.bug_id} fires (the recorded step)")
    assert all(" at (" in line for line in lines[:-1]) and lines[-1].startswith("reproduced:")
