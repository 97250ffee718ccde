"""Files a user names (bug records, run directories' JSON, plans, instructions, action files, a
navigator's folder, where reports and plans go), read and written with one-line errors: each problem
is a :class:`jgtest.errors.BadFile` whose message starts with the path (``missing.json: no such file``).
"""

from __future__ import annotations

import json
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
        raise BadFile(f"{path}: not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start})") from None


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
    """Writes ``text`` (UTF-8) to the file at ``path``.

    Raises:
      BadFile: its folder does not exist, it is a directory, or it cannot be written.
    """
    try:
        Path(path).write_text(text, encoding="utf-8")
    except IsADirectoryError:
        raise BadFile(f"{path}: a directory, not a file") from None
    except OSError as error:
        raise BadFile(f"{path}: cannot write it ({error.strerror or error})") from None


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
