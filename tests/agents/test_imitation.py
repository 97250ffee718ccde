"""PPGTA's imitation trainer on tiny demonstrations: split, schedule, learning, early stopping, bad
input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.agents.imitation import (
    ImitationConfig,
    _masked,
    _run,
    act_distribution,
    driver,
    js_threshold,
    stepwise_js,
    train,
)
from jgtest.novelty import action_distribution, js_divergence
from jgtest.supervised import FitSettings, fit, split_indices

SMALL = (
    ("local_hidden", 8),
    ("global_hidden", 16),
    ("mlp", (32,)),
    ("cnn_dense", 32),
    ("cnn_layers", ((8, 4, 4), (8, 3, 2))),
)


def _demos(n=10, steps=12, seed=0):
    """Frames whose colour says the action: action a shows a frame of brightness 40·a
    (learnable)."""
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, 3, (n, steps))
    frames = (
        np.repeat(np.repeat((40 * actions)[..., None, None, None], 32, 2), 32, 3)
        .repeat(3, -1)
        .astype(np.uint8)
    )
    return {
        "frames": jnp.asarray(frames),
        "actions": jnp.asarray(actions, jnp.int32),
        "od_box": jnp.zeros((n, steps, 4), jnp.int32),
        "od_visible": jnp.zeros((n, steps), bool),
    }


def test_split_is_70_10_20_and_disjoint():
    train_idx, val_idx, test_idx = split_indices(50, (0.7, 0.1, 0.2))
    assert (len(train_idx), len(val_idx), len(test_idx)) == (35, 5, 10)
    assert len(set(train_idx) | set(val_idx) | set(test_idx)) == 50
    with pytest.raises(ValueError, match="at least 3 examples"):
        split_indices(2, (0.7, 0.1, 0.2))


@pytest.mark.slow
def test_the_student_learns_the_demonstrated_actions():
    config = ImitationConfig(
        num_actions=3,
        k=1,
        fit=FitSettings(learning_rate=1e-2, batch_size=4, epochs=12, patience=12),
        warmup_epochs=2,
        policy=SMALL,
    )
    demos = _demos()
    out = train(config, demos, jax.random.key(0))
    history = out["history"]
    assert history[-1]["val"] < 0.5 * history[0]["val"]
    i = int(out["test_idx"][0])
    played = act_distribution(
        config, out["params"], demos["frames"][i], demos["od_box"][i], demos["od_visible"][i]
    )
    shown = action_distribution(demos["actions"][i], 3)
    assert float(js_divergence(played, shown)) < 0.1
    # The success threshold: the imitation's validation score (the default), the sampled histograms'
    # mean, or laxer by two sd.
    step = js_threshold(config, out["params"], demos, out["val_idx"], jax.random.key(2))
    mean = js_threshold(
        config, out["params"], demos, out["val_idx"], jax.random.key(2), rule="mean"
    )
    lax = js_threshold(
        config, out["params"], demos, out["val_idx"], jax.random.key(2), rule="mean+2sd"
    )
    assert step["rule"] == "step" and step["threshold"] == pytest.approx(
        float(stepwise_js(config, out["params"], demos, out["val_idx"]).mean())
    )
    assert mean["threshold"] == mean["mean"] and lax["threshold"] == pytest.approx(
        mean["mean"] + 2 * mean["std"]
    )
    assert (
        step["thresholds"] == mean["thresholds"] == lax["thresholds"]
        and lax["threshold"] >= mean["threshold"]
    )
    # A sampled histogram over a whole trajectory is closer to the demonstrations' than one step's
    # distribution to one action.
    assert step["threshold"] > lax["threshold"]
    with pytest.raises(ValueError, match="unknown JS threshold rule 'median'"):
        js_threshold(config, out["params"], demos, out["val_idx"], jax.random.key(2), rule="median")


@pytest.mark.slow
def test_early_stopping_keeps_the_best_epoch():
    config = ImitationConfig(
        num_actions=3,
        k=2,
        fit=FitSettings(learning_rate=0.5, batch_size=4, epochs=30, patience=2),
        warmup_epochs=1,
        lr_start=0.5,
        policy=SMALL,
    )
    out = train(config, _demos(), jax.random.key(1))
    assert out["stopped_early"] and len(out["history"]) < 30
    # two epochs without improvement after the best
    assert out["best_epoch"] == len(out["history"]) - 1 - 2


def test_early_stopping_never_keeps_warm_up_weights():
    # The best validation comes during the warm-up (epoch 1); the kept weights are the best after
    # it.
    vals = iter([1.0, 0.2, 0.9, 0.6, 0.7, 0.8, 0.95, 0.99, 0.5])
    out = fit(
        0,
        lambda state, idx, i: (state + 1, 0.0),
        lambda state: next(vals),
        np.arange(4),
        batch_size=4,
        epochs=9,
        patience=3,
        min_epochs=3,
    )
    # epoch 3's weights (4 steps in), not epoch 1's
    assert out["best_epoch"] == 3 and out["state"] == 4
    # 3 epochs after the best without a better one
    assert out["stopped_early"] and len(out["history"]) == 7


def test_the_labels_are_the_demonstrators_intended_actions_where_it_recorded_them():
    demos = _demos()
    # a scripted demonstrator's: executed and intended differ
    noisy = {**demos, "intended": (demos["actions"] + 1) % 3}
    assert np.array_equal(ImitationConfig().targets(noisy), noisy["intended"])
    assert np.array_equal(ImitationConfig(labels="executed").targets(noisy), noisy["actions"])
    # a human's: only what was played
    assert np.array_equal(ImitationConfig().targets(demos), demos["actions"])


def test_extra_trajectories_join_the_training_split_only():
    config = ImitationConfig(
        num_actions=3,
        k=1,
        fit=FitSettings(learning_rate=1e-2, batch_size=4, epochs=1),
        warmup_epochs=1,
        policy=SMALL,
    )
    demos, extra = _demos(), _demos(n=3, seed=1)
    plain = split_indices(10, config.fit.split, 0)
    out = train(config, demos, jax.random.key(0), extra={**extra, "intended": extra["actions"]})
    # after the demonstrations
    np.testing.assert_array_equal(out["train_idx"], np.concatenate([plain[0], [10, 11, 12]]))
    np.testing.assert_array_equal(out["val_idx"], plain[1]) and np.testing.assert_array_equal(
        out["test_idx"], plain[2]
    )
    with pytest.raises(ValueError, match="extra trajectories must match"):
        train(config, demos, jax.random.key(0), extra=_demos(n=3, steps=5))
    with pytest.raises(ValueError, match="they lack intended"):
        train(config, {**demos, "intended": demos["actions"]}, jax.random.key(0), extra=extra)


def test_the_driver_plays_the_policy_as_it_runs_over_a_trajectory():
    """Closed loop, one frame at a time (what a learner's own walks are recorded with), the driver
    samples from the logits the policy gives the same frames as a whole trajectory, OD-masked as in
    training."""
    config = ImitationConfig(num_actions=3, k=2, policy=SMALL)
    net = config.network
    boxes = jnp.tile(jnp.asarray([4, 4, 20, 20], jnp.int32), (1, 6, 1))
    visible = jnp.asarray([[True, False, True, True, False, True]])
    frames = jnp.asarray(np.random.default_rng(0).integers(0, 256, (1, 6, 32, 32, 3)), jnp.uint8)
    params = net.init(jax.random.key(0), frames[:, :2], net.initial_carry(1))
    logits, _ = _run(net, params, _masked(frames, boxes, visible), config.k)
    play = driver(config, params)
    info = lambda t: {"od_box": boxes[0, t], "od_visible": visible[0, t]}
    carry = play.init(frames[0, 0], info(0))
    for t in range(6):
        key = jax.random.key(10 + t)
        action, carry = play.act(carry, frames[0, t], info(t), key)
        assert int(action) == int(jax.random.categorical(key, logits[0, t])), t


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "k .frames per step."),
        ({"lam": -1.0}, "λ must be non-negative"),
        ({"fit": {"split": (0.5, 0.5, 0.5)}}, "split must be"),
        ({"fit": {"epochs": 0}}, "epochs, batch_size and patience"),
        ({"labels": "noisy"}, "labels must be one of"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ImitationConfig(**{k: FitSettings(**v) if k == "fit" else v for k, v in kwargs.items()})


def test_an_empty_demonstration_set_is_refused():
    demos = _demos(n=0)
    with pytest.raises(ValueError, match="demonstration set is empty"):
        train(ImitationConfig(num_actions=3, policy=SMALL), demos, jax.random.key(0))


@pytest.mark.slow
def test_masked_inverse_dynamics_learns_the_action_between_two_frames():
    from jgtest.agents import inverse_dynamics

    # frame t+1 shows the action taken on frame t (brightness 40·a): predictable from the pair, not
    # from frame t alone
    demos = _demos(n=12, steps=10)
    shifted = {
        **demos,
        "frames": jnp.concatenate([demos["frames"][:, :1], demos["frames"][:, :-1]], axis=1),
    }
    config = inverse_dynamics.InverseDynamicsConfig(
        num_actions=3,
        cnn_layers=((8, 4, 4), (8, 3, 2)),
        cnn_dense=32,
        fit=FitSettings(batch_size=16, epochs=15, patience=15),
    )
    out = inverse_dynamics.train(config, [shifted], jax.random.key(0))
    assert out["test_accuracy"] > 0.9 > out["chance"]
    policy = ImitationConfig(num_actions=3, policy=SMALL).network
    shapes = jax.tree.map(
        jnp.shape,
        policy.init(jax.random.key(0), demos["frames"][:1, :2], policy.initial_carry(1))["params"][
            "fe"
        ],
    )
    assert jax.tree.map(jnp.shape, out["encoder"]) == shapes  # drops into the imitation policy's FE
    with pytest.raises(ValueError, match="demonstration set is empty"):
        inverse_dynamics.train(config, [_demos(n=0)], jax.random.key(0))


@pytest.mark.slow
def test_a_frozen_encoder_stays_as_given():
    config = ImitationConfig(
        num_actions=3,
        k=1,
        fit=FitSettings(learning_rate=1e-2, batch_size=4, epochs=4, patience=4),
        warmup_epochs=1,
        policy=SMALL,
        freeze_encoder=True,
    )
    demos = _demos()
    net = config.network
    given = jax.tree.map(
        lambda x: x + 0.01,
        net.init(jax.random.key(5), demos["frames"][:1, :1], net.initial_carry(1))["params"]["fe"],
    )
    out = train(config, demos, jax.random.key(0), encoder=given)
    jax.tree.map(np.testing.assert_array_equal, out["params"]["params"]["fe"], given)
    assert out["history"][-1]["val"] < out["history"][0]["val"]  # the rest still learns
