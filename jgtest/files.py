"""Files a user names (records, plans, run directories' JSON, outputs), read and written with
one-line errors: a :class:`jgtest.errors.BadFile` whose message starts with the path.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path
from typing import Any

from jgtest.errors import BadFile


def read_bytes(path: str | Path) -> bytes:
    """The bytes of the file at ``path``.

    Raises:
      BadFile: no such file, a directory, or unreadable (the reason the system gives).
    """
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise BadFile(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadFile(f"{path}: a directory, not a file") from None
    except OSError as error:
        raise BadFile(f"{path}: cannot read it ({error.strerror or error})") from None


def read_text(path: str | Path) -> str:
    """The UTF-8 text of the file at ``path`` (a leading byte-order mark dropped).

    Raises:
      BadFile: as :func:`read_bytes`, or the file is not UTF-8 (naming the first bad byte).
    """
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise BadFile(
            f"{path}: not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start})"
        ) from None


def read_json(path: str | Path) -> Any:
    """The JSON value in the file at ``path``.

    Raises:
      BadFile: as :func:`read_text`, or the text is not JSON (with the decoder's reason: where the
        syntax breaks, a number too long to convert, nesting too deep).
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except ValueError as error:  # json.JSONDecodeError, or an integer over Python's digit limit
        raise BadFile(f"{path}: not JSON ({error})") from None
    except RecursionError:
        raise BadFile(f"{path}: not JSON (nested too deeply)") from None


def write_text(path: str | Path, text: str) -> None:
    """Writes ``text`` (UTF-8) to the file at ``path``, atomically (:func:`write_atomically`)."""
    write_atomically(path, text.encode("utf-8"))


def write_atomically(path: str | Path, data: bytes) -> None:
    """Writes ``data`` to the file at ``path`` so that a reader, or a later command, finds either
    the previous file whole or the new one whole, never part of one: the bytes go to a temporary
    file in the same folder, are flushed to disk (``fsync``), and the temporary file is renamed over
    ``path`` (``os.replace``, atomic on POSIX). A kill, a full disk or a file-size limit midway
    leaves the previous file as it was and removes the temporary one.

    Raises:
      BadFile: its folder does not exist or is not writable, ``path`` is a directory, or the disk is
        full (naming the bytes needed); the previous file is kept.
    """
    path = Path(path)
    if path.is_dir():
        raise BadFile(f"{path}: a directory, not a file")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        # the umask applies, as to any new file
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, path)
        # a write that failed, or a signal midway: no temporary file left behind
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as error:
        raise BadFile(
            f"{path}: cannot write it ({write_failure(error, len(data))})"
            f"{'; the previous file is kept' if path.exists() else ''}"
        ) from None


def write_failure(error: OSError, size: int) -> str:
    """Why a write of ``size`` bytes failed, in words: a full disk (or a file-size limit) with the
    bytes it needed, else the system's reason."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return f"{error.strerror}; it needs {size:,} bytes"
    return error.strerror or str(error)


def make_folder(path: str | Path) -> Path:
    """The folder ``path``, created (with its parents) if missing.

    Raises:
      BadFile: it is a file, or it cannot be created.
    """
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise BadFile(f"{path}: a file, not a folder") from None
    except OSError as error:
        raise BadFile(f"{path}: cannot create the folder ({error.strerror or error})") from None
    return folder


def write_json_atomically(path: str | os.PathLike, data) -> None:
    """Writes ``data`` (:func:`jsonable`) as JSON to ``path`` atomically (:func:`write_atomically`):
    a kill leaves the old file or the new one, never half of one.

    Raises:
      BadFile: it cannot be written (the previous file is kept).
    """
    write_text(path, json.dumps(jsonable(data), indent=2))


def jsonable(value):
    """NumPy and JAX scalars and arrays to plain JSON values, recursively."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # NumPy and JAX arrays and scalars, without importing either
        return value.tolist()
    return value
