"""Stopping a campaign cleanly on SIGINT (Ctrl-C) or SIGTERM: at its next checkpoint, not mid-write.

Under :func:`stop_at_checkpoints` (``jgtest run``, ``jgtest train``), a signal during a
checkpointing loop waits for the loop's next save, which then raises :class:`Interrupted`, so
``--resume`` continues from it.

* chosen: a second signal, or one outside such a loop, stops at once: the user insists, or no save
  is coming.
* chosen: exit status ``128 + signum``, as a shell reports a process a signal ended.
"""

from __future__ import annotations

import contextlib
import signal
import threading

#: The signals that stop a campaign.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A stop asked for by a signal, raised once the checkpoint of ``step`` is on disk (``step`` is
    ``None`` where no checkpoint was written: the stop was immediate). A ``KeyboardInterrupt``, so
    no ``except Exception`` swallows it."""

    def __init__(self, signum: int, step: int | None = None):
        self.signum, self.step = signum, step
        super().__init__(
            f"interrupted by {signal.Signals(signum).name}"
            + ("" if step is None else f" at step {step}")
        )

    @property
    def exit_status(self) -> int:
        """What a shell reports for a process this signal ended: ``128 + signum``."""
        return 128 + self.signum


_requested: int | None = None  # the signal noted, waiting for the next checkpoint
_checkpointing = 0  # open checkpointing loops (Checkpointers) in this process


def _on_signal(signum: int, frame) -> None:
    global _requested
    if _requested is None and _checkpointing > 0:
        _requested = signum
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def stop_at_checkpoints():
    """SIGINT and SIGTERM held back to the next checkpoint while the block runs (in the main
    thread; elsewhere the block runs with Python's handlers). The previous handlers come back after.

    The first SIGINT or SIGTERM is noted, not acted on at once, provided a checkpointing loop is
    running (a :class:`jgtest.checkpoint.Checkpointer` of a loop that saves every chunk,
    generation or training period is open: :func:`loop_opened`). That loop's next
    :meth:`jgtest.checkpoint.Checkpointer.save` puts its step on disk and then raises
    :class:`Interrupted`: its bug records are already on disk (each is flushed as it is found),
    the checkpoint is whole, and a ``--resume`` continues from it; if the loop ends without
    another save, the stop comes when it closes. A second signal, or one while no checkpointing
    loop runs (a game compiling before the first chunk is still a loop; a model trained before
    its one save, or a report being written, is not), stops at once as Python's
    ``KeyboardInterrupt`` does. The command line prints one line for either and exits ``128 +
    the signal's number`` (130 for SIGINT, 143 for SIGTERM)."""
    global _requested
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _checkpointing
    previous = {s: signal.signal(s, _on_signal) for s in STOP_SIGNALS}
    # nothing held over from an earlier command in this process
    _requested, _checkpointing = (
        None,
        0,
    )
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _requested = None


def loop_opened() -> None:
    """A checkpointing loop starts (a :class:`jgtest.checkpoint.Checkpointer` opens): a signal now
    waits for its next :func:`checkpoint_reached`."""
    global _checkpointing
    _checkpointing += 1


def loop_closed() -> None:
    """A checkpointing loop ended (its ``Checkpointer`` closed). A signal it was holding back for a
    save that never came (it arrived after the loop's last one) stops the command now."""
    global _checkpointing, _requested
    _checkpointing = max(0, _checkpointing - 1)
    if _checkpointing == 0 and _requested is not None:
        signum, _requested = _requested, None
        raise Interrupted(signum)


def checkpoint_reached(step: int) -> None:
    """Called once the checkpoint of ``step`` is on disk: raises :class:`Interrupted` if a stop was
    asked for."""
    global _requested
    if _requested is not None:
        signum, _requested = _requested, None
        raise Interrupted(signum, step)
