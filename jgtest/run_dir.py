"""Run directories: where a campaign writes its config, bug records, checkpoints and report.

:func:`prepare_run_dir` is how every entry (the command line, the main job) opens one: it refuses a
directory that would mix two campaigns, unless told to continue (``resume``) or replace
(``overwrite``) the one there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from jgtest.errors import BadFile, ResumeRefused


def prepare_run_dir(path: str | Path, overwrite: bool = False, resume: bool = False) -> Path:
    """Creates the run directory or explains why it cannot be used.

    Args:
      path: the run directory.
      overwrite: remove the campaign it holds (its bug records and checkpoints).
      resume: it must hold a campaign to continue (a ``config.json``); nothing is removed.

    Raises:
      BadFile: the path is a file, cannot be created or written, or holds a campaign (without
        ``overwrite`` or ``resume``).
      ResumeRefused: ``resume`` and it holds no campaign.
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise BadFile(f"--out {str(path)!r} is a file, not a directory")
    if resume:
        if not (out / "config.json").exists():
            raise ResumeRefused(f"--resume: {str(path)!r} holds no campaign to resume")
        return out
    if (out / "bugs.jsonl").exists() and not overwrite:
        raise BadFile(f"--out {str(path)!r} already holds a campaign (bugs.jsonl); choose another directory, pass --resume to continue it or --overwrite")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadFile(f"cannot create --out directory {str(path)!r}: {error.strerror}") from None
    if not os.access(out, os.W_OK):
        raise BadFile(f"--out directory {str(path)!r} is not writable")
    if overwrite:
        (out / "bugs.jsonl").unlink(missing_ok=True)
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return out


def begin_campaign(out_dir: str | Path, config_json: dict, fingerprint: str | None, resume: bool, may_change: tuple[str, ...] = ()) -> None:
    """Writes a campaign's ``config.json`` in ``out_dir``; on ``resume``, first checks that the
    campaign there is this one, and writes nothing if it is not.

    A resumed campaign must be the one that was started: the same ``config.json`` (every key named
    where it differs) and checkpoints of the same config fingerprint
    (:func:`jgtest.checkpoint.check_fingerprint`). Both checks only read, so a refused resume leaves
    the directory byte for byte as it was.

    Args:
      out_dir: the run directory (:func:`prepare_run_dir`).
      config_json: the campaign's settings as its ``config.json`` holds them (JSON values).
      fingerprint: :func:`jgtest.checkpoint.config_fingerprint` of the campaign's config, whose
        checkpoints are in ``out_dir/checkpoints``; ``None`` for a campaign that keeps them
        elsewhere (each of its ``Checkpointer`` checks its own).
      resume: the campaign continues one in ``out_dir``.
      may_change: keys of ``config_json`` a resumed campaign may give new values (a bridged
        campaign's number of episodes); the others must be as they were.

    Raises:
      ResumeRefused: ``resume``, and ``out_dir`` holds another campaign's config or checkpoints.
    """
    import json

    from jgtest.checkpoint import check_fingerprint
    from jgtest.files import read_json
    from jgtest.report.records import write_json_atomically

    out = Path(out_dir)
    config_json = json.loads(json.dumps(config_json))  # as the file holds it: tuples as lists
    if resume and (out / "config.json").exists():
        try:
            stored = read_json(out / "config.json")
        except BadFile as error:
            raise ResumeRefused(f"--resume: {error}; start the campaign again in another directory") from None
        keys = sorted((set(stored) | set(config_json)) - set(may_change), key=str) if isinstance(stored, dict) else ["config"]
        differ = [k for k in keys if not isinstance(stored, dict) or stored.get(k) != config_json.get(k)]
        if differ:
            shown = "; ".join(f"{k} {(stored.get(k) if isinstance(stored, dict) else stored)!r} there, {config_json.get(k)!r} here" for k in differ[:3])
            raise ResumeRefused(f"--resume: {str(out_dir)!r} holds another campaign ({shown}); resume it with the options it was started with, or use another --out")
    if resume and fingerprint is not None:
        check_fingerprint(out / "checkpoints", fingerprint)
    write_json_atomically(out / "config.json", config_json)
