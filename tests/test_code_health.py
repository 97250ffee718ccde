"""Code health: ``ruff check`` and ``ruff format --check`` (the ``[tool.ruff]`` settings in
pyproject.toml) are clean over the repository, and module docstrings explain rather than measure.

A module docstring says what the module is for, the paper's section and formula, and one line per
choice made where the paper is silent. What a run measured belongs in ``benchmarks/results/*.json``
(rendered on the reproduction pages), so a module docstring may not hold a percentage outside a
sentence citing the paper (``§``), a throughput figure, or a table of figures; none is over 3,000
characters, and together they are under 5% of the source."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("jgtest", "envs_bridge")

PERCENT = re.compile(r"\d(?:[\d,.]*\d)?\s?%")
THROUGHPUT = re.compile(r"\d\s*[kM]?\s*(?:steps|frames|episodes|it|games|calls)\s*/\s*s\b")
PIPE_ROW = re.compile(r"^\s*\|.*\|.*\|\s*$")
RST_BORDER = re.compile(r"^\s*=+(?:\s+=+)+\s*$")
FIGURE = re.compile(r"\d+\.\d+|\d\s?%|\d{3,}|\d,\d{3}")
SENTENCE_END = re.compile(r"[.;!?](?=\s)|\n\s*\n")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "ruff", *args, str(ROOT)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT)


def test_ruff_check_is_clean():
    result = _ruff("check", "--output-format", "concise")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_owns_the_layout():
    result = _ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence holding ``text[start:end]``: from the sentence end before it to the one
    after."""
    ends = [m.end() for m in SENTENCE_END.finditer(text)]
    begin = max([e for e in ends if e <= start], default=0)
    stop = min([e for e in ends if e >= end], default=len(text))
    return " ".join(text[begin:stop].split())


def _table_lines(doc: str) -> list[str]:
    """The lines of the docstring's tables: Markdown pipe rows, and RST simple tables' rows."""
    lines = doc.splitlines()
    rows = [line for line in lines if PIPE_ROW.match(line)]
    borders = [i for i, line in enumerate(lines) if RST_BORDER.match(line)]
    for first, last in zip(borders[::3], borders[2::3]):  # an RST table: top, header rule, bottom
        rows += lines[first + 1 : last]
    return rows


def run_figures(doc: str) -> list[str]:
    """What in a module docstring reads as a measurement: a percentage in a sentence that cites no
    paper section, a throughput, a table holding figures."""
    found = [
        _sentence(doc, m.start(), m.end())
        for m in PERCENT.finditer(doc)
        if "§" not in _sentence(doc, m.start(), m.end())
    ]
    found += [f"a throughput: {m.group(0)}" for m in THROUGHPUT.finditer(doc)]
    tables = [line for line in _table_lines(doc) if FIGURE.search(line)]
    return found + [f"a table of figures: {line.strip()}" for line in tables]


def _module_docstrings() -> dict[str, tuple[str, int]]:
    """Each module's docstring and the length of its source, by path."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text()
            doc = ast.get_docstring(ast.parse(source), clean=False) or ""
            found[str(path.relative_to(ROOT))] = (doc, len(source))
    return found


@pytest.mark.parametrize(
    "doc, figures",
    [
        ("Discount γ = 0.99 (§IV).", 0),
        ("The best 30% of the episodes (§3.1.2) are the elites.", 0),
        ("Kept to a pathway on 50.7% of steps. Then more.", 1),
        ("It runs at 1.2M steps/s on 2 cores.", 1),
        ("| agent | found |\n|---|---|\n| random | 12.5 |", 1),
        ("====  =====\nname  kind\n====  =====\nhp    int\n====  =====", 0),
        ("====  =====\nseed  found\n====  =====\n0     963\n====  =====", 1),
    ],
)
def test_the_rule_tells_a_paper_figure_from_a_run_figure(doc, figures):
    assert len(run_figures(doc)) == figures, run_figures(doc)


def test_module_docstrings_hold_no_run_figures():
    found = {path: run_figures(doc) for path, (doc, _) in _module_docstrings().items()}
    assert {path: figures for path, figures in found.items() if figures} == {}


def test_module_docstrings_are_short():
    docstrings = _module_docstrings()
    long = {path: len(doc) for path, (doc, _) in docstrings.items() if len(doc) > 3000}
    assert long == {}
    share = sum(len(doc) for doc, _ in docstrings.values()) / sum(n for _, n in docstrings.values())
    assert share < 0.05, f"module docstrings are {share:.1%} of the source"
