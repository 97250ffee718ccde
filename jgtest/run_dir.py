"""Run directories: where a campaign writes its config, bug records, checkpoints and report.

:func:`prepare_run_dir` is how every entry (the command line, the main job) opens one: it refuses a
directory that would mix two campaigns, unless told to continue (``resume``) or replace
(``overwrite``) the one there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def prepare_run_dir(path: str | Path, overwrite: bool = False, resume: bool = False) -> Path:
    """Creates the run directory or explains why it cannot be used.

    Args:
      path: the run directory.
      overwrite: remove the campaign it holds (its bug records and checkpoints).
      resume: it must hold a campaign to continue (a ``config.json``); nothing is removed.

    Raises:
      ValueError: the path is a file, cannot be created or written, holds a campaign (without
        ``overwrite`` or ``resume``), or holds none to resume.
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(path)!r} is a file, not a directory")
    if resume:
        if not (out / "config.json").exists():
            raise ValueError(f"--resume: {str(path)!r} holds no campaign to resume")
        return out
    if (out / "bugs.jsonl").exists() and not overwrite:
        raise ValueError(f"--out {str(path)!r} already holds a campaign (bugs.jsonl); choose another directory, pass --resume to continue it or --overwrite")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot create --out directory {str(path)!r}: {error.strerror}") from None
    if not os.access(out, os.W_OK):
        raise ValueError(f"--out directory {str(path)!r} is not writable")
    if overwrite:
        (out / "bugs.jsonl").unlink(missing_ok=True)
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return out
