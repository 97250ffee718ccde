"""The docs: the site builds with MkDocs in strict mode (warnings are errors: broken links,
docstrings whose parameters do not match their signatures), and the "testing your own game" guide's
example runs."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_docs_build_without_warnings(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "evo" / "index.html").read_text()
    # the API pages come from the docstrings
    assert "non_dominated_rank" in api and "crowding_distance" in api
    # the README's tour is the home page
    assert "A tour" in (tmp_path / "site" / "index.html").read_text()
    # the own-game guide includes the example's whole source (a snippet include, not its marker)
    guide = (tmp_path / "site" / "own-game" / "index.html").read_text()
    assert '<span class="nc">Corridor</span>' in guide
    assert '"examples/own_game/corridor.py"</span>' not in guide


def test_the_own_game_guide_example_registers_and_tests_its_game():
    spec = importlib.util.spec_from_file_location(
        "corridor", ROOT / "examples" / "own_game" / "corridor.py"
    )
    corridor = importlib.util.module_from_spec(spec)
    sys.modules["corridor"] = corridor  # its dataclasses look their module up
    spec.loader.exec_module(corridor)
    summary = corridor.main()
    # 16 random walkers reach cell 9 of 12 in 200 steps
    assert summary["bugs_total"] == 1 and summary["bugs_found"] == 1
    import jgtest

    with pytest.raises(
        ValueError, match=r"Corridor-v0: bug_cell must be inside the corridor \(1\.\.9\), got 40"
    ):
        jgtest.make("Corridor-v0", bug_cell=40)
