"""The notebooks (``notebooks/``) run top to bottom on their small settings, each drawing its
pictures."""

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_one_notebook_per_system_and_one_on_embedding():
    assert {p.stem for p in NOTEBOOKS} == {"wuji", "reline", "ppgta", "explicit_plans", "embedding"}


#: The notebook the default run executes (the quickest, about 25 s); the others run with ``-m slow``
#: (RELINE's and Wuji's about a minute each, PPGTA's, which trains its models, about 8).
QUICK = ("explicit_plans",)


@pytest.mark.parametrize(
    "path",
    [p if p.stem in QUICK else pytest.param(p, marks=pytest.mark.slow) for p in NOTEBOOKS],
    ids=lambda p: p.stem,
)
def test_the_notebook_runs(path, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    # figures as outputs, whatever the test process uses
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    book = nbformat.read(path, as_version=4)
    NotebookClient(
        book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    images = [
        o
        for cell in book.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if "image/png" in o.get("data", {})
    ]
    assert images, f"{path.name} drew no picture"


#: The notebooks that tell their paper's story: a small run, its figure beside the paper's, what to
#: try next, committed with their outputs.
STORIES = ("reline", "wuji", "explicit_plans", "ppgta")


@pytest.mark.parametrize("name", STORIES)
def test_a_story_notebook_is_committed_with_its_outputs_and_the_papers_figure(name):
    import nbformat

    book = nbformat.read(NOTEBOOKS[0].parent / f"{name}.ipynb", as_version=4)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "run it and save it with its outputs"
    # plotted beside the paper's (the Explicit Plans article's) figure
    assert any("the paper" in cell.source or "the article" in cell.source for cell in code)
    assert sum("image/png" in o.get("data", {}) for cell in code for o in cell.outputs) >= 2
    assert any(
        cell.cell_type == "markdown" and cell.source.startswith("## What to try next")
        for cell in book.cells
    )
