"""Periodic save and resume of training state, refusing checkpoints of another config.

A :class:`Checkpointer` wraps orbax's ``CheckpointManager``: it saves any pytree of training state
and, on restart, restores the newest intact step.

* chosen: a directory belongs to one config (:func:`config_fingerprint`), because resuming another
  config's state would be silently wrong.
* chosen: a damaged step falls back to an older one, because a run should not end on it.

Example::

    ckpt = Checkpointer(path, config_fingerprint(config))
    if ckpt.latest_step() is not None:
        start, state = ckpt.restore_latest(state)
    ckpt.save(step, state)                       # durable when it returns
"""

from __future__ import annotations

import dataclasses
import enum
import errno
import gc
import hashlib
import json
import math
import os
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from jgtest import interrupts
from jgtest.errors import BadFile, ResumeRefused

PyTree = Any

#: Name of the file, inside a checkpoint directory, holding the config fingerprint.
CONFIG_FILENAME = "jgtest_config.json"
_FORMAT_VERSION = 2  # 1 stored typed PRNG keys as their key data, tuples as dicts
_KEY_IMPLS = "jgtest_key_impls"
_MAX_LISTED = 8
#: How orbax names (and finds) step directories: ``DIR/<step>``; other names (``damaged-3``) are not
#: steps.
_STEP_NAMES = ocp.step.standard_name_format()
#: Prefix of the name a damaged step directory is moved aside to (``DIR/damaged-<step>``).
_DAMAGED_PREFIX = "damaged-"
_MAX_ERROR_CHARS = 300


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
        "configs should hold numbers, strings, bools, None, tuples, dicts, enums and nested "
        "dataclasses"
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


def config_from_dict(cls: type, data: Mapping[str, Any]) -> Any:
    """The frozen dataclass ``cls`` back from its JSON form (``dataclasses.asdict`` written as JSON,
    as a run's ``config.json`` holds it): nested dataclass fields (those whose default is a
    dataclass) are rebuilt from their dicts, JSON lists become tuples; keys of ``data`` that are not
    fields of ``cls`` (a run's extra entries) are left out. The result has the original's
    :func:`config_fingerprint`, so a run's checkpoints open with it.

    Raises:
      TypeError: a nested dict with a key its dataclass does not have.

    Example::

        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class Net:
        ...     sizes: tuple[int, ...] = (64, 64)
        >>> @dataclasses.dataclass(frozen=True)
        ... class Run:
        ...     seed: int = 0
        ...     net: Net = Net()
        >>> config_from_dict(Run, {"seed": 3, "net": {"sizes": [32]}, "method": "ppo"})
        Run(seed=3, net=Net(sizes=(32,)))
    """
    names = {field.name for field in dataclasses.fields(cls)}
    return _dataclass_from(cls, {k: v for k, v in data.items() if k in names})


def _dataclass_from(cls: type, data: Mapping[str, Any]) -> Any:
    """``cls(**data)``, nested dataclass fields built from their dicts, lists as tuples."""
    as_tuples = lambda v: tuple(as_tuples(x) for x in v) if isinstance(v, list) else v
    defaults = {field.name: field.default for field in dataclasses.fields(cls)}
    if unknown := sorted(set(data) - set(defaults)):
        raise TypeError(f"{cls.__name__}: unexpected keyword argument {unknown[0]!r}")
    nested = lambda name, value: (
        dataclasses.is_dataclass(defaults[name]) and isinstance(value, Mapping)
    )
    return cls(
        **{
            k: _dataclass_from(type(defaults[k]), v) if nested(k, v) else as_tuples(v)
            for k, v in data.items()
        }
    )


# ----------------------------------------------------------------------------
# Checkpointer
# ----------------------------------------------------------------------------
def _one_line(text: Any, limit: int = _MAX_ERROR_CHARS) -> str:
    """``text`` with its whitespace runs (newlines included) as single spaces, cut to ``limit``
    characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _saved_steps(directory: str) -> list[int]:
    """The finalized steps in ``directory`` as the Checkpointer's manager finds them, oldest first;
    reads only."""
    return sorted(metadata.step for metadata in _STEP_NAMES.find_all(directory))


def _holds_fingerprint(directory: str, config_fingerprint: str) -> bool:
    """The check of :func:`check_fingerprint`: ``True`` if ``directory`` holds
    ``config_fingerprint``, ``False`` if it holds no fingerprint and no steps (nothing to check);
    reads only."""
    if not isinstance(config_fingerprint, str) or not config_fingerprint:
        raise ValueError("checkpoint: config_fingerprint must be a non-empty string")
    if not os.path.exists(directory):
        return False
    if not os.path.isdir(directory):
        raise ResumeRefused(f"checkpoint at {directory} is not a directory; use another directory")
    config_path = os.path.join(directory, CONFIG_FILENAME)
    if not os.path.lexists(config_path):
        if steps := _saved_steps(directory):
            raise ResumeRefused(
                f"checkpoint at {directory} holds checkpoints (steps {steps}) "
                f"but no {CONFIG_FILENAME}, so its config cannot be checked; use another directory"
            )
        return False
    try:
        with open(config_path) as f:
            payload = json.load(f)
        stored, version = payload["config_fingerprint"], payload.get("format", 1)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ResumeRefused(
            f"checkpoint at {directory}: cannot read {CONFIG_FILENAME} ({_one_line(e)}), so "
            "its config "
            "cannot be checked; use another directory"
        ) from e
    if stored != config_fingerprint:
        raise ResumeRefused(
            f"checkpoint at {directory} was written for a different config: "
            f"stored fingerprint {_one_line(stored, 80)}, this run's fingerprint "
            f"{config_fingerprint}; "
            "resume with the same config or use another directory"
        )
    if version != _FORMAT_VERSION:
        raise ResumeRefused(
            f"checkpoint at {directory} has format {_one_line(version, 40)}, this jgtest "
            "reads format "
            f"{_FORMAT_VERSION} (format 1 stored PRNG keys as raw key data); start the run "
            "again in another directory"
        )
    return True


def check_fingerprint(directory: str | os.PathLike, config_fingerprint: str) -> None:
    """Refuses a checkpoint directory written for another config, creating and writing nothing.

    The check :class:`Checkpointer` makes when it opens ``directory``, for a
    campaign to call on ``--resume`` before it writes any file: a refused resume
    leaves the run directory byte for byte as it was. It returns when the
    directory holds this fingerprint, and when it does not exist or holds
    neither a fingerprint nor steps (a fresh run's).

    Args:
      directory: a checkpoint directory (it need not exist).
      config_fingerprint: :func:`config_fingerprint` of the run's config.

    Raises:
      jgtest.errors.ResumeRefused: ``directory`` holds another fingerprint, or
        checkpoints but no ``jgtest_config.json``, or an unreadable one, or one
        of another format; or it is not a directory.
      ValueError: ``config_fingerprint`` is not a non-empty string.
    """
    _holds_fingerprint(os.path.abspath(os.fspath(directory)), config_fingerprint)


class _Damaged(Exception):
    """A step whose metadata or data orbax could not read; ``error``: what went wrong, in one
    line."""

    def __init__(self, step: int, error: str):
        self.step, self.error = step, error
        super().__init__(f"step {step}: {error}")


def _describe(e: BaseException) -> str:
    """``e`` in one line, as its innermost cause (tensorstore's reason under orbax's wrapper) when
    it has one."""
    seen = {id(e)}
    while e.__cause__ is not None and id(e.__cause__) not in seen:
        e = e.__cause__
        seen.add(id(e))
    return f"{type(e).__name__}: {_one_line(e)}"


def _read_step(step: int, read: Callable[[], Any]) -> Any:
    """``read()``, orbax reading step ``step``; an error of the step's own (not memory running out)
    is raised as a :class:`_Damaged` holding its text only.

    When one of orbax's concurrent reads fails, the others' coroutines are closed unfinished and
    raise from their ``except BaseException`` (and a tensorstore callback may find the event loop
    closed): Python would print each as "Exception ignored in ...", screens of tensorstore specs
    after the warning that matters. So the error is dropped (its traceback keeps those coroutines
    alive) and the garbage collected with such reports filtered out; any other report goes on to the
    hook in place.
    """
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        code = getattr(unraisable.object, "cr_code", None)
        if "orbax" in getattr(code, "co_filename", "") or (
            isinstance(unraisable.exc_value, RuntimeError)
            and "Event loop is closed" in str(unraisable.exc_value)
        ):
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        try:
            return read()
        except Exception as e:
            if isinstance(e, MemoryError) or "RESOURCE_EXHAUSTED" in str(e):
                raise
            error = _describe(e)
        gc.collect()  # ``e`` is gone: the coroutines it kept are closed here, quietly
    finally:
        sys.unraisablehook = previous
    raise _Damaged(step, error)


def _is_disk_full(e: BaseException) -> bool:
    """Whether ``e`` (or what caused it, orbax wrapping tensorstore) is a full disk or a file-size
    limit."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if (
            getattr(e, "errno", None) in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
            or "No space left" in str(e)
            or "quota exceeded" in str(e).lower()
        ):
            return True
        e = e.__cause__ or e.__context__
    return False


def _is_key(x: Any) -> bool:
    return jax.dtypes.issubdtype(getattr(x, "dtype", None), jax.dtypes.prng_key)


def _key_impl(x: Any) -> str:
    """Name of a typed key array's implementation; ``x`` may be a ``ShapeDtypeStruct``."""
    return str(jax.random.key_impl(jnp.zeros((), x.dtype)))


def _numpy_scalar_as_array(leaf: Any) -> Any:
    """A numpy scalar as a 0-d array (orbax saves arrays and Python numbers, not numpy scalars)."""
    return np.asarray(leaf) if isinstance(leaf, np.generic) else leaf


def _placed_like(like: Any, restored: Any) -> Any:
    """A restored leaf as ``like`` was placed: a numpy scalar as one; an array that ``like`` left
    uncommitted (not put on a device by the caller: a fresh ``jnp`` or jit result, a
    ``ShapeDtypeStruct`` without sharding) uncommitted too. orbax restores onto a device, committed,
    and a jitted function given committed arguments is a new lowering: a resumed run would compile
    every step function again instead of reusing the uninterrupted run's (in memory or from the
    persistent compilation cache)."""
    if isinstance(like, np.generic):
        return restored[()]
    placed = (
        like.committed
        if isinstance(like, jax.Array)
        else getattr(like, "sharding", None) is not None
    )
    if placed or not isinstance(restored, jax.Array) or not restored.committed:
        return restored
    if _is_key(restored):
        return jax.random.wrap_key_data(
            jnp.asarray(np.asarray(jax.random.key_data(restored))),
            impl=jax.random.key_impl(restored),
        )
    return jnp.asarray(np.asarray(restored))


def strongly_typed(state: PyTree) -> PyTree:
    """``state`` with every weakly typed array (a leaf that began as a Python number, such as a
    step counter's ``0``) strongly typed, as :meth:`Checkpointer.restore` returns it.

    A campaign applies it to its fresh state before the first jitted step, so that a fresh and a
    resumed run call the step with the same argument types: jit keys its cache on weak types, and
    without it a resumed run compiles every step function again instead of reusing the
    uninterrupted run's (in memory or from the persistent compilation cache)."""
    return jax.tree.map(
        lambda x: jax.lax.convert_element_type(x, x.dtype) if getattr(x, "weak_type", False) else x,
        state,
    )


def _flat(tree: PyTree) -> dict[str, Any]:
    """Leaves by dotted path, as orbax names them (``opt_state.0.mu``); colliding paths are
    refused."""
    flat = ocp.tree.to_flat_dict(tree)
    names = [".".join(path) for path in flat]
    if dup := sorted(name for name, count in Counter(names).items() if count > 1):
        raise ValueError(
            f"checkpoint: the state has leaves whose paths collide when written: {dup}"
        )
    return dict(zip(names, flat.values()))


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return shown + (f", ... ({more} more)" if more > 0 else "")


class Checkpointer:
    """Saves and restores training state in one directory, for one config.

    Args:
      directory: where checkpoints live (created if missing); one
        sub-directory per saved step, plus ``jgtest_config.json``.
      config_fingerprint: :func:`config_fingerprint` of the run's config. A
        directory already holding a different fingerprint is refused.
      max_to_keep: how many of the newest steps to keep; older ones are
        deleted after each save.
      loop: it checkpoints a loop that saves every chunk, generation or
        period, so a SIGINT or SIGTERM waits for its next save
        (:mod:`jgtest.interrupts`); ``False`` for a checkpoint written once
        (a model at the end of its training) or only read.

    Raises:
      jgtest.errors.ResumeRefused: (a ``ValueError``) if the directory was
        written for a different config, or holds checkpoints but no (or an
        unreadable) ``jgtest_config.json`` (:func:`check_fingerprint`); the
        directory is then left as it was.

    Example::

        ckpt = Checkpointer(tmp_dir, config_fingerprint(config), max_to_keep=2)
        ckpt.save(10, {"params": params, "key": key})
        restored = ckpt.restore({"params": params, "key": key})
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        config_fingerprint: str,
        max_to_keep: int = 2,
        loop: bool = True,
    ):
        if not isinstance(config_fingerprint, str) or not config_fingerprint:
            raise ValueError("Checkpointer: config_fingerprint must be a non-empty string")
        if max_to_keep < 1:
            raise ValueError(f"Checkpointer: max_to_keep must be >= 1, got {max_to_keep}")
        self.directory = os.path.abspath(os.fspath(directory))
        self.config_fingerprint = config_fingerprint
        self.max_to_keep = int(max_to_keep)
        self._config_path = os.path.join(self.directory, CONFIG_FILENAME)
        # before orbax creates or writes anything
        fresh = not _holds_fingerprint(self.directory, config_fingerprint)
        # The handler given up front lets a fresh manager (a resumed run) read existing steps'
        # metadata.
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                preservation_policy=ocp.checkpoint_managers.LatestN(n=self.max_to_keep),
                enable_async_checkpointing=False,
                create=True,
                step_name_format=_STEP_NAMES,
            ),
            item_handlers=ocp.StandardCheckpointHandler(),
            metadata={"config_fingerprint": config_fingerprint},
        )
        try:
            if fresh:
                self._write_fingerprint()
        except BaseException:
            self._manager.close()
            raise
        self._loop = bool(loop)
        if self._loop:
            interrupts.loop_opened()  # a signal now waits for the next save (jgtest.interrupts)

    # ----- fingerprint file ----------------------------------------------------
    def _write_fingerprint(self) -> None:
        tmp = self._config_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(
                {"config_fingerprint": self.config_fingerprint, "format": _FORMAT_VERSION},
                f,
                sort_keys=True,
            )
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._config_path)

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
          state: any pytree whose leaves are arrays (jax or numpy), Python or
            numpy numbers, or typed PRNG key arrays.

        Raises:
          ValueError: if ``step`` is not after the latest saved step, or the
            state has no leaves.
          TypeError: if a leaf is not an array or a number.
          jgtest.errors.BadFile: the disk is full or the directory cannot be
            written (naming the bytes the state needs); the steps saved before
            are kept.
          jgtest.interrupts.Interrupted: a SIGINT or SIGTERM asked the run to
            stop (:mod:`jgtest.interrupts`); raised once this step is on disk.
        """
        step = int(step)
        latest = self.latest_step()
        if latest is not None and step <= latest:
            raise ValueError(
                f"checkpoint at {self.directory}: cannot save step {step}, it is not after "
                "the latest "
                f"saved step {latest}"
            )
        leaves = _flat(state)
        if not leaves:
            raise ValueError("Checkpointer.save: the state has no leaves")
        for name, leaf in leaves.items():
            if not isinstance(leaf, (jax.Array, np.ndarray, np.generic, bool, int, float)):
                raise TypeError(
                    f"Checkpointer.save: leaf {name} is a {type(leaf).__name__}, not an "
                    "array or a number"
                )
        key_impls = {name: _key_impl(leaf) for name, leaf in leaves.items() if _is_key(leaf)}
        try:
            self._manager.save(
                step,
                args=ocp.args.StandardSave(jax.tree.map(_numpy_scalar_as_array, state)),
                custom_metadata={_KEY_IMPLS: key_impls},
                force=True,
            )
            self._manager.wait_until_finished()
        except Exception as e:
            if not _is_disk_full(e):
                raise
            size = sum(
                np.asarray(jax.random.key_data(x) if _is_key(x) else x).nbytes
                for x in leaves.values()
            )
            raise BadFile(
                f"checkpoint at {self.directory}: cannot save step {step}, the disk is full "
                f"(the state needs about {size:,} bytes); "
                "free some space and continue with --resume"
            ) from None
        interrupts.checkpoint_reached(step)

    def restore(self, state_like: PyTree, step: int | None = None) -> PyTree:
        """Loads checkpoint ``step`` (default: the latest intact one) into ``state_like``'s
        structure.

        Args:
          state_like: a pytree with the structure, shapes and dtypes to restore
            into: the freshly initialized state, or its ``jax.eval_shape``.
            Leaves come back with its dtypes (values are cast if the stored
            dtype differs), as jax arrays where it holds jax arrays or
            ``ShapeDtypeStruct``s, numpy arrays where it holds numpy arrays,
            Python or numpy numbers where it holds such numbers, and PRNG keys
            of the same implementation where it holds keys.
          step: which step; ``None`` for the latest that can be read, as
            :meth:`restore_latest` (which also says which step that was): a
            damaged newer step is moved aside with a warning.

        Returns:
          The restored state, a pytree with ``state_like``'s tree structure.

        Raises:
          jgtest.errors.ResumeRefused: if the directory was written for a
            different config.
          ValueError: if the stored tree does not match ``state_like`` (paths,
            shapes or key implementations differ; every difference is named).
          jgtest.errors.BadFile: if the step (with ``step=None``: every kept
            step) cannot be read.
          FileNotFoundError: if there is no checkpoint (at ``step``).
        """
        if step is None:
            return self._restore_latest(state_like, stacklevel=3)[1]
        check_fingerprint(self.directory, self.config_fingerprint)
        steps = self.all_steps()
        if int(step) not in steps:
            raise FileNotFoundError(
                f"checkpoint at {self.directory}: no checkpoint for step {step} (kept steps: "
                f"{steps})"
            )
        try:
            return self._restore_step(int(step), state_like)
        except _Damaged as e:
            raise BadFile(f"checkpoint at {self.directory}: cannot restore {e}") from None

    def restore_latest(self, state_like: PyTree) -> tuple[int, PyTree]:
        """Loads the newest step that can be read into ``state_like``'s structure:
        ``(step, state)``.

        Steps are tried newest first; one whose metadata or data orbax cannot
        read is skipped for the next older kept step. Once a step is restored,
        each newer damaged step is moved aside to ``DIR/damaged-STEP`` (not a
        step to orbax: it is kept for inspection, and the run can save that
        step again), with a ``warnings.warn`` naming it, its error and where it
        went. ``state_like``: as :meth:`restore`.

        Returns:
          The step restored and the state.

        Raises:
          jgtest.errors.ResumeRefused: if the directory was written for a
            different config.
          ValueError: if a step's stored tree does not match ``state_like`` (not
            skipped: the config or the code differs, the checkpoint is intact).
          jgtest.errors.BadFile: if no kept step can be read (nothing is moved
            then); it names the steps tried and their errors.
          FileNotFoundError: if there is no checkpoint.

        Example::

            start, state = 0, init_state(key)
            if ckpt.latest_step() is not None:
                start, state = ckpt.restore_latest(state)
        """
        return self._restore_latest(state_like, stacklevel=3)

    def _restore_latest(self, state_like: PyTree, stacklevel: int) -> tuple[int, PyTree]:
        """:meth:`restore_latest`; its warnings point ``stacklevel`` frames up (the public method's
        caller)."""
        check_fingerprint(self.directory, self.config_fingerprint)
        steps = self.all_steps()
        if not steps:
            raise FileNotFoundError(f"checkpoint at {self.directory}: no checkpoint to restore")
        damaged: list[_Damaged] = []
        for step in reversed(steps):
            try:
                restored = self._restore_step(step, state_like)
            except _Damaged as e:
                damaged.append(e)
                continue
            for e in damaged:
                where = self._set_aside(e.step)
                warnings.warn(
                    f"checkpoint at {self.directory}: step {e.step} cannot be restored "
                    f"({e.error}); "
                    f"moved it aside to {where} and restored step {step} instead",
                    stacklevel=stacklevel,
                )
            if damaged:
                self._manager.reload()
            return step, restored
        raise BadFile(
            f"checkpoint at {self.directory}: no kept step can be restored (tried steps "
            f"{[e.step for e in damaged]}: "
            + "; ".join(map(str, damaged))
            + "); start the run again in another directory"
        )

    def _restore_step(self, step: int, state_like: PyTree) -> PyTree:
        """Checkpoint ``step`` into ``state_like``; raises :class:`_Damaged` when orbax cannot read
        it."""

        def read_metadata() -> tuple[dict, dict[str, str]]:
            metadata = self._manager.metadata(step)
            stored_impls = metadata.custom_metadata[_KEY_IMPLS]
            if not isinstance(stored_impls, dict):
                raise TypeError(
                    f"{_KEY_IMPLS} in the step's metadata is a "
                    f"{type(stored_impls).__name__}, not a dict"
                )
            return _flat(metadata.item_metadata.tree), stored_impls

        stored, stored_impls = _read_step(step, read_metadata)
        # a mismatch is not damage: raised as is
        self._check_structure(step, stored, stored_impls, state_like)
        device = jax.sharding.SingleDeviceSharding(jax.devices()[0])

        def target(leaf: Any) -> Any:
            if isinstance(leaf, jax.ShapeDtypeStruct) and leaf.sharding is None:
                # a jax.Array, not numpy
                return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=device)
            return _numpy_scalar_as_array(leaf)

        args = ocp.args.StandardRestore(jax.tree.map(target, state_like))
        restored = _read_step(step, lambda: self._manager.restore(step, args=args))
        return jax.tree.map(_placed_like, state_like, restored)

    def _set_aside(self, step: int) -> str:
        """Moves step ``step``'s directory to ``DIR/damaged-STEP`` (``-2``, ``-3``... if taken);
        returns the new path."""
        source = os.path.join(self.directory, _STEP_NAMES.build_name(step))
        target, n = os.path.join(self.directory, f"{_DAMAGED_PREFIX}{step}"), 1
        while os.path.lexists(target):
            n += 1
            target = os.path.join(self.directory, f"{_DAMAGED_PREFIX}{step}-{n}")
        os.rename(source, target)
        return target

    def _check_structure(
        self, step: int, stored: dict, stored_impls: dict[str, str], state_like: PyTree
    ) -> None:
        """Raises a ``ValueError`` naming every difference between ``stored`` (orbax's metadata of
        the step's leaves, by dotted path, and its keys' implementations) and ``state_like``."""
        wanted = _flat(state_like)
        problems = []
        if missing := sorted(wanted.keys() - stored.keys()):
            problems.append(f"in state_like but not in the checkpoint: {_listing(missing)}")
        if extra := sorted(stored.keys() - wanted.keys()):
            problems.append(f"in the checkpoint but not in state_like: {_listing(extra)}")
        for name, leaf in wanted.items():
            impl = _key_impl(leaf) if _is_key(leaf) else None
            if stored_impls.get(name) != impl:
                have, want = (
                    f"a PRNG key ({i})" if i else "not a PRNG key"
                    for i in (stored_impls.get(name), impl)
                )
                problems.append(f"{name}: {have} in the checkpoint, {want} in state_like")
                continue
            # orbax's metadata gives a key array the shape of its key data (with the
            # implementation's trailing dims)
            shape = tuple(
                jax.eval_shape(jax.random.key_data, leaf).shape if impl else np.shape(leaf)
            )
            if name in stored and tuple(stored[name].shape) != shape:
                problems.append(
                    f"{name}: shape {tuple(stored[name].shape)} in the checkpoint, {shape} "
                    "in state_like"
                )
        if problems:
            raise ValueError(
                f"checkpoint at {self.directory}, step {step}, does not match state_like:\n  - "
                + "\n  - ".join(problems)
            )

    def close(self) -> None:
        """Releases orbax's resources; the directory stays as it is."""
        try:
            self._manager.close()
        finally:
            if self._loop:
                self._loop = False
                interrupts.loop_closed()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Checkpointer({self.directory!r}, fingerprint={self.config_fingerprint[:12]}..., "
            f"max_to_keep={self.max_to_keep})"
        )


__all__ = [
    "CONFIG_FILENAME",
    "Checkpointer",
    "check_fingerprint",
    "config_fingerprint",
    "strongly_typed",
]
