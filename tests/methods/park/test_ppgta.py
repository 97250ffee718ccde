"""PPGTA end to end on tiny untrained models: save and load, the explorer's initialisation, a
campaign; and (slow) the trained models' quality: JS below threshold for both behaviours, the
detector's and the texture oracle's precision and recall."""

import dataclasses
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jgtest
from jgtest.envs.park_experts import demonstrations
from jgtest.methods.park import models as ppgta_models
from jgtest.methods.park import ppgta
from jgtest.methods.park.bridged import device_run
from jgtest.methods.park.campaign import run_campaign
from jgtest.methods.park.ooi_testing import TESTING
from jgtest.novelty import AlphaSchedule
from jgtest.oracles import texture
from jgtest.records import read_bug_records
from jgtest.vision import detector as detection
from tests.conftest import xla_defaults_env

TINY = ppgta_models.PPGTAModelsConfig(
    size=64,
    num_oois=200,
    path_trajectories=6,
    path_steps=24,
    circle_trajectories=6,
    circle_steps=24,
    k=2,
    cnn_layers=((8, 8, 4), (8, 4, 2)),
    cnn_dense=32,
    policy=(("local_hidden", 8), ("global_hidden", 16), ("mlp", (16,))),
    inverse_epochs=1,
    imitation_epochs=2,
    imitation_warmup=1,
    detector_shots=40,
    detector_epochs=1,
    oracle_shots=60,
    oracle_epochs=1,
)


def _untrained(config: ppgta_models.PPGTAModelsConfig) -> ppgta_models.PPGTAModels:
    """Every model at its initialisation (the wiring, not the learning, is under test here; the
    trained pipeline's quality is the slow test's)."""
    im = config.imitation(9)
    net = im.network
    frames = jnp.zeros((1, config.k, 64, 64, 3), jnp.uint8)
    # compiled once: eager initialisation dispatches op by op (seconds on CPU)
    init = jax.jit(net.init)
    policies = {
        b: init(jax.random.key(i), frames, net.initial_carry(1))
        for i, b in enumerate(ppgta_models.BEHAVIOURS)
    }
    js = {
        b: {"threshold": 0.3, "mean": 0.1, "std": 0.1, "reference": jnp.full(9, 1 / 9)}
        for b in ppgta_models.BEHAVIOURS
    }
    det = detection.Detector(
        config.detector, jax.jit(config.detector.network.init)(jax.random.key(2), frames[:, 0]), 64
    )
    oracle_params = jax.jit(texture.TextureNet(config.oracle.width).init)(
        jax.random.key(3), jnp.zeros((1, 32, 32, 3))
    )
    oracle = texture.TextureOracle(config.oracle, oracle_params)
    return ppgta_models.PPGTAModels(
        config, policies, js, det, oracle, {"detector": {"test": {"precision": 0.0, "recall": 0.0}}}
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    where = tmp_path_factory.mktemp("models")
    untrained = _untrained(TINY)
    ppgta_models.save_models(untrained, where)
    return untrained, where


def test_the_models_are_saved_and_loaded_back(models):
    trained, where = models
    loaded = ppgta_models.load_models(where, TINY)
    # the config they were trained with, from models.json
    assert ppgta_models.load_models(where).config == TINY
    for behaviour in ppgta_models.BEHAVIOURS:
        jax.tree.map(
            np.testing.assert_array_equal, trained.policies[behaviour], loaded.policies[behaviour]
        )
        assert (
            loaded.js[behaviour]["threshold"] == pytest.approx(trained.js[behaviour]["threshold"])
            and trained.js[behaviour]["threshold"] > 0
        )
    jax.tree.map(np.testing.assert_array_equal, trained.detector.params, loaded.detector.params)
    assert json.loads((where / "models.json").read_text())["metrics"] == trained.metrics
    with pytest.raises(ValueError, match="another config"):
        ppgta_models.load_models(where, dataclasses.replace(TINY, k=3))
    with pytest.raises(FileNotFoundError, match="no PPGTA models"):
        ppgta_models.load_models(where / "nowhere", TINY)


def test_models_trained_before_a_setting_existed_load_with_its_default(models, tmp_path):
    _, where = models
    meta = json.loads((where / "models.json").read_text())
    del meta["config"]["dagger_rounds"]
    (tmp_path / "models.json").write_text(json.dumps(meta))
    (tmp_path / "models.msgpack").write_bytes((where / "models.msgpack").read_bytes())
    assert ppgta_models.load_models(tmp_path, TINY).config == TINY
    with pytest.raises(ValueError, match="it differs in dagger_rounds"):
        ppgta_models.load_models(tmp_path, dataclasses.replace(TINY, dagger_rounds=1))


def test_dagger_trains_the_path_policy_again_on_its_own_labelled_walks(models):
    trained, _ = models
    config = dataclasses.replace(TINY, dagger_rounds=1)
    env, params = jgtest.make("ParkWorld-v0", **config.game_kwargs)
    demos = demonstrations(
        env, params, jax.random.key(0), "path", config.path_trajectories, config.path_steps
    )
    im = config.imitation(env.num_actions)
    out, rounds = ppgta_models.path_dagger(
        config,
        env,
        params,
        im,
        demos,
        {"params": trained.policies["path"]},
        None,
        jax.random.key(1),
        log=lambda _: None,
    )
    assert len(rounds) == 2  # the first policy's walks, then the retrained one's
    for played in rounds:
        assert 0 <= played["on_path"] <= 1 and all(
            0 <= played[k] <= 1
            for k in ("agreement_on_path", "agreement_off_path")
            if played[k] is not None
        )
    # The walks join the training split: the demonstrations' 70% and all the learner's; validation
    # and test stay the demonstrations'.
    assert (
        len(out["train_idx"]) == 4 + config.path_trajectories
        and out["train_idx"].max() == 2 * config.path_trajectories - 1
    )
    assert (
        out["val_idx"].max() < config.path_trajectories
        and out["test_idx"].max() < config.path_trajectories
    )
    assert not np.array_equal(
        out["params"]["params"]["head"]["kernel"],
        trained.policies["path"]["params"]["head"]["kernel"],
    )


def _assert_actor_and_critic_start_as_the_path_policy(params, path):
    for name, sub in params["actor"]["params"].items():
        jax.tree.map(np.testing.assert_array_equal, sub, path[name])
    for name, sub in params["critic"]["params"].items():
        if name != "head":
            jax.tree.map(np.testing.assert_array_equal, sub, path[name])
    # the value head starts at zero
    assert float(jnp.abs(params["critic"]["params"]["head"]["kernel"]).sum()) == 0.0


def test_a_campaign_explores_tests_and_records(models, tmp_path):
    trained, _ = models
    config = ppgta.PPGTAConfig(
        episodes=2,
        num_envs=2,
        episode_steps=60,
        rollout_steps=30,
        models=TINY,
        test_steps=12,
        trigger_pixels=60,
    )
    campaign = ppgta.PPGTACampaign(config, trained)
    carry = campaign.init(jax.random.key(0))
    _assert_actor_and_critic_start_as_the_path_policy(
        carry["ppo"][0], trained.policies["path"]["params"]
    )
    # typed as a played round's carry, so that start_round compiles once for every round
    assert not [
        jax.tree_util.keystr(p)
        for p, x in jax.tree_util.tree_leaves_with_path(carry)
        if x.weak_type
    ]
    learner_keys = tuple(carry)
    carry = campaign.start_round(carry, 0)
    carry, out = campaign.rollout(carry, jax.random.key(1))
    alpha = np.asarray(out["alpha"])
    assert alpha.shape == (30, 2) and alpha.min() >= 0.5 - 1e-6 and alpha.max() <= 0.8 + 1e-6
    # −KL ≤ 0
    assert np.isfinite(np.asarray(out["r_p"])).all() and (np.asarray(out["r_p"]) <= 1e-6).all()
    # r^p = −KL(π^e_{1:t} ‖ π^p_{1:t}) (the default): the episode carries the sum of its exploring
    # steps' KLs into the next rollout
    assert config.preference == "trajectory"
    exploring_kl = -np.where(np.asarray(out["testing"]), 0.0, np.asarray(out["r_p"]))
    np.testing.assert_allclose(carry["kl_so_far"], exploring_kl.sum(axis=0), rtol=1e-5, atol=1e-7)
    # 0 when an episode begins
    assert (
        np.asarray(campaign.start_round({k: carry[k] for k in learner_keys}, 1)["kl_so_far"]).max()
        == 0.0
    )
    # A test that drives game 0 through a whole rollout: its explorer's and path policy's memories
    # wait for it (game 1's move on), its window of frames keeps up with the game.
    testers = carry["testers"].replace(
        mode=carry["testers"].mode.at[0].set(TESTING),
        target=carry["testers"].target.at[0].set(0),
        steps=carry["testers"].steps.at[0].set(-100),
    )
    before = {**carry, "testers": testers}
    after, out = campaign.rollout(before, jax.random.key(2))
    assert np.asarray(out["testing"])[:, 0].all()
    held = lambda tree: [
        np.asarray(tree["obs"]["carry_actor"]),
        np.asarray(tree["obs"]["carry_critic"]),
        np.asarray(tree["carry_path"]),
    ]
    for old_memory, new_memory in zip(held(before), held(after)):
        np.testing.assert_array_equal(new_memory[0], old_memory[0])
        assert not np.array_equal(new_memory[1], old_memory[1])
    assert not np.array_equal(
        np.asarray(after["obs"]["features"][0]), np.asarray(before["obs"]["features"][0])
    )
    # the fixed FE's window, encoded once
    np.testing.assert_array_equal(after["obs"]["features"], after["path_window"])
    frames = jnp.asarray(
        np.random.default_rng(0).integers(0, 256, (2, TINY.k, 64, 64, 3)), jnp.uint8
    )
    memories = {
        "carry_actor": after["obs"]["carry_actor"],
        "carry_critic": after["obs"]["carry_critic"],
    }
    features = campaign.encode("path", frames.reshape(-1, 64, 64, 3)).reshape(2, TINY.k, -1)
    from_frames, from_features = (
        campaign.network.step(after["ppo"][0], {view: x, **memories})
        for view, x in (("frames", frames), ("features", features))
    )
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5),
        from_frames,
        from_features,
    )
    # ppgta.run_with_models, on the campaign compiled above
    summary = run_campaign(campaign, "ppgta", tmp_path, trained.oracle)
    assert 0 < summary["pathway_coverage"] < 1 and summary["ooi_tested"] > 0
    assert summary["test_success_rate"] == summary["ooi_success"] / summary["ooi_total"]
    # each tested object's JS, to judge under any threshold
    judged = [v for v in summary["test_js"] if v is not None]
    assert (
        len(judged) == summary["ooi_tested"]
        and sum(v < trained.js["circle"]["threshold"] for v in judged) == summary["ooi_success"]
    )
    assert set(summary["texture_oracle"]) >= {"precision", "recall"}
    flagged = np.asarray(summary["outcomes"]) != "missed"
    # (replaying them: test_inspector's oracle-record test)
    records = read_bug_records(tmp_path / "bugs.jsonl")
    assert records and all(
        r.kind == "texture" and "texture oracle flags" in r.detail for r in records
    )
    # flagged objects were tested
    assert {r.bug_id for r in records} <= set(np.flatnonzero(flagged))
    assert (tmp_path / "checkpoints").is_dir() and (tmp_path / "tests.png").exists()
    # What drives a bridged game: the run's explorer, as PPO left it after its 2 updates (1 round of
    # 2 rollouts)
    restored_campaign, restored = device_run(tmp_path, trained)
    assert restored_campaign.config == config and int(restored["ppo"][2]) == 2
    actor, path = restored["ppo"][0]["actor"]["params"], trained.policies["path"]["params"]
    changed = lambda new, old: any(
        jax.tree.leaves(jax.tree.map(lambda a, b: not np.array_equal(a, b), new, old))
    )
    # it learned, on the path policy's fixed FE
    assert changed(actor, {k: path[k] for k in actor}) and "fe" not in actor
    with pytest.raises(ValueError, match="the models it was trained with"):
        device_run(tmp_path, dataclasses.replace(trained, config=dataclasses.replace(TINY, k=3)))


@pytest.mark.slow
def test_with_fine_tune_fe_the_actor_and_the_critic_train_their_own_fe(models):
    trained, _ = models
    config = ppgta.PPGTAConfig(models=TINY, fine_tune_fe=True)
    im = TINY.imitation(9)
    network = ppgta.ExplorerNetwork(im.network, im.network.clone(num_actions=1))
    params = ppgta.explorer_params(
        trained.policies["path"], network.critic, jax.random.key(0), config.fine_tune_fe
    )
    _assert_actor_and_critic_start_as_the_path_policy(params, trained.policies["path"]["params"])
    assert "fe" in params["actor"]["params"] and "fe" in params["critic"]["params"]
    obs = {
        "frames": jnp.full((3, TINY.k, 64, 64, 3), 128, jnp.uint8),
        "carry_actor": im.network.initial_carry(3),
        "carry_critic": im.network.initial_carry(3),
    }
    # the policy's output reaches the actor's FE
    grads = jax.grad(lambda p: jnp.sum(network.apply(p, obs)[0] ** 2))(params)
    assert any(float(jnp.abs(g).sum()) > 0 for g in jax.tree.leaves(grads["actor"]["params"]["fe"]))


def test_bad_settings_are_refused_before_anything_compiles():
    with pytest.raises(ValueError, match="k .frames per step."):
        ppgta_models.PPGTAModelsConfig(k=0)
    with pytest.raises(ValueError, match="circle_patience"):
        ppgta_models.PPGTAModelsConfig(circle_patience=0)
    with pytest.raises(ValueError, match="dagger_rounds must be non-negative"):
        ppgta_models.PPGTAModelsConfig(dagger_rounds=-1)
    with pytest.raises(ValueError, match="dagger_rounds needs imitation_labels='intended'"):
        ppgta_models.PPGTAModelsConfig(dagger_rounds=1, imitation_labels="executed")
    with pytest.raises(ValueError, match="detector must be one of"):
        ppgta.PPGTAConfig(detector="yolo")
    with pytest.raises(ValueError, match="preference must be one of"):
        ppgta.PPGTAConfig(preference="episode")
    with pytest.raises(ValueError, match="α bounds"):
        ppgta.PPGTAConfig(alpha=AlphaSchedule(low=0.8, high=0.5, start=0.6))
    with pytest.raises(ValueError, match="ensemble variance"):
        ppgta.PPGTAConfig(
            rnd=dataclasses.replace(ppgta.PPGTAConfig().rnd, reward="error", members=1)
        )


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_trained_models_meet_the_papers_bars_and_ppgta_outexplores_inspector(tmp_path):
    # As a user runs it, in a process of its own with XLA's defaults (under the tests'
    # fast-compiling flags, tests/conftest.py, the default models had not finished training after 28
    # minutes): the default models trained with seed 0 (15 minutes on 2 cores), then the three
    # agents for 10 episodes from the same starts (the 45-episode, 3-seed figures are
    # benchmarks/ppgta_compare.py's). 20 to 35 minutes on 2 cores.
    out = tmp_path / "compare"
    command = [
        sys.executable,
        "-m",
        "jgtest.cli",
        "run",
        "compare-explorers",
        "--game",
        "ParkWorld-v0",
        "--seed",
        "0",
        "--episodes",
        "10",
        "--out",
        str(out),
        "--quiet",
    ]
    run = subprocess.run(
        command, capture_output=True, text=True, env=xla_defaults_env(), timeout=3300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    m = json.loads((out / "models" / "models.json").read_text())["metrics"]
    # held-out demonstrations pass their behaviour's test, judged as a campaign's
    for behaviour in ppgta_models.BEHAVIOURS:
        # (§VI-B, the threshold from the validation trajectories): all the path ones and 28 of the
        # 30 360° walks on seed 0
        assert m[behaviour]["js_test_below_threshold"] >= 0.9, (behaviour, m[behaviour])
    # The paper's detector: AP 72–75% per type (Table I); ours, precision and recall at IoU 0.5
    # (0.76 and 0.90 on the calibrated park)
    assert m["detector"]["test"]["precision"] >= 0.7 and m["detector"]["test"]["recall"] >= 0.8, m[
        "detector"
    ]["test"]
    # precision 1.0, recall 0.93 on seed 0's 30 held-out walks: it flags 14 of their 15 bugged
    # objects
    walks = m["oracle"]["walks"]
    assert walks["precision"] > 0.8 and walks["recall"] >= 0.5, walks
    assert m["inverse_dynamics"]["test_accuracy"] > m["inverse_dynamics"]["chance"] + 0.2
    explored, *others = (
        json.loads((out / agent / "summary.json").read_text())
        for agent in ("ppgta", "inspector", "random")
    )
    # PPGTA 32.5% of the pathway and 74 objects; Inspector and random about 1% and 1–3 objects
    for other in others:
        assert explored["pathway_coverage"] > 1.5 * other["pathway_coverage"], (
            explored["pathway_coverage"],
            other["pathway_coverage"],
        )
        assert explored["ooi_tested"] > other["ooi_tested"], (
            explored["ooi_tested"],
            other["ooi_tested"],
        )
    # The oracle on PPGTA's own learned walks (beyond the paper): recall 0.65–0.72 over the 3-seed
    # comparison (precision 0.95–1.0)
    assert (
        explored["texture_oracle"]["precision"] > 0.8 and explored["texture_oracle"]["recall"] > 0.4
    )
