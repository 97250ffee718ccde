"""Every user mistake gets one line, ``error: ...`` on stderr, exit status 2, and no traceback.

One table of bad invocations across the command line's commands, each with the words its error
must hold (the UnrealCV server's own command line has its table in
``tests/bridges/test_unrealcv_server.py``). The files a row needs are made by hand in ``tmp_path``
(``{tmp}``, ``{file}``, ``{records}``, …): nothing is compiled or trained, so the table stays fast.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from jgtest.cli import main
from jgtest.methods.random_testing import RandomCampaignConfig
from jgtest.records import BugRecord

_RECORD = BugRecord(
    kind="logical",
    game="BlockMaze-v0",
    bug_id=3,
    step=2,
    episode=0,
    seed=0,
    env_index=0,
    actions=(0, 1, 1),
)


def _files(tmp_path) -> dict[str, str]:
    """The paths the table's rows name, each made as its row needs it."""
    (tmp_path / "file.txt").write_text("x")
    write = lambda name, *records: (tmp_path / name).write_text(
        "".join(json.dumps(r) + "\n" for r in records)
    )
    as_dict = lambda **changes: (
        dataclasses.asdict(dataclasses.replace(_RECORD, **changes))
        | {k: v for k, v in changes.items() if k == "game"}
    )
    write("records.jsonl", as_dict())
    write("other_game.jsonl", as_dict(game="NoSuchGame-v0"))
    write("bad_action.jsonl", as_dict(actions=(0, 1, 99)))
    write("bad_bug.jsonl", as_dict(bug_id=50))
    write("forged.jsonl", as_dict(kind="crash"))
    (tmp_path / "garbage.jsonl").write_text("{not json\n[1, 2]\n")
    (tmp_path / "empty_run").mkdir()
    for name, summary in (("list_summary", "[1, 2]"), ("broken_summary", "{not json")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(summary)
    # a BlockMaze campaign of seed 3 killed before its first checkpoint: its config.json alone
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "config.json").write_text(
        json.dumps({"method": "random", **dataclasses.asdict(RandomCampaignConfig(seed=3))})
    )
    done = tmp_path / "done"
    done.mkdir()
    (done / "bugs.jsonl").write_text("")
    (done / "config.json").write_text("{}")
    return {
        "tmp": str(tmp_path),
        "file": str(tmp_path / "file.txt"),
        "killed": str(killed),
        "done": str(done),
    }


BAD_INVOCATIONS = [
    # run random: options
    (["run", "random", "--game", "NoSuchGame", "--out", "{tmp}/a"], "unknown game 'NoSuchGame'"),
    (["run", "random", "--out", "{file}"], "is a file, not a directory"),
    (["run", "random", "--out", "{file}/sub"], "cannot create --out directory"),
    (["run", "random", "--envs", "0", "--out", "{tmp}/a"], "argument --envs: 0 is below 1"),
    (
        ["run", "random", "--steps", "ten", "--out", "{tmp}/a"],
        "argument --steps: 'ten' is not an integer",
    ),
    (
        ["run", "random", "--steps", "250", "--chunk", "200", "--out", "{tmp}/a"],
        "steps_per_env 250 is not a multiple of chunk_steps 200",
    ),
    (["run", "random", "--seed", "4294967296", "--out", "{tmp}/a"], "seeds are 32-bit"),
    (
        ["run", "random", "--seed", "99999999999999999999999", "--out", "{tmp}/a"],
        "seeds are 32-bit",
    ),
    (["run", "random", "--seed", "-1", "--out", "{tmp}/a"], "argument --seed: -1 is below 0"),
    (["run", "random", "--out", "{tmp}/bad\udcffname"], "holds a byte that is not UTF-8"),
    # run random: game arguments, each error naming its key
    (["run", "random", "--game-arg", "gold=[30, 1]", "--out", "{tmp}/a"], "outside the 16x16 map"),
    (
        ["run", "random", "--game-arg", "num_bugs=2.5", "--out", "{tmp}/a"],
        "option num_bugs takes a whole number, got 2.5",
    ),
    (
        ["run", "random", "--game-arg", "num_bugs=abc", "--out", "{tmp}/a"],
        "option num_bugs takes a whole number, got 'abc'",
    ),
    (
        ["run", "random", "--game-arg", "gold_reward=NaN", "--out", "{tmp}/a"],
        "option gold_reward takes finite numbers, got nan",
    ),
    (
        ["run", "random", "--game-arg", "gold_reward=-Infinity", "--out", "{tmp}/a"],
        "option gold_reward takes finite numbers, got -inf",
    ),
    (
        ["run", "random", "--game-arg", "num_bugs", "--out", "{tmp}/a"],
        "--game-arg expects KEY=VALUE, got 'num_bugs'",
    ),
    (
        [
            "run",
            "random",
            "--game-arg",
            "num_bugs=3",
            "--game-arg",
            "num_bugs=4",
            "--out",
            "{tmp}/a",
        ],
        "--game-arg num_bugs is given twice",
    ),
    # run random: the run directory
    (["run", "random", "--out", "{tmp}/empty_run", "--resume"], "holds no campaign to resume"),
    (
        ["run", "random", "--out", "{tmp}/j1", "--junit", "{tmp}/j1/bugs.jsonl"],
        "--junit '{tmp}/j1/bugs.jsonl' would replace the run directory's own bugs.jsonl",
    ),
    (
        ["run", "random", "--out", "{tmp}/j1", "--junit", "{tmp}/j1/checkpoints/x.xml"],
        "would replace the run directory's own checkpoints/x.xml",
    ),
    (["run", "random", "--out", "{tmp}/a", "--junit", "{tmp}"], "is a directory; name a file"),
    (
        ["run", "random", "--out", "{tmp}/a", "--junit", "{file}/junit.xml"],
        "'{file}' is a file, not a folder",
    ),
    (
        ["run", "random", "--game", "gym:nosuchmodule:Tiny-v0", "--out", "{tmp}/a"],
        "cannot import module 'nosuchmodule', which should register the game",
    ),
    (["run", "random", "--out", "{done}"], "already holds a campaign"),
    (
        [
            "run",
            "random",
            "--game",
            "CombatArena-v0",
            "--seed",
            "4",
            "--out",
            "{killed}",
            "--resume",
        ],
        "holds another campaign (game 'BlockMaze-v0' there, 'CombatArena-v0' here; seed 3 there, 4 "
        "here)",
    ),
    # run wuji, reline, the park's agents
    (["run", "wuji", "--strategy", "monkey", "--out", "{tmp}/a"], "strategy must be one of"),
    (["run", "wuji", "--seeds", "0", "--out", "{tmp}/a"], "argument --seeds: 0 is below 1"),
    (["run", "wuji", "--population", "1", "--out", "{tmp}/a"], "population must be at least 2"),
    (
        ["run", "wuji", "--budget-s", "nan", "--out", "{tmp}/a"],
        "argument --budget-s: nan is not a finite number above 0",
    ),
    (
        [
            "run",
            "wuji",
            "--game",
            "CombatArena-v0",
            "--game-arg",
            "boss_hp=300",
            "--out",
            "{tmp}/a",
        ],
        "unknown option(s) boss_hp",
    ),
    (
        [
            "run",
            "wuji",
            "--game",
            "CombatArena-v0",
            "--game-arg",
            "stuck_buff=1",
            "--out",
            "{tmp}/a",
        ],
        "stuck_buff is re-drawn for each run",
    ),
    (
        ["run", "wuji", "--budget-steps", "0", "--out", "{tmp}/a"],
        "argument --budget-steps: 0 is below 1",
    ),
    (
        ["run", "wuji", "--seed", "4294967295", "--seeds", "2", "--out", "{tmp}/a"],
        "the last seed (--seed 4294967295 + --seeds 2 - 1) must be in [0, 2**32)",
    ),
    (["run", "reline", "--models", "0", "--out", "{tmp}/a"], "argument --models: 0 is below 1"),
    (
        ["run", "reline", "--agents", "reline,monkey", "--out", "{tmp}/a"],
        "unknown RELINE agent(s) ['monkey']",
    ),
    (
        ["run", "reline", "--game", "BlockMaze-v0", "--out", "{tmp}/a"],
        "reline reads frame_time, which BlockMaze-v0 does not provide. To provide it: frame_time: "
        "report telemetry.frame_time_ms",
    ),
    (
        ["run", "reline", "--game", "unreal:127.0.0.1:9000", "--out", "{tmp}/a"],
        "RELINE's per-game settings (reward, threshold, training budget) exist for CartPoleBugs-v0",
    ),
    (
        ["run", "wuji", "--game", "ParkWorld-v0", "--out", "{tmp}/a"],
        "wuji reads state_features, game_reward, oracle_inputs, which ParkWorld-v0 does not "
        "provide",
    ),
    (
        ["run", "wuji", "--game", "ale:MsPacman", "--out", "{tmp}/a"],
        "wuji reads state_features, which ale:MsPacman does not provide",
    ),
    (
        ["run", "random", "--game", "supertuxkart:lighthouse", "--out", "{tmp}/a"],
        "random runs on device games; supertuxkart:lighthouse steps on the host",
    ),
    (
        ["run", "reline", "--elites", "top", "--out", "{tmp}/a"],
        "argument --elites: invalid choice: 'top'",
    ),
    (
        ["run", "reline", "--elite-percentile", "100", "--out", "{tmp}/a"],
        "elite_percentile must be in (0, 100), got 100.0",
    ),
    (
        [
            "run",
            "reline",
            "--game",
            "supertuxkart:lighthouse",
            "--evaluation",
            "frozen",
            "--out",
            "{tmp}/a",
        ],
        "evaluation='frozen' is not available",
    ),
    (
        [
            "run",
            "reline",
            "--game",
            "PacMaze-v0",
            "--game-arg",
            "ghost_colour=2",
            "--out",
            "{tmp}/a",
        ],
        "unknown option",
    ),
    (
        ["run", "ppgta", "--game", "BlockMaze-v0", "--out", "{tmp}/a"],
        "ppgta reads rgb_frames, objects, which BlockMaze-v0 does not provide",
    ),
    (
        ["run", "compare-explorers", "--episodes", "0", "--out", "{tmp}/a"],
        "argument --episodes: 0 is below 1",
    ),
    (
        ["run", "inspector", "--models-seed", "1", "--out", "{tmp}/a"],
        "unrecognized arguments: --models-seed 1",  # PPGTA's option, not listed for inspector
    ),
    (
        ["run", "ppgta", "--models-seed", "-1", "--out", "{tmp}/a"],
        "--models-seed must be in [0, 2**32), got -1",
    ),
    (
        ["run", "inspector", "--dagger-rounds", "1", "--out", "{tmp}/a"],
        "unrecognized arguments: --dagger-rounds 1",
    ),
    (
        [
            "run",
            "ppgta",
            "--game",
            "unreal:127.0.0.1:9000",
            "--dagger-rounds",
            "1",
            "--out",
            "{tmp}/a",
        ],
        "--dagger-rounds sets the models ppgta and compare-explorers train",
    ),
    (
        ["run", "ppgta", "--dagger-rounds", "-1", "--out", "{tmp}/a"],
        "dagger_rounds must be non-negative, got -1",
    ),
    (
        [
            "run",
            "random",
            "--game",
            "BlockMaze-v0",
            "--quick",
            "--out",
            "{tmp}/a",
        ],
        "--quick: the park's options (ParkWorld-v0, unreal:…, vizdoom:WAD/MAP), not "
        "the random agent's on --game BlockMaze-v0",
    ),
    (
        [
            "run",
            "random",
            "--game",
            "gym:CartPole-v1",
            "--episodes",
            "2",
            "--detector",
            "learned",
            "--out",
            "{tmp}/a",
        ],
        "unrecognized arguments: --detector learned",
    ),
    (["run", "inspector", "--episodes", "7", "--out", "{tmp}/a"], "multiple of num_envs"),
    (
        ["run", "ppgta", "--game-arg", "colour=3", "--out", "{tmp}/a"],
        "unexpected keyword argument 'colour'",
    ),
    (["run", "ppgta", "--resume", "--out", "{tmp}/a"], "holds no campaign to resume"),
    (
        ["run", "ppgta", "--game", "unreal:nohost", "--out", "{tmp}/a"],
        "unreal:HOST:PORT or unreal:/path/to/socket",
    ),
    (
        ["run", "ppgta", "--game", "unreal:127.0.0.1:9000", "--out", "{tmp}/a"],
        "pass --ppgta-models DIR",
    ),
    (
        [
            "run",
            "ppgta",
            "--game",
            "unreal:127.0.0.1:9000",
            "--game-arg",
            "camra=1",
            "--out",
            "{tmp}/a",
        ],
        "unexpected keyword argument 'camra'",
    ),
    (
        [
            "run",
            "random",
            "--game",
            "unreal:127.0.0.1:9000",
            "--ppgta-models",
            "nowhere",
            "--out",
            "{tmp}/a",
        ],
        "--ppgta-models: no PPGTA models in nowhere",
    ),
    (["run", "monkey", "--out", "{tmp}/a"], "invalid choice: 'monkey'"),
    # replay
    (["replay", "{tmp}/nope.jsonl"], "nope.jsonl: no such file"),
    (["replay", "{tmp}"], ": a directory, not a file"),
    (["replay", "{tmp}/records.jsonl", "--index", "99"], "--index 99 is out of range"),
    (["replay", "{tmp}/garbage.jsonl"], "holds no bug records"),
    (["replay", "{tmp}/other_game.jsonl"], "unknown game 'NoSuchGame-v0'"),
    (["replay", "{tmp}/bad_action.jsonl"], "action 99 is out of range"),
    (["replay", "{tmp}/bad_bug.jsonl"], "names bug 50 but BlockMaze-v0 has 10 bugs"),
    (
        ["replay", "{tmp}/forged.jsonl"],
        "the record says bug 3 is a crash bug, but BlockMaze-v0's bug 3 is a logical bug",
    ),
    (
        ["verify", "{tmp}/forged.jsonl"],
        "the record says bug 3 is a crash bug, but BlockMaze-v0's bug 3 is a logical bug",
    ),
    (
        ["verify", "{tmp}/records.jsonl", "--junit", "{tmp}/records.jsonl"],
        "--junit '{tmp}/records.jsonl' would replace the records it verifies",
    ),
    (["verify", "{tmp}/records.jsonl", "--junit", "{tmp}"], "is a directory; name a file"),
    # report
    (["report", "{tmp}/nowhere"], "no run directory"),
    (["report", "{file}"], "is a file, not a run directory"),
    (["report", "{tmp}/list_summary"], "holds a JSON list, not the object"),
    (["report", "{tmp}/broken_summary"], "summary.json: not JSON"),
    (["report", "{killed}"], "--resume"),
    (["report", "{tmp}/empty_run"], "no finished campaign in it"),
    # plan (the plan commands' whole table: tests/plans/test_plan_errors.py)
    (["plan", "run", "{tmp}/missing.json"], "missing.json: no such file"),
    (["plan", "run", "{tmp}"], "a directory, not a file"),
    # escape codes shown, not obeyed
    (["plan", "run", "{tmp}/\x1b[2J\x1b[31mred.json"], "\\x1b[2J\\x1b[31mred.json: no such file"),
    (
        ["plan", "run", "{tmp}/plan.json", "--out", "{tmp}/p", "--junit", "{tmp}/p/report.json"],
        "would replace the run directory's own report.json",
    ),
    (["plan", "suite", "{tmp}/nowhere"], "nowhere: no such folder"),
    (
        ["plan", "from-text", "{tmp}/missing.txt", "-o", "{tmp}/plan.json"],
        "missing.txt: no such file",
    ),
    # train
    (["train", "ppo", "--steps", "-1", "--out", "{tmp}/t"], "argument --steps: -1 is below 1"),
    (["train", "ppo", "--game", "Nope-v0", "--out", "{tmp}/t"], "unknown game"),
    (
        ["train", "ppo", "--set", "num_minibatches=3", "--out", "{tmp}/t"],
        "does not divide the batch",
    ),
    (["train", "sac", "--out", "{tmp}/t"], "invalid choice: 'sac'"),
    (
        ["train", "ppo", "--hp", "lr=0.1", "--out", "{tmp}/t"],
        "unknown hyperparameter(s) lr; hyperparameters: clip_eps",
    ),
    (["train", "ppo", "--hp", "gamma=high", "--out", "{tmp}/t"], "gamma must be a number"),
    (["train", "ppo", "--hp", "gamma", "--out", "{tmp}/t"], "--hp expects KEY=VALUE"),
    (["train", "ppo", "--seed", "4294967296", "--out", "{tmp}/t"], "seeds are 32-bit"),
    (["train", "ppo", "--out", "{file}"], "is a file, not a directory"),
]


def _one_error_line(capsys) -> str:
    """The one ``error:`` line a refused command printed (warnings, ``warning: ...``, and the blank
    line a transient progress bar leaves where stderr is not a terminal, aside)."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [
        line
        for line in captured.err.splitlines()
        if line.strip() and not line.startswith("warning: ")
    ]
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]


@pytest.mark.parametrize(
    "argv, message",
    BAD_INVOCATIONS,
    ids=[" ".join(a[:3]) + f" #{i}" for i, (a, _) in enumerate(BAD_INVOCATIONS)],
)
def test_a_user_mistake_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    files = _files(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    try:
        code = main([arg.format(**files) for arg in argv])
    except SystemExit as exit_:  # argparse refuses a bad option by exiting
        code = exit_.code
    assert code == 2
    assert message.format(**files) in _one_error_line(capsys)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written


def test_the_table_covers_every_command():
    commands = {argv[0] for argv, _ in BAD_INVOCATIONS}
    assert {"run", "replay", "report", "plan", "train"} <= commands and len(BAD_INVOCATIONS) >= 30


def test_debug_shows_the_traceback_of_a_user_mistake(tmp_path):
    with pytest.raises(ValueError, match="unknown game 'NoSuchGame'"):
        main(["--debug", "run", "random", "--game", "NoSuchGame", "--out", str(tmp_path / "a")])


def test_an_unexpected_fault_keeps_a_short_traceback_and_debug_the_whole(
    monkeypatch, capsys, tmp_path
):
    import jgtest

    def broken():
        raise RuntimeError("a fault inside jgtest")

    monkeypatch.setattr(jgtest, "registered_games", broken)
    command = ["run", "random", "--game", "BlockMaze-v0", "--out", str(tmp_path / "run")]
    assert main(command) == 1
    err = capsys.readouterr().err
    assert (
        "Traceback" in err
        and "RuntimeError: a fault inside jgtest" in err
        and "jgtest --debug" in err
    )
    assert err.count('File "') <= 3  # the innermost frames only
    with pytest.raises(RuntimeError, match="a fault inside jgtest"):
        main(["--debug", *command])


@pytest.mark.parametrize(
    ("game", "package", "extra"),
    [
        ("craftax:Craftax-Classic-Symbolic-v1", "craftax", "craftax"),
        ("vizdoom:freedoom1/E1M1", "vizdoom", "bridges"),
        ("ale:MsPacman", "envpool", "bridges"),
        ("gym:CartPole-v1", "gymnasium", "bridges"),
    ],
)
def test_a_game_whose_extra_is_missing_is_refused_in_one_line(
    monkeypatch, capsys, tmp_path, game, package, extra
):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == package else find_spec(name, *a),
    )
    assert main(["run", "random", "--game", game, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: {game} needs the {package} package, not installed here: "
        f"pip install -e '.[{extra}]'"
    )
