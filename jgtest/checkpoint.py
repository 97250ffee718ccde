"""Periodic save and resume of training state, refusing checkpoints of another config.

A :class:`Checkpointer` wraps :class:`orbax.checkpoint.CheckpointManager` for the
one thing a training loop needs: write the whole training state (any pytree of
arrays: parameters, optimizer state, environment states, PRNG keys, counters)
every so often, and on restart find the newest one and load it back into the
same structure. Two guards make resuming safe:

* a checkpoint directory belongs to one config: its fingerprint
  (:func:`config_fingerprint`) is written to ``DIR/jgtest_config.json`` when the
  first :class:`Checkpointer` opens the directory, and any later
  :class:`Checkpointer` (or restore) with a different fingerprint is refused
  with a ``ValueError``;
* :meth:`Checkpointer.restore` checks the stored tree against ``state_like``
  (same leaf paths, same shapes, same PRNG key implementations) and names every
  difference instead of failing deep inside orbax.

Typed PRNG key arrays (``jax.random.key``) cannot be serialized as such; they
are stored as their ``jax.random.key_data`` and the key implementation's name
is kept in the step's metadata, so they come back as keys of the same
implementation.

Example::

    config = PPOConfig(...)                      # a frozen dataclass
    ckpt = Checkpointer("runs/ppo/ckpt", config_fingerprint(config))
    state = init_state(jax.random.key(0))
    if (step := ckpt.latest_step()) is not None:
        state = ckpt.restore(state)              # resume
    for step in range(step or 0, num_updates):
        state = update(state)
        if (step + 1) % 100 == 0:
            ckpt.save(step + 1, state)           # durable when it returns
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

PyTree = Any

#: Name of the file, inside a checkpoint directory, holding the config fingerprint.
CONFIG_FILENAME = "jgtest_config.json"
_FORMAT_VERSION = 1
_KEY_IMPLS = "jgtest_key_impls"
_FINGERPRINT = "jgtest_config_fingerprint"
_ITEM = "default"  # orbax's name for the single item of a CheckpointManager
_MAX_LISTED = 8


# ----------------------------------------------------------------------------
# Config fingerprint
# ----------------------------------------------------------------------------
def _jsonable(obj: Any) -> Any:
    """Converts a config into plain JSON values, deterministically."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # Same content as dataclasses.asdict, without its deepcopy of leaves.
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return f"{type(obj).__qualname__}.{obj.name}"
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, float)):
        if isinstance(obj, float) and not math.isfinite(obj):
            return repr(obj)  # "nan", "inf", "-inf": stable and valid JSON
        return obj
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.ndarray, np.generic, jax.Array)):
        return _jsonable(np.asarray(obj).tolist())
    if isinstance(obj, type) or callable(obj):
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if name is not None and "<lambda>" not in name and "<locals>" not in name:
            return f"{getattr(obj, '__module__', '')}.{name}"
    raise TypeError(
        f"config_fingerprint: cannot fingerprint a value of type {type(obj).__name__} ({obj!r}); "
        "configs should hold numbers, strings, bools, None, tuples, dicts, enums and nested dataclasses"
    )


def config_fingerprint(config: Any) -> str:
    """Stable SHA-256 fingerprint of a config.

    The config (a frozen dataclass, possibly nested, or a dict) is turned into
    JSON with sorted keys (dataclasses field by field as ``dataclasses.asdict``
    does, tuples as lists, numpy/jax scalars and arrays as lists of numbers,
    enums as ``Class.NAME``, module-level classes and functions by qualified
    name) and hashed. The result depends only on the values, so it is the same
    across processes, machines and Python sessions.

    Args:
      config: a dataclass instance or a mapping.

    Returns:
      The 64-character hex digest.

    Raises:
      TypeError: if the config holds a value with no stable JSON form (an
        object, a lambda).

    Example::

        >>> config_fingerprint({"lr": 3e-4, "sizes": (64, 64)}) == \\
        ...     config_fingerprint({"sizes": [64, 64], "lr": 3e-4})
        True
    """
    text = json.dumps(_jsonable(config), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------
# Pytree <-> nested dict of arrays
# ----------------------------------------------------------------------------
def _path_part(entry: Any) -> str:
    if isinstance(entry, jax.tree_util.DictKey):
        return str(entry.key)
    if isinstance(entry, jax.tree_util.SequenceKey):
        return str(entry.idx)
    if isinstance(entry, jax.tree_util.GetAttrKey):
        return entry.name
    if isinstance(entry, jax.tree_util.FlattenedIndexKey):
        return str(entry.key)
    return str(entry)


def _leaf_paths(tree: PyTree) -> tuple[list[tuple[str, ...]], list[Any], Any]:
    leaves_with_paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    paths = [tuple(_path_part(e) for e in path) for path, _ in leaves_with_paths]
    leaves = [leaf for _, leaf in leaves_with_paths]
    names = [".".join(p) for p in paths]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"checkpoint: the state has leaves whose paths collide when written: {dup}")
    return paths, leaves, treedef


def _nest(paths: list[tuple[str, ...]], values: list[Any]) -> dict:
    out: dict = {}
    for path, value in zip(paths, values):
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"checkpoint: leaf path {'.'.join(path)} collides with another leaf")
        if path[-1] in node:
            raise ValueError(f"checkpoint: leaf path {'.'.join(path)} collides with another leaf")
        node[path[-1]] = value
    return out


def _flatten_nested(tree: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Flattens the nested-dict metadata tree orbax returns."""
    if isinstance(tree, Mapping):
        out = {}
        for k, v in tree.items():
            out.update(_flatten_nested(v, prefix + (str(k),)))
        return out
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "shape"):
        out = {}
        for i, v in enumerate(tree):
            out.update(_flatten_nested(v, prefix + (str(i),)))
        return out
    return {prefix: tree}


def _is_key(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _key_impl(x: Any) -> str:
    if isinstance(x, jax.ShapeDtypeStruct):
        found: list[str] = []
        jax.eval_shape(lambda k: found.append(str(jax.random.key_impl(k))), x)
        return found[0]
    return str(jax.random.key_impl(x))


def _fmt(path: tuple[str, ...]) -> str:
    return ".".join(path) if path else "<root>"


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return shown + (f", ... ({more} more)" if more > 0 else "")


# ----------------------------------------------------------------------------
# Checkpointer
# ----------------------------------------------------------------------------
class Checkpointer:
    """Saves and restores training state in one directory, for one config.

    Args:
      directory: where checkpoints live (created if missing); one
        sub-directory per saved step, plus ``jgtest_config.json``.
      config_fingerprint: :func:`config_fingerprint` of the run's config. A
        directory already holding a different fingerprint is refused.
      max_to_keep: how many of the newest steps to keep; older ones are
        deleted after each save.

    Raises:
      ValueError: if the directory was written for a different config, or
        holds checkpoints but no ``jgtest_config.json``.

    Example::

        ckpt = Checkpointer(tmp_dir, config_fingerprint(config), max_to_keep=2)
        ckpt.save(10, {"params": params, "key": key})
        restored = ckpt.restore({"params": params, "key": key})
    """

    def __init__(self, directory: str | os.PathLike, config_fingerprint: str, max_to_keep: int = 2):
        if not isinstance(config_fingerprint, str) or not config_fingerprint:
            raise ValueError("Checkpointer: config_fingerprint must be a non-empty string")
        if max_to_keep < 1:
            raise ValueError(f"Checkpointer: max_to_keep must be >= 1, got {max_to_keep}")
        self.directory = os.path.abspath(os.fspath(directory))
        self.config_fingerprint = config_fingerprint
        self.max_to_keep = int(max_to_keep)
        os.makedirs(self.directory, exist_ok=True)
        # One item ("default"), saved and restored by the standard pytree handler. Registering
        # the handler up front lets a fresh manager (a resumed run) read existing steps' metadata.
        handler = ocp.StandardCheckpointHandler()
        registry = ocp.handlers.DefaultCheckpointHandlerRegistry()
        registry.add(_ITEM, ocp.args.StandardSave, handler)
        registry.add(_ITEM, ocp.args.StandardRestore, handler)
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                preservation_policy=ocp.checkpoint_managers.LatestN(n=self.max_to_keep),
                enable_async_checkpointing=False,
                create=True,
            ),
            handler_registry=registry,
        )
        try:
            config_path = os.path.join(self.directory, CONFIG_FILENAME)
            if os.path.exists(config_path):
                self._check_fingerprint()
            elif self._manager.all_steps():
                raise ValueError(
                    f"checkpoint at {self.directory} holds checkpoints (steps {list(self._manager.all_steps())}) "
                    f"but no {CONFIG_FILENAME}, so its config cannot be checked; use another directory"
                )
            else:
                self._write_fingerprint(config_path)
        except BaseException:
            self._manager.close()
            raise

    # ----- fingerprint file ----------------------------------------------------
    def _write_fingerprint(self, config_path: str) -> None:
        payload = {"config_fingerprint": self.config_fingerprint, "format": _FORMAT_VERSION}
        fd, tmp = tempfile.mkstemp(prefix=".jgtest_config.", dir=self.directory)
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, config_path)

    def _check_fingerprint(self) -> None:
        config_path = os.path.join(self.directory, CONFIG_FILENAME)
        try:
            with open(config_path) as f:
                stored = json.load(f)["config_fingerprint"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"checkpoint at {self.directory}: cannot read {CONFIG_FILENAME} ({e})") from e
        if stored != self.config_fingerprint:
            raise ValueError(
                f"checkpoint at {self.directory} was written for a different config: "
                f"stored fingerprint {stored}, this run's fingerprint {self.config_fingerprint}; "
                "resume with the same config or use another directory"
            )

    # ----- public API ------------------------------------------------------------
    def latest_step(self) -> int | None:
        """The newest saved step in the directory, or ``None`` if there is none."""
        self._manager.reload()
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        """The saved steps still kept in the directory, oldest first."""
        self._manager.reload()
        return sorted(self._manager.all_steps())

    def save(self, step: int, state: PyTree) -> None:
        """Writes ``state`` as checkpoint ``step``; it is on disk when this returns.

        Args:
          step: training step (or update) number; must be greater than every
            step already saved in the directory.
          state: any pytree whose leaves are arrays (jax or numpy), Python
            numbers, or typed PRNG key arrays.

        Raises:
          ValueError: if ``step`` is not after the latest saved step.
          TypeError: if a leaf is not an array or a number.
        """
        step = int(step)
        latest = self.latest_step()
        if latest is not None and step <= latest:
            raise ValueError(
                f"checkpoint at {self.directory}: cannot save step {step}, it is not after the latest "
                f"saved step {latest}"
            )
        paths, leaves, _ = _leaf_paths(state)
        if not leaves:
            raise ValueError("Checkpointer.save: the state has no array leaves")
        values, key_impls = [], {}
        for path, leaf in zip(paths, leaves):
            if _is_key(leaf):
                key_impls[".".join(path)] = _key_impl(leaf)
                leaf = jax.random.key_data(leaf)
            elif isinstance(leaf, (bool, int, float, np.generic)):
                leaf = np.asarray(leaf)
            elif not isinstance(leaf, (jax.Array, np.ndarray)):
                raise TypeError(
                    f"Checkpointer.save: leaf {_fmt(path)} is a {type(leaf).__name__}, not an array or a number"
                )
            values.append(leaf)
        self._manager.save(
            step,
            args=ocp.args.StandardSave(_nest(paths, values)),
            custom_metadata={_KEY_IMPLS: key_impls, _FINGERPRINT: self.config_fingerprint},
            force=True,
        )
        self._manager.wait_until_finished()

    def restore(self, state_like: PyTree, step: int | None = None) -> PyTree:
        """Loads checkpoint ``step`` (default: the latest) into ``state_like``'s structure.

        Args:
          state_like: a pytree with the structure, shapes and dtypes to restore
            into: the freshly initialized state, or its ``jax.eval_shape``.
            Leaves come back with its dtypes (values are cast if the stored
            dtype differs), as jax arrays where it holds jax arrays or
            ``ShapeDtypeStruct``s, numpy arrays where it holds numpy arrays,
            Python numbers where it holds Python numbers, and PRNG keys of the
            same implementation where it holds keys.
          step: which step; ``None`` for the latest.

        Returns:
          The restored state, a pytree with ``state_like``'s tree structure.

        Raises:
          ValueError: if the directory was written for a different config, or
            the stored tree does not match ``state_like`` (paths, shapes or
            key implementations differ; every difference is named).
          FileNotFoundError: if there is no checkpoint (at ``step``).
        """
        self._check_fingerprint()
        steps = self.all_steps()
        if step is None:
            if not steps:
                raise FileNotFoundError(f"checkpoint at {self.directory}: no checkpoint to restore")
            step = steps[-1]
        elif int(step) not in steps:
            raise FileNotFoundError(
                f"checkpoint at {self.directory}: no checkpoint for step {step} (kept steps: {steps})"
            )
        step = int(step)

        metadata = self._manager.metadata(step)
        custom = metadata.custom_metadata or {}
        stored_fp = custom.get(_FINGERPRINT)
        if stored_fp is not None and stored_fp != self.config_fingerprint:
            raise ValueError(
                f"checkpoint at {self.directory} was written for a different config: step {step} has "
                f"fingerprint {stored_fp}, this run's fingerprint {self.config_fingerprint}"
            )
        stored_impls: dict[str, str] = dict(custom.get(_KEY_IMPLS) or {})
        item_md = metadata.item_metadata
        if item_md is not None and not hasattr(item_md, "tree") and _ITEM in getattr(item_md, "keys", lambda: ())():
            item_md = item_md[_ITEM]
        stored_tree = getattr(item_md, "tree", item_md)
        if stored_tree is None:
            raise ValueError(f"checkpoint at {self.directory}, step {step}: cannot read the stored tree's metadata")
        stored = _flatten_nested(stored_tree)

        paths, leaves, treedef = _leaf_paths(state_like)
        wanted = set(paths)
        problems: list[str] = []
        missing = sorted(_fmt(p) for p in wanted - set(stored))
        extra = sorted(_fmt(p) for p in set(stored) - wanted)
        if missing:
            problems.append(f"in state_like but not in the checkpoint: {_listing(missing)}")
        if extra:
            problems.append(f"in the checkpoint but not in state_like: {_listing(extra)}")

        targets = []
        default_sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        for path, leaf in zip(paths, leaves):
            name = ".".join(path)
            if _is_key(leaf):
                impl = _key_impl(leaf)
                if stored_impls.get(name) != impl:
                    what = stored_impls.get(name) or "raw (not a typed key)"
                    problems.append(f"{name}: PRNG key impl {impl} in state_like, {what} in the checkpoint")
                target = jax.eval_shape(jax.random.key_data, leaf) if isinstance(
                    leaf, jax.ShapeDtypeStruct
                ) else jax.random.key_data(leaf)
            elif name in stored_impls:
                problems.append(f"{name}: a PRNG key ({stored_impls[name]}) in the checkpoint, not in state_like")
                target = leaf
            elif isinstance(leaf, (bool, int, float, np.generic)):
                target = np.asarray(leaf)
            elif isinstance(leaf, (jax.Array, np.ndarray, jax.ShapeDtypeStruct)):
                target = leaf
            else:
                raise TypeError(
                    f"Checkpointer.restore: state_like leaf {_fmt(path)} is a {type(leaf).__name__}, "
                    "not an array, a ShapeDtypeStruct or a number"
                )
            if isinstance(target, jax.ShapeDtypeStruct) and target.sharding is None:
                target = jax.ShapeDtypeStruct(target.shape, target.dtype, sharding=default_sharding)
            stored_shape = getattr(stored.get(path), "shape", None)
            if path in stored and stored_shape is not None and tuple(stored_shape) != tuple(np.shape(target)):
                problems.append(
                    f"{name}: shape {tuple(stored_shape)} in the checkpoint, {tuple(np.shape(target))} in state_like"
                )
            targets.append(target)
        if problems:
            raise ValueError(
                f"checkpoint at {self.directory}, step {step}, does not match state_like:\n  - "
                + "\n  - ".join(problems)
            )

        restored = self._manager.restore(step, args=ocp.args.StandardRestore(_nest(paths, targets)))
        flat = _flatten_nested(restored)
        out = []
        for path, leaf in zip(paths, leaves):
            value = flat[path]
            if _is_key(leaf):
                value = jax.random.wrap_key_data(value, impl=_key_impl(leaf))
            elif isinstance(leaf, (bool, int, float)):
                value = type(leaf)(np.asarray(value).item())
            elif isinstance(leaf, np.generic):
                value = np.asarray(value, dtype=leaf.dtype)[()]
            out.append(value)
        return jax.tree_util.tree_unflatten(treedef, out)

    def close(self) -> None:
        """Releases orbax's resources; the directory stays as it is."""
        self._manager.close()

    def __enter__(self) -> "Checkpointer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Checkpointer({self.directory!r}, fingerprint={self.config_fingerprint[:12]}..., "
            f"max_to_keep={self.max_to_keep})"
        )


__all__ = ["CONFIG_FILENAME", "Checkpointer", "config_fingerprint"]
