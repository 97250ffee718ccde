"""The Ray game farm (envs_bridge.pool): batching, per-slot seeds, and faults as crash records.

Most tests farm :class:`tests.bridges.toy_game.ToyGame`, a deterministic single game (Ray
workers import it from that module), which can crash, hang or draw a NaN frame
at a chosen step of a chosen episode seed; one test farms the real Ms. Pac-Man.
"""

from __future__ import annotations

import functools
import os
import signal
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from envs_bridge.pool import GameFarm  # noqa: E402
from envs_bridge.protocol import GameCrashed  # noqa: E402
from jgtest.records import BugRecordWriter, read_bug_records  # noqa: E402
from tests.bridges.toy_game import EPISODE, ToyGame, toy_value  # noqa: E402

#: Faults of the farm's games by episode seed (each test resets with its own seeds).
FAULTS = {1: ("crash", 2), 1000: ("hang", 1), 1001: ("nan", 1)}


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """One local Ray for the module; farms join it (and so leave it running)."""
    start = time.monotonic()
    with warnings.catch_warnings():  # JAX warns of any fork; Ray's is subprocess's fork + exec
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        # The toy game lives in tests/bridges/toy_game.py: actor processes must import it, and under
        # pytest-xdist no script directory puts the repository on their path, so PYTHONPATH does.
        root = str(Path(__file__).resolve().parents[2])
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, os.environ.get("PYTHONPATH")) if p
        )
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"ray start-up: {time.monotonic() - start:.1f} s")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def bugs_file(tmp_path_factory):
    return tmp_path_factory.mktemp("farm") / "bugs.jsonl"


@pytest.fixture(scope="module")
def found():
    """The records ``on_crash`` received, in order."""
    return []


@pytest.fixture(scope="module")
def farm(bugs_file, found):
    """Two toy games, one farm for the toy tests (a game process takes seconds to start); each
    test resets it with its own seeds, so their order does not matter."""
    with BugRecordWriter(bugs_file) as writer:

        def on_crash(record):
            writer.write(record)
            found.append(record)

        farm = GameFarm(
            functools.partial(ToyGame, faults=FAULTS),
            actors=2,
            seed=10,
            timeout_s=3,
            on_crash=on_crash,
        )
        yield farm
        farm.close()


def test_batched_shapes_per_slot_seeds_and_autoreset(farm, found):
    assert (farm.name, farm.num_envs, farm.num_actions, farm.frame_shape) == (
        "toy",
        2,
        3,
        (8, 8, 1),
    )
    assert len(set(farm.pids())) == 2 and os.getpid() not in farm.pids()
    before = len(found)
    frames, info = farm.reset()  # the constructor's seed: game i gets 10 + i
    assert frames.shape == (2, 8, 8, 1) and frames.dtype == np.uint8
    assert frames[:, 0, 0, 0].tolist() == [10, 11]
    telemetry = info["telemetry"]
    assert (
        telemetry.position.shape == (2, 2)
        and telemetry.cell.shape == (2,)
        and telemetry.bugs_fired.shape == (2, 0)
    )
    assert not info["autoreset"].any() and not telemetry.crashed.any()

    frames, info = farm.reset(seed=100)
    assert frames[:, 0, 0, 0].tolist() == [100, 101]
    played = [[], []]
    for t in range(EPISODE):
        actions = np.array([t % 3, 1], np.int32)
        frames, reward, terminated, truncated, info = farm.step(actions)
        for i in range(2):
            played[i].append(int(actions[i]))
        assert frames[:, 0, 0, 0].tolist() == [toy_value(100, played[0]), toy_value(101, played[1])]
        assert reward.tolist() == [float(t % 3 == 1), 1.0] and reward.dtype == np.float32
        assert terminated.tolist() == [t == EPISODE - 1] * 2 and not truncated.any()
        assert info["telemetry"].cell.tolist() == [t + 1] * 2 and not info["autoreset"].any()
    # The auto-reset step: episode 1 of slot i starts from seed + i + N * 1, whatever the action.
    assert [farm.episode_seed(i, 1) for i in range(2)] == [102, 103]
    frames, reward, terminated, _, info = farm.step(np.array([2, 2], np.int32))
    assert info["autoreset"].tolist() == [True, True] and frames[:, 0, 0, 0].tolist() == [102, 103]
    assert reward.tolist() == [0.0, 0.0] and not terminated.any()
    frames, *_ = farm.step(np.array([1, 2], np.int32))
    assert frames[:, 0, 0, 0].tolist() == [toy_value(102, [1]), toy_value(103, [2])]
    with pytest.raises(ValueError, match="outside"):
        farm.step(np.array([0, 3], np.int32))
    assert len(found) == before


def test_game_crash_and_sigkill_become_records_and_the_games_restart(farm, found, bugs_file):
    before = len(found)
    farm.reset(seed=0)  # slot 1's first episode (seed 0 + 1) crashes at its step 2
    pids = farm.pids()
    played = [[], []]

    def step(actions):
        out = farm.step(np.array(actions, np.int32))
        for i in range(2):
            if not out[4]["autoreset"][i]:
                played[i].append(actions[i])
        return out

    step([0, 1])
    step([1, 2])
    frames, reward, terminated, truncated, info = step([2, 2])
    assert terminated.tolist() == [False, True] and info["telemetry"].crashed.tolist() == [
        False,
        True,
    ]
    # its last good frame
    assert reward[1] == 0.0 and frames[1, 0, 0, 0] == toy_value(1, played[1][:-1])
    assert len(found) == before + 1
    first = found[-1]
    assert (first.kind, first.game, first.env_index, first.episode, first.seed) == (
        "crash",
        "toy",
        1,
        0,
        1,
    )
    assert (
        first.step == 2
        and first.actions == (1, 2, 2)
        and first.detail == "GameCrashed: toy: crashed at step 2"
    )
    assert farm.pids()[0] == pids[0] and farm.pids()[1] != pids[1]

    # The trace replays on a fresh game: reset(record.seed), then the actions; it crashes at
    # record.step.
    game = ToyGame(faults=FAULTS)
    game.reset(first.seed)
    for action in first.actions[: first.step]:
        game.step(np.array([action]))
    with pytest.raises(GameCrashed, match="step 2"):
        game.step(np.array([first.actions[first.step]]))

    frames, _, terminated, _, info = step([0, 0])  # slot 1 auto-resets in its fresh process
    assert info["autoreset"].tolist() == [False, True] and not terminated.any()
    assert (
        frames[1, 0, 0, 0] == farm.episode_seed(1, 1) == 3 and not info["telemetry"].crashed.any()
    )
    played[1] = []
    step([1, 1])
    step([2, 0])  # slot 0 is 6 actions into its episode

    os.kill(pids[0], signal.SIGKILL)
    frames, reward, terminated, _, info = step([1, 2])
    assert terminated.tolist() == [True, False] and info["telemetry"].crashed.tolist() == [
        True,
        False,
    ]
    assert frames[0, 0, 0, 0] == toy_value(0, played[0][:-1])
    assert len(found) == before + 2 and found[-2] is first
    killed = found[-1]
    assert (killed.env_index, killed.episode, killed.seed, killed.step) == (0, 0, 0, 6)
    assert killed.actions == (0, 1, 2, 0, 1, 2, 1) == tuple(played[0])
    assert f"game process {pids[0]} died during step" in killed.detail
    assert farm.pids()[0] not in pids

    frames, _, _, _, info = step([0, 0])
    assert (
        info["autoreset"].tolist() == [True, False]
        and frames[0, 0, 0, 0] == farm.episode_seed(0, 1) == 2
    )
    for _ in range(3):
        _, _, terminated, _, info = step([1, 1])
        assert not terminated.any() and not info["telemetry"].crashed.any()
    assert farm.crashes == found and read_bug_records(bugs_file) == found  # written as found


def test_hang_and_nan_frame_become_records_and_the_games_restart(farm, found):
    before = len(found)
    farm.reset(seed=1000)  # slot 0 hangs at step 1, slot 1 draws a NaN frame at step 1
    pids = farm.pids()
    farm.step(np.array([1, 1], np.int32))
    start = time.monotonic()
    _, reward, terminated, _, info = farm.step(np.array([2, 0], np.int32))
    # The farm's contract: a hang costs the step's timeout, then a restart within start_timeout_s
    # (a wall-clock bound this loose holds on a loaded 2-core machine; without the timeout the step
    # would never return).
    assert time.monotonic() - start < farm.timeout_s + farm.start_timeout_s
    assert terminated.tolist() == [True, True] and info["telemetry"].crashed.tolist() == [
        True,
        True,
    ]
    assert reward.tolist() == [0.0, 0.0]
    hang, nan = found[before:]
    assert (hang.env_index, hang.seed, hang.step, hang.actions) == (0, 1000, 1, (1, 2))
    assert hang.detail.startswith("GameTimeout:") and "step timed out after 3.0 s" in hang.detail
    assert (nan.env_index, nan.seed, nan.step, nan.actions) == (1, 1001, 1, (1, 0))
    assert nan.detail.startswith("MalformedFrame:") and "NaN" in nan.detail
    assert not set(farm.pids()) & set(pids)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the hung process was killed
        try:
            os.kill(pids[0], 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the hung game process is still alive")
    frames, _, terminated, _, info = farm.step(np.array([0, 0], np.int32))
    assert info["autoreset"].all() and not terminated.any()
    assert frames[:, 0, 0, 0].tolist() == [toy_value(1002, []), toy_value(1003, [])]
    frames, *_ = farm.step(np.array([1, 1], np.int32))
    assert frames[:, 0, 0, 0].tolist() == [toy_value(1002, [1]), toy_value(1003, [1])]


def test_bad_arguments_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="actors"):
        GameFarm(ToyGame, actors=0)
    with pytest.raises(ValueError, match="timeout_s"):
        GameFarm(ToyGame, actors=1, timeout_s=0)
    with pytest.raises(ValueError, match="start_timeout_s"):
        GameFarm(ToyGame, actors=1, start_timeout_s=-1)
    with pytest.raises(ValueError, match="make_game"):
        GameFarm(None, actors=1)
    with pytest.raises(ValueError, match=r"make_game must build a single game .*num_envs=2"):
        GameFarm(functools.partial(ToyGame, num_envs=2), actors=1)


@pytest.mark.slow
def test_ms_pacman_farm_matches_single_games_seeded_seed_plus_i():
    pytest.importorskip("envpool")
    from envs_bridge.ale import MsPacmanEnv

    farm = GameFarm(functools.partial(MsPacmanEnv, num_envs=1), actors=2, timeout_s=30)
    with pytest.raises(RuntimeError, match="reset"):
        farm.step(np.zeros(2, np.int32))
    frames, info = farm.reset(seed=7)
    assert (
        farm.name == "ale:MsPacman" and frames.shape == (2, 84, 84, 1) and frames.dtype == np.uint8
    )
    actions = np.random.default_rng(0).integers(0, farm.num_actions, (40, 2)).astype(np.int32)
    farm_frames = [frames]
    for step_actions in actions:
        frames, reward, terminated, truncated, info = farm.step(step_actions)
        farm_frames.append(frames)
        assert info["telemetry"].bugs_fired.shape == (2, 4) and info[
            "telemetry"
        ].position.shape == (2, 2)
        assert not info["telemetry"].crashed.any() and not (terminated | truncated).any()
    farm.close()
    farm.close()
    with pytest.raises(RuntimeError, match="closed"):
        farm.reset(0)
    game = MsPacmanEnv(num_envs=1)
    frames, _ = game.reset(8)  # slot 1: seed 7 + 1
    single = [frames[0]] + [game.step(step_actions[1:])[0][0] for step_actions in actions]
    game.close()
    np.testing.assert_array_equal(np.stack(farm_frames)[:, 1], np.stack(single))
