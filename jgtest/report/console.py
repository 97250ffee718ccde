"""What a campaign shows in the terminal while it runs: a progress bar on stderr (rich), off when
quiet. Every method's console view starts from :func:`progress`."""

from __future__ import annotations


def progress(quiet: bool, *fields: tuple[str, str]):
    """A rich ``Progress`` on stderr: description, bar, done of total, each of ``fields`` (``(label,
    key)``: shown as ``label`` then the task's ``fields[key]``), elapsed time; disabled when
    ``quiet``.
    Transient: the bar is gone when the campaign ends (its table follows) or is refused (its one
    ``error:`` line stands alone)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    extra = [TextColumn(f"{label} {{task.fields[{key}]}}") for label, key in fields]
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn(),
    )
    return Progress(*columns, console=stderr(), disable=quiet, transient=True)


def stderr():
    """The console for progress bars and headers: stderr, so that stdout keeps only tables and
    results."""
    from rich.console import Console

    return Console(stderr=True)


def show(renderable) -> None:
    """Prints a table (or any rich renderable) on stdout."""
    from rich.console import Console

    Console().print(renderable)


def printable(text: object) -> str:
    """``text`` safe to print on a terminal: control characters (an escape sequence's ``ESC``, a
    carriage return, a bell; C0 but tab and newline, DEL and C1) written as ``\\x1b`` escapes, so a
    name in a plan or a record cannot recolour, move or clear the user's terminal."""
    return "".join(f"\\x{ord(c):02x}" if _is_control(c) else c for c in str(text))


def _is_control(c: str) -> bool:
    code = ord(c)
    return (code < 0x20 and c not in "\t\n") or 0x7F <= code < 0xA0
