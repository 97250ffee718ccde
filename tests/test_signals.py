"""What methods read and games provide (jgtest.signals), the check between them and the docs' table
(jgtest.methods.compatibility)."""

import pytest

from jgtest import signals as vocabulary
from jgtest.envs import BUILT_IN_GAMES
from jgtest.methods import compatibility as signals


@pytest.mark.parametrize(
    ("game", "expected"),
    [
        ("BlockMaze-v0", {"cells", "position", "state_features", "game_reward", "oracle_inputs"}),
        (
            "PacMaze-v0",
            {"cells", "position", "state_features", "game_reward", "oracle_inputs", "frame_time"},
        ),
        ("ParkWorld-v0", {"cells", "position", "rgb_frames", "objects"}),
        ("Dungeon-v0", {"cells", "position", "state_features", "game_reward", "events", "actors"}),
        (
            "supertuxkart:lighthouse",
            {"cells", "position", "game_reward", "rgb_frames", "frame_time"},
        ),
        (
            "unreal:HOST:PORT",
            {"cells", "position", "oracle_inputs", "rgb_frames", "objects", "frame_time"},
        ),
    ],
)
def test_games_declare_what_they_provide(game, expected):
    assert signals.provided(game) == expected


def test_every_declared_signal_is_known():
    for game in BUILT_IN_GAMES + signals.BRIDGED_EXAMPLES:
        assert signals.provided(game) <= set(vocabulary.SIGNALS), game
    for method, needs in vocabulary.NEEDS.items():
        assert set(needs) <= set(vocabulary.SIGNALS), method
    assert set(vocabulary.HOW) == set(vocabulary.SIGNALS)


@pytest.mark.parametrize(
    ("method", "game"),
    [
        ("random", "BlockMaze-v0"),
        ("wuji", "CombatArena-v0"),
        ("reline", "CartPoleBugs-v0"),
        ("reline", "ale:MsPacman"),
        ("ppgta", "ParkWorld-v0"),
        ("inspector", "unreal:HOST:PORT"),
        ("random", "unreal:HOST:PORT"),
        ("plan", "Dungeon-v0"),
    ],
)
def test_the_pairs_jgtest_runs_pass(method, game):
    signals.check(method, game)


def test_a_missing_signal_is_named_with_how_to_provide_it():
    with pytest.raises(
        signals.MissingSignal,
        match=r"^inspector reads rgb_frames, objects, which KartTrack-v0 does not provide\. "
        r"To provide it: rgb_frames: return RGB frames.*; objects: report the objects",
    ):
        signals.check("inspector", "KartTrack-v0")
    assert signals.missing("wuji", "supertuxkart:lighthouse") == ("state_features", "oracle_inputs")


def test_signals_present_but_no_settings_is_a_different_refusal():
    with pytest.raises(
        signals.NotWired,
        match=r"^reline cannot run on unreal:HOST:PORT: RELINE's per-game settings .* exist for "
        r"CartPoleBugs-v0",
    ):
        signals.check("reline", "unreal:HOST:PORT")
    assert signals.runs_on("reline", "unreal:HOST:PORT")[0] == "no RELINE settings"
    assert signals.runs_on("random", "supertuxkart:lighthouse") == (
        "device games only",
        "random runs on device games; supertuxkart:lighthouse steps on the host",
    )
    assert signals.runs_on("plan", "CartPoleBugs-v0")[0] == "no plan vocabulary"
    assert (
        signals.missing("plan", "vizdoom:freedoom1/E1M1") == ()
        and signals.runs_on("plan", "vizdoom:freedoom1/E1M1") is None
    )
    assert signals.runs_on("plan", "vizdoom:basic")[0] == "levels only"


def test_unknown_games_and_methods_are_refused():
    with pytest.raises(ValueError, match="unknown game 'Nope-v0'"):
        signals.check("random", "Nope-v0")
    with pytest.raises(ValueError, match="unknown method 'monkey'; methods: random, wuji"):
        signals.check("monkey", "BlockMaze-v0")


def test_the_docs_page_is_current():
    assert signals.main(["--check"]) == 0, (
        "docs/games.md is stale: run python -m jgtest.methods.compatibility"
    )
