"""The notebooks (``notebooks/``) run top to bottom on their small settings, each drawing its
pictures."""

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_one_notebook_per_system_and_one_on_embedding():
    assert {p.stem for p in NOTEBOOKS} == {"wuji", "reline", "ppgta", "explicit_plans", "embedding"}


#: Each notebook's small settings, run after its ``parameters`` cell (papermill's convention; the
#: stored outputs are the notebook's own settings').
SMALL = {
    "reline": "RANDOM_STEPS = 20\n"
    "MODELS, EVAL_EPISODES = 1, 4\n"
    'CEM = (("num_iterations", 2), ("num_evals", 1), ("episodes_per_iter", 4))\n'
    'GAME = (("max_steps_in_episode", 80),)',
    "wuji": "POPULATION, GENERATIONS, SEEDS = 2, 1, 2\n"
    "A2C = WujiA2CConfig(hidden_sizes=(8, 8, 8), num_envs=2, updates_per_round=1, max_rounds=1)",
    "ppgta": "SIZE, OBJECTS, EPISODES, EPISODE_STEPS = 32, 50, 5, 200\n"
    "MODELS = "
    + repr(
        {
            "path_trajectories": 6,
            "path_steps": 24,
            "circle_trajectories": 6,
            "circle_steps": 24,
            "k": 2,
            "cnn_layers": ((8, 8, 4), (8, 4, 2)),
            "cnn_dense": 32,
            "policy": (("local_hidden", 8), ("global_hidden", 16), ("mlp", (16,))),
            "inverse_epochs": 1,
            "imitation_epochs": 2,
            "imitation_warmup": 1,
            "detector_shots": 40,
            "detector_epochs": 1,
            "oracle_shots": 60,
            "oracle_epochs": 1,
        }
    ),
    "embedding": "UPDATES, RND_UPDATES = 3, 3",
}


def _with_small_settings(book, small: str | None):
    """``book`` with the cell ``small`` after its ``parameters`` cell (``None``: the notebook runs
    as it is)."""
    import nbformat

    if small is None:
        return book
    tagged = [i for i, c in enumerate(book.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "one cell tagged parameters"
    book.cells.insert(tagged[0] + 1, nbformat.v4.new_code_cell(small))
    return book


def _untrained_park_models(where: Path) -> Path:
    """PPGTA's models of the PPGTA notebook's small settings, untrained, saved in ``where``: the
    notebook's run is under test here, the models' training is the slow test's
    (``tests/methods/park/test_ppgta.py``)."""
    from jgtest.methods.park.console import models_config
    from jgtest.methods.park.models import save_models
    from tests.methods.park.test_ppgta import _untrained

    settings = {}
    exec(SMALL["ppgta"], {}, settings)
    config = models_config(
        {"size": settings["SIZE"], "num_oois": settings["OBJECTS"]},
        True,
        overrides=settings["MODELS"],
    )
    save_models(_untrained(config), where)
    return where


#: Notebooks whose small run is a slow test: PPGTA's compiles two learned explorers' campaigns
#: (about two minutes on 2 cores); its campaign's wiring is ``tests/methods/park/test_ppgta.py``'s.
SLOW = ("ppgta",)


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.slow] if p.stem in SLOW else []) for p in NOTEBOOKS],
    ids=lambda p: p.stem,
)
def test_the_notebook_runs_on_small_settings(path, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    # figures as outputs, whatever the test process uses
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    small = SMALL.get(path.stem)
    if path.stem == "ppgta":
        small += f"\nMODELS_DIR = {str(_untrained_park_models(tmp_path / 'models'))!r}"
    book = _with_small_settings(nbformat.read(path, as_version=4), small)
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
STORIES = ("reline", "wuji", "explicit_plans", "ppgta", "embedding")


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
