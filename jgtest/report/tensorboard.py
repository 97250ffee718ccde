"""Training and campaign curves as TensorBoard event files (``--tensorboard DIR``), written with
tensorboardX, the writer that needs no TensorFlow (``pip install -e '.[tensorboard]'``).

Example::

    with CurveWriter("runs/tb/ppo") as curves:
        curves.scalars({"eval_return_mean": returns}, step=period)  # the mean over seeds
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jgtest import extras


class CurveWriter:
    """Scalars into one TensorBoard run directory, each the mean of what it is given (a value per
    seed, say), NaNs left out.

    Raises:
      BadInput: tensorboardX is not installed (naming the extra).
    """

    def __init__(self, log_dir: str | Path):
        extras.require("tensorboardX", "tensorboard", "--tensorboard")
        from tensorboardX import SummaryWriter

        self._writer = SummaryWriter(str(log_dir))

    def scalars(self, values: dict, step: int, prefix: str = "") -> None:
        for name, value in values.items():
            array = np.asarray(value, np.float64)
            if array.size and np.isfinite(array).any():
                self._writer.add_scalar(f"{prefix}{name}", float(np.nanmean(array)), step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> CurveWriter:
        return self

    def __exit__(self, *_) -> None:
        self.close()
