"""Wuji on a ViZDoom scenario, its games on the host (:mod:`jgtest.methods.wuji.host`): game
variables as the policies' input and Wuji's states, a record that replays on the real engine, the
budget, and A2C's masking of the steps that only restart a game."""

import base64
import dataclasses
import io
import json
import re
import time

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from jgtest.agents.wuji_a2c import WujiA2C, WujiA2CConfig, WujiA2CHyperparams
from jgtest.cli import main
from jgtest.evo import OURS_VARIATION
from jgtest.methods import wuji
from jgtest.methods.wuji.host import FeatureSpec
from jgtest.records import read_bug_records
from jgtest.report.html import render_report
from jgtest.report.replay import replay
from jgtest.report.shrink import minimal, shrink_record
from jgtest.types import Transition

pytest.importorskip("vizdoom")
NO_KILL = "tests.bridges.doom_rules:NO_KILL"
#: Two policies on two games each, short A2C rounds: a run of a few seconds on the real engine;
#: our operators, pool and sampled evaluation, whose varied episodes reach the bugs the tests
#: replay within one generation.
TINY = wuji.WujiConfig(
    game="vizdoom:basic",
    game_kwargs=(("assertions", NO_KILL),),
    population=2,
    runs_per_eval=2,
    generations=1,
    a2c=WujiA2CConfig(updates_per_round=4, max_rounds=2),
    evaluation="sampled",
    variation=OURS_VARIATION,
    selection_pool="paper",
)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("wuji_doom")
    summary = wuji.run(TINY, out, strategies=("wuji", "random"))
    return out, summary


def test_wuji_plays_the_real_scenario_and_scores_its_policies(campaign):
    out, summary = campaign
    run = json.loads((out / "wuji" / "seed-0" / "summary.json").read_text())
    assert run["games"] == 4 and run["bug_kinds"] == [
        "crash",
        "stuck",
        "logical",
        "logical",
        "logical",
    ]
    # the initial evaluation, the children's, A2C's rounds and the trained children's: well past one
    # evaluation's 4 × 75 steps
    assert run["env_steps"] > 4 * 75 and run["state_coverage"] > 3 and run["cells_covered"] >= 2
    front = json.loads((out / "wuji" / "seed-0" / "population.json").read_text())
    # distinct states of a 75-step episode
    assert len(front["exploration"]) == 2 and all(1 <= es <= 75 for es in front["exploration"])
    assert all(np.isfinite(front["winning"]))
    assert summary["strategies"] == ["wuji", "random"] and summary["bug_kinds"] == run["bug_kinds"]


def test_a_bug_found_on_the_engine_replays(campaign):
    out, _ = campaign
    records = [
        r for s in ("wuji", "random") for r in read_bug_records(out / s / "seed-0" / "bugs.jsonl")
    ]
    kills = [r for r in records if r.bug_id == 4]
    assert kills, "shooting the scenario's monster breaks the user's assertion"
    record = kills[0]
    assert (
        record.kind == "logical"
        and "nobody is killed" in record.detail
        and record.game_kwargs == {"assertions": NO_KILL}
    )
    assert replay(record).reproduced
    # it fires at its last action
    assert not replay(
        dataclasses.replace(record, actions=record.actions[:-1], step=record.step - 1)
    ).reproduced


def test_the_step_budget_cuts_a_run(tmp_path):
    summary = wuji.host.run_on_host(
        dataclasses.replace(TINY, generations=None, budget_steps=500, strategy="random"), tmp_path
    )
    # a random generation: 2 rounds × 4 updates × 5 steps of the 4 games, 160 steps less the
    # restarts; the fourth crosses 500
    assert 500 - 4 < summary["env_steps"] <= 500 and summary["generations"] == 4


def test_steps_that_only_restart_a_game_are_not_learned_from():
    spec = _Spec()
    a2c = WujiA2C(spec, WujiA2CConfig(num_envs=2), max_steps=10)
    learner = a2c.init_learner(a2c.init_variables(jax.random.key(0)))
    rng = np.random.default_rng(0)
    traj = Transition(
        jnp.asarray(rng.random((5, 2, 3)), jnp.float32),
        jnp.asarray(rng.integers(0, 2, (5, 2))),
        jnp.asarray(rng.random((5, 2)), jnp.float32),
        jnp.zeros((5, 2), bool).at[3, 0].set(True),
        jnp.zeros((5, 2), bool),
        jnp.asarray(rng.random((5, 2, 3)), jnp.float32),
        jnp.asarray(rng.random((5, 2)), jnp.float32),
        jnp.zeros((5, 2)),
    )
    # game 0's episode ends at step 3; step 4 restarts it
    valid = jnp.ones((5, 2), bool).at[4, 0].set(False)
    hparams = WujiA2CHyperparams(ent_coef=0.0)

    @jax.jit
    def params_after(t):
        return jax.flatten_util.ravel_pytree(
            a2c.update(learner, t, hparams, valid).variables["params"]
        )[0]

    np.testing.assert_allclose(
        params_after(traj),
        params_after(traj.replace(reward=traj.reward.at[4, 0].set(100.0))),
        atol=1e-6,
    )
    learned = traj.replace(reward=traj.reward.at[3, 0].set(100.0))
    # a valid row's reward does move it
    assert np.abs(params_after(traj) - params_after(learned)).max() > 1e-4


def test_a_game_without_state_features_is_refused(capsys):
    code = main(["run", "wuji", "--game", "gym:CartPole-v1", "--out", "unused"])
    assert code == 2 and "state_features" in capsys.readouterr().err


class _Spec(FeatureSpec):
    """Three features and two actions, no game behind them."""

    def __init__(self):
        game = type(
            "G",
            (),
            {
                "name": "none",
                "num_cells": 4,
                "bug_kinds": ("crash",),
                "num_bugs": 1,
                "bug_names": ("crash",),
                "num_actions": 2,
                "max_steps_in_episode": 10,
                "feature_bounds": (np.zeros(3), np.ones(3)),
            },
        )
        super().__init__(game)


def test_the_report_opens_on_a_clip_of_each_bug_from_the_engine(campaign):
    out, _ = campaign
    page = render_report(out)
    broken = page[page.index('<section id="broken">') : page.index('<section id="config">')]
    clips = [
        Image.open(io.BytesIO(base64.b64decode(c)))
        for c in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", broken)
    ]
    # animated: the engine's frames, doubled
    assert clips and all(clip.n_frames > 1 and clip.size == (320, 240) for clip in clips)


def test_a_bug_found_on_the_engine_shrinks_within_its_time_limit(campaign):
    out, _ = campaign
    record = next(
        r
        for s in ("wuji", "random")
        for r in read_bug_records(out / s / "seed-0" / "bugs.jsonl")
        if r.bug_id == 4
    )
    start = time.perf_counter()
    # candidates one after another on a fresh engine each
    shrunk = shrink_record(record, time_limit_s=8.0)
    # the limit, and the last replays that check the result
    assert time.perf_counter() - start < 8.0 + 5.0
    assert len(shrunk.trace_min) <= len(record.actions) and replay(minimal(shrunk)).reproduced


def test_greedy_evaluation_on_the_engine_scores_the_front_it_keeps(tmp_path):
    config = dataclasses.replace(TINY, evaluation="greedy", strategy="ea_m")
    summary = wuji.host.run_on_host(config, tmp_path)
    front = json.loads((tmp_path / "population.json").read_text())
    (row,) = summary["lineage"]
    stored = [[front["exploration"][i], front["winning"][i]] for i in row["front"]]
    assert summary["env_steps"] > 0 and row["fresh"] is None
    np.testing.assert_allclose(row["stored"], stored, atol=1e-4)
