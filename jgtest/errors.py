"""The project's own error types: what a user got wrong, as opposed to what went wrong in jgtest.

Every one is a ``ValueError`` (code that catches ``ValueError`` keeps working). The command line
(:func:`jgtest.cli.main`) prints any :class:`UserError` as one line, ``error: ...`` on stderr, and
exits with status 2, the status ``argparse`` gives a bad option; anything else is a fault in jgtest
or a game and keeps its traceback.

- :class:`BadInput`: an option or value out of its domain (a seed of 2**32, ``num_bugs=2.5``, a
  NaN where a finite number is needed, a step budget the chunk does not divide).
- :class:`BadFile`: a file the user named that is missing, unreadable, or not what it should be
  (a directory given as ``bugs.jsonl``, a ``summary.json`` that is a list, a record of another game).
- :class:`ResumeRefused`: ``--resume`` on a run directory written by another configuration, or one
  holding nothing to resume. Raised before any file in the directory is written or changed.
"""

from __future__ import annotations


class UserError(ValueError):
    """A mistake in what the user gave; its message names the option, key, file or line at fault."""


class BadInput(UserError):
    """An option or a value outside what it may be."""


class BadFile(UserError):
    """A file (or directory) given by the user that is missing, unreadable or of the wrong kind."""


class PlanError(BadInput):
    """A plan that does not fit its game's schema or level; the message names the place (``nodes[1].radius``)."""


class ResumeRefused(UserError):
    """A campaign that cannot be resumed as asked; nothing on disk was changed."""


__all__ = ["BadFile", "BadInput", "PlanError", "ResumeRefused", "UserError"]
