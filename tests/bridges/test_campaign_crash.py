"""A campaign on a Ray game farm survives its games being SIGKILLed: the Done-when of the bridges
issue."""

import json
import os
import signal
import warnings

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from envs_bridge import pool  # noqa: E402
from envs_bridge.ale import MsPacmanEnv  # noqa: E402
from jgtest.methods import reline  # noqa: E402
from jgtest.records import read_bug_records  # noqa: E402


# Ray actor restarts take 10-20 s each on 2 loaded cores; the farm-level SIGKILL test runs by
# default
@pytest.mark.slow
def test_sigkilled_games_become_crash_records_and_the_campaign_finishes(tmp_path, monkeypatch):
    farms = []
    original_init = pool.GameFarm.__init__

    def remember(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        farms.append(self)

    monkeypatch.setattr(pool.GameFarm, "__init__", remember)
    killed = []

    # the campaign's own progress callback: a kill after each of the first episodes
    def progress(phase, done, total):
        farm = farms[-1] if farms else None
        if phase.startswith("evaluate") and 0 < done < total and len(killed) < 2:
            # A game in mid-episode (a kill during a reset has no trace to record).
            mid_episode = [
                i for i in range(farm.num_envs) if farm._actions[i] and not farm._needs_reset[i]
            ]
            if mid_episode:
                killed.append(farm.pids()[mid_episode[0]])
                os.kill(killed[-1], signal.SIGKILL)

    config = reline.RelineConfig(
        game="ale:MsPacman", models=1, eval_episodes=4, agents=("random",), actors=2, seed=3
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        summary = reline.run(config, tmp_path, progress=progress)
    try:
        assert len(killed) == 2
        assert not set(killed) & set(farms[-1].pids())  # both games run in new processes
    finally:
        if ray.is_initialized():
            ray.shutdown()

    # The campaign finished: Table 1 over 4 episodes.
    assert json.loads((tmp_path / "table1.json").read_text()) == {
        "protocol": summary["protocol"],
        "table1": summary["table1"],
    }
    assert set(summary["table1"]["random"]) == {"1", "2", "3", "4"}
    crashes = [r for r in read_bug_records(tmp_path / "bugs.jsonl") if r.kind == "crash"]
    assert len(crashes) == 2, "one record a kill, the first still there after the second"
    for record in crashes:
        assert "died" in record.detail and record.game == "ale:MsPacman"
        # The trace replays: a fresh game reset with the record's seed reaches the recorded
        # position.
        with MsPacmanEnv(num_envs=1) as game:
            game.reset(record.seed)
            for action in record.actions[:-1]:
                _, _, terminated, _, info = game.step(np.array([action]))
                assert not terminated[0]
        np.testing.assert_array_equal(info["telemetry"].position[0], record.position)
