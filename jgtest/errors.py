"""The project's own error types: what a user got wrong, as opposed to what went wrong in jgtest.

* chosen: each is a ``ValueError``, so code that catches ``ValueError`` keeps working.
* chosen: the command line prints a :class:`UserError` as one line, ``error: ...``, exit status 2
  (``argparse``'s); anything else keeps its traceback.
"""

from __future__ import annotations


class UserError(ValueError):
    """A mistake in what the user gave; its message names the option, key, file or line at fault."""


class BadInput(UserError):
    """An option or a value outside what it may be (a seed of 2**32, ``num_bugs=2.5``, a NaN where a
    finite number is needed, a step budget the chunk does not divide)."""


class BadFile(UserError):
    """A file (or directory) given by the user that is missing, unreadable or of the wrong kind (a
    directory given as ``bugs.jsonl``, a ``summary.json`` that is a list, a record of another
    game)."""


class PlanError(BadInput):
    """A plan that does not fit its game's schema or level; the message names the place
    (``nodes[1].radius``)."""


class ResumeRefused(UserError):
    """A campaign that cannot be resumed as asked (``--resume`` on a run directory written by
    another configuration, or one holding nothing to resume); raised before any file is written or
    changed."""


__all__ = ["BadFile", "BadInput", "PlanError", "ResumeRefused", "UserError"]
