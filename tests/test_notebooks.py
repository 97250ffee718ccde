"""The notebooks (``notebooks/``) run top to bottom on their small settings, each drawing its
pictures."""

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_one_notebook_per_system_and_one_on_embedding():
    assert {p.stem for p in NOTEBOOKS} == {"wuji", "reline", "ppgta", "explicit_plans", "embedding"}


#: The notebook the default run executes (the quickest); the others run with ``-m slow`` (about 2
#: minutes together).
QUICK = "reline"


@pytest.mark.parametrize(
    "path",
    [p if p.stem == QUICK else pytest.param(p, marks=pytest.mark.slow) for p in NOTEBOOKS],
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
