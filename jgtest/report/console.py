"""What a campaign shows in the terminal while it runs: a progress bar on stderr (rich), off when quiet.

Every campaign's console view (``jgtest.methods.*.console``) starts from :func:`progress`, so the
command line and the main job show the same bars and tables.
"""

from __future__ import annotations


def progress(quiet: bool, *fields: tuple[str, str]):
    """A rich ``Progress`` on stderr: description, bar, done of total, each of ``fields`` (``(label,
    key)``: shown as ``label`` then the task's ``fields[key]``), elapsed time; disabled when ``quiet``.
    Transient: the bar is gone when the campaign ends (its table follows) or is refused (its one
    ``error:`` line stands alone)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    extra = [TextColumn(f"{label} {{task.fields[{key}]}}") for label, key in fields]
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), *extra, TimeElapsedColumn())
    return Progress(*columns, console=stderr(), disable=quiet, transient=True)


def stderr():
    """The console for progress bars and headers: stderr, so that stdout keeps only tables and results."""
    from rich.console import Console

    return Console(stderr=True)


def show(renderable) -> None:
    """Prints a table (or any rich renderable) on stdout."""
    from rich.console import Console

    Console().print(renderable)
