"""sentence-transformers' all-MiniLM-L6-v2 embeddings of fixed sentences, recorded for the Flax
encoder's test.

``python -m tests.nets.minilm_reference`` records them into :data:`RECORDED` with the reference
implementation (``sentence-transformers``, in the ``bench`` extra with torch), loading the ``nlp``
extra's wheel's ``model.zip`` unpacked into a temporary folder.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import numpy as np

#: Where the reference embeddings are recorded.
RECORDED = Path(__file__).resolve().parent.parent / "data" / "minilm_embeddings.npz"
#: Short and long, plain and odd: a plan's lines, padding-length differences, an unknown word.
SENTENCES = (
    "Press the switch.",
    "Hit the switch.",
    "Jump over the lava.",
    "Go to the switch and press it, then jump across the pit and touch the shrine.",
    "Grab the key, then open the door.",
    "xyzzy plugh",
    "Flip the switch by the stairs.",
    "the thing that opens the door",
)


def reference_embeddings() -> np.ndarray:
    """The reference's normalised embeddings of :data:`SENTENCES`."""
    from sentence_transformers import SentenceTransformer

    from jgtest.nets.sentence_encoder import minilm_zip

    with tempfile.TemporaryDirectory() as where:
        zipfile.ZipFile(minilm_zip()).extractall(where)
        model = SentenceTransformer(where, device="cpu")
        return model.encode(list(SENTENCES), normalize_embeddings=True)


if __name__ == "__main__":
    np.savez_compressed(RECORDED, embeddings=reference_embeddings(), sentences=np.array(SENTENCES))
    print(f"wrote {RECORDED}")
