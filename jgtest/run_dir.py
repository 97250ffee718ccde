"""Run directories: where a campaign writes its config, bug records, checkpoints and report.

:func:`prepare_run_dir` opens one for every entry: it refuses a directory that would mix two
campaigns unless told to continue (``resume``) or replace (``overwrite``) the one there.

* chosen: one writer, an exclusive ``flock`` taken before any check or write
  (:func:`lock_run_dir`), because two campaigns started at once must not both pass the checks.
* chosen: ``flock``, because the kernel drops a killed process's lock.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import warnings
from pathlib import Path

from jgtest.errors import BadFile, ResumeRefused

#: The lock file of a run directory (:func:`lock_run_dir`).
LOCK_NAME = ".jgtest.lock"
#: What a campaign or its report writes at the top of a run directory: no other output may land
#: there.
RESERVED_NAMES = frozenset(
    {
        LOCK_NAME,
        "bugs.jsonl",
        "config.json",
        "summary.json",
        "report.html",
        "checkpoints",
        "budgets.json",
        "progress.json",
        "table1.json",
        "low_fps.json",
        "population.json",
        "timeline.jsonl",
        "visited_cells.npy",
        "models",
        "models.json",
        "report.json",
    }
)
#: The run directories this process holds, by resolved path: the open lock file of each, and the pid
#: that took it (a forked child inherits the table, not the lock's ownership).
_HELD: dict[Path, tuple[int, int]] = {}


def lock_run_dir(path: str | Path) -> Path:
    """Takes the run directory's lock for this process, creating the directory if missing; returns
    it. Taking a lock this process already holds does nothing.

    The lock is an exclusive ``flock`` on ``DIR/.jgtest.lock``, which holds the owner's pid, kept
    until the process releases it (:func:`unlock_run_dir`; the command line does when its command
    ends) or exits (the kernel drops the lock of a killed process, so a crash never leaves a
    directory locked). Every check of what the directory holds, and every write, comes after the
    lock: a second campaign, an ``--overwrite`` or a ``--resume`` while another process holds it
    is refused in one line naming that process, before anything is written. The lock file is
    removed when the lock is released, so a finished run directory holds only what its campaign
    wrote.

    Raises:
      BadFile: another process holds the lock (naming its pid), or the directory cannot be created
        or written (a file in the way, a read-only file system, no permission).
    """
    out = Path(path)
    key = _key(out)
    if _HELD.get(key, (None, None))[1] == os.getpid():
        return out
    if out.exists() and not out.is_dir():
        raise BadFile(f"--out {str(path)!r} is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadFile(f"cannot create --out directory {str(path)!r}: {error.strerror}") from None
    lock = out / LOCK_NAME
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise BadFile(
                f"--out directory {str(path)!r} cannot be written ({error.strerror}); choose "
                "a writable directory"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise BadFile(
                f"--out {str(path)!r} is in use by another jgtest process ({holder}); wait "
                "for it to end, or choose another directory"
            ) from None
        except OSError as error:  # a file system without flock (NFS mounted nolock, some FUSE ones)
            os.close(fd)
            warnings.warn(
                f"{path}: cannot lock it ({error.strerror}); nothing keeps another process "
                "from writing there meanwhile",
                stacklevel=2,
            )
            return out
        if _same_file(fd, lock):  # not a lock file its last holder removed after we opened it
            break
        os.close(fd)
    _HELD[key] = (fd, os.getpid())
    # the pid only names the holder to a refused process; a full disk may refuse it
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    return out


def unlock_run_dir(path: str | Path) -> None:
    """Releases this process's lock on the run directory (removing its lock file); nothing if it
    holds none."""
    key = _key(Path(path))
    fd, owner = _HELD.pop(key, (None, None))
    if fd is None:
        return
    # not a forked child's copy, nor a new directory's lock file
    if owner == os.getpid() and _same_file(fd, key / LOCK_NAME):
        with contextlib.suppress(OSError):
            # before the release: a process that opened it then finds it gone and retries
            os.unlink(key / LOCK_NAME)
    os.close(fd)


@contextlib.contextmanager
def holding_run_dir(path: str | Path):
    """The run directory locked while the block runs (:func:`lock_run_dir`), and released after it
    unless this process held it before (a campaign shrinking its own records)."""
    held = _HELD.get(_key(Path(path)), (None, None))[1] == os.getpid()
    lock_run_dir(path)
    try:
        yield Path(path)
    finally:
        if not held:
            unlock_run_dir(path)


@atexit.register
def unlock_all() -> None:
    """Releases every run directory this process holds (the command line, when its command ends)."""
    for key in list(_HELD):
        unlock_run_dir(key)


def _key(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _holder(fd: int) -> str:
    """Who holds the lock, from the pid its holder wrote (``pid N``)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode().strip())
        return f"pid {pid}"
    return "pid not yet written"


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def check_output_path(
    path: str | Path,
    flag: str,
    run_dirs: tuple[str | Path, ...] = (),
    inputs: tuple[str | Path, ...] = (),
) -> Path:
    """Refuses an output file before any work: ``path`` must not be a directory, one of a run
    directory's own files (:data:`RESERVED_NAMES`, or anything below a folder of one) or one of the
    command's ``inputs``, and the folder it goes in must be creatable and writable.

    Args:
      path: the output file (``--junit PATH``); at the top of a run directory, a name it does not
        reserve (``DIR/junit.xml``) is allowed.
      flag: the option that named it, for the message.
      run_dirs: the run directories whose files it must not replace.
      inputs: files the command reads (``jgtest verify``'s records), which it must not replace.

    Raises:
      BadFile: naming the option and the problem.
    """
    try:
        return _checked_output(Path(path), flag, run_dirs, inputs)
    except OSError as error:  # a folder on the way that cannot be searched
        raise BadFile(f"{flag} {str(path)!r}: {error.strerror or error}") from None


def _checked_output(out: Path, flag: str, run_dirs: tuple, inputs: tuple) -> Path:
    named = f"{flag} {str(out)!r}"
    if out.is_dir():
        raise BadFile(f"{named} is a directory; name a file")
    where = _key(out.parent) / out.name
    if any(where == _key(Path(source)) for source in inputs):
        raise BadFile(f"{named} would replace the records it verifies; write it elsewhere")
    for run in run_dirs:
        inside = _relative(where, _key(Path(run)))
        # a folder of the run: its checkpoints, a sub-campaign
        if inside is not None and (inside.parts[0] in RESERVED_NAMES or len(inside.parts) > 1):
            raise BadFile(
                f"{named} would replace the run directory's own {inside}; write it elsewhere"
            )
    # the folder, or where it will be made
    folder = next(p for p in out.absolute().parents if p.exists())
    if not folder.is_dir():
        raise BadFile(f"{named}: {str(folder)!r} is a file, not a folder")
    if not os.access(folder, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise BadFile(f"{named} is not writable")
    return out


def _relative(path: Path, root: Path) -> Path | None:
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    return relative if relative.parts else None


def prepare_run_dir(path: str | Path, overwrite: bool = False, resume: bool = False) -> Path:
    """Creates the run directory or explains why it cannot be used.

    Args:
      path: the run directory.
      overwrite: remove the campaign it holds (its bug records, checkpoints, summary and report).
      resume: it must hold a campaign to continue (a ``config.json``); nothing is removed.

    The directory's lock is taken first (:func:`lock_run_dir`) and kept until :func:`unlock_run_dir`
    or the process's end; every check and removal happens under it.

    Raises:
      BadFile: the path is a file, cannot be created or written, holds a campaign (without
        ``overwrite`` or ``resume``), or another process holds its lock.
      ResumeRefused: ``resume`` and it holds no campaign.
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise BadFile(f"--out {str(path)!r} is a file, not a directory")
    if resume and not (out / "config.json").exists():
        raise ResumeRefused(f"--resume: {str(path)!r} holds no campaign to resume")
    lock_run_dir(out)  # every check below, and every write, under the lock
    if not os.access(out, os.W_OK):
        raise BadFile(f"--out directory {str(path)!r} is not writable")
    if resume:
        return out
    if (out / "bugs.jsonl").exists() and not overwrite:
        raise BadFile(
            f"--out {str(path)!r} already holds a campaign (bugs.jsonl); choose another "
            "directory, pass --resume to continue it or --overwrite"
        )
    # the replaced campaign's records, checkpoints and results; a new config.json replaces its own
    if overwrite:
        for name in ("bugs.jsonl", "summary.json", "report.html"):
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return out


def begin_campaign(
    out_dir: str | Path,
    config_json: dict,
    fingerprint: str | None,
    resume: bool,
    may_change: tuple[str, ...] = (),
) -> None:
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
    from jgtest.files import read_json, write_json_atomically

    out = lock_run_dir(
        out_dir
        # a campaign's own folder too (a comparison's runs below its --out): no shrink rewrites its
        # records meanwhile
    )
    config_json = json.loads(json.dumps(config_json))  # as the file holds it: tuples as lists
    if resume and (out / "config.json").exists():
        try:
            stored = read_json(out / "config.json")
        except BadFile as error:
            raise ResumeRefused(
                f"--resume: {error}; start the campaign again in another directory"
            ) from None
        keys = (
            sorted((set(stored) | set(config_json)) - set(may_change), key=str)
            if isinstance(stored, dict)
            else ["config"]
        )
        differ = [
            k for k in keys if not isinstance(stored, dict) or stored.get(k) != config_json.get(k)
        ]
        if differ:
            shown = "; ".join(
                f"{k} {(stored.get(k) if isinstance(stored, dict) else stored)!r} there, "
                f"{config_json.get(k)!r} here"
                for k in differ[:3]
            )
            raise ResumeRefused(
                f"--resume: {str(out_dir)!r} holds another campaign ({shown}); resume it "
                "with the options it was started with, or use another --out"
            )
    if resume and fingerprint is not None:
        check_fingerprint(out / "checkpoints", fingerprint)
    write_json_atomically(out / "config.json", config_json)
