"""The architecture (pyproject.toml's ``[tool.importlinter]`` contracts, checked by import-linter):
no import cycle in any package; every top-level module of ``jgtest`` and ``envs_bridge`` on a floor
of one layers contract, dependencies pointing down (core ← games and learning pieces ← their parts ←
agents ← bridges ← the QA loop ← methods ← command line and main job), independent siblings where
the contract says ``|``; the methods, and the games, independent of one another; no method
imported by a bridge. The
contracts fail when an upward or sideways import is introduced (shown on a copy of the sources with
probe modules added), and grimp finds no cycle through the two root packages together (one the
contracts, per package, do not see)."""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("jgtest", "envs_bridge")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(cwd), "PATH": str(Path(sys.executable).parent)}
    command = (
        "import sys; from importlinter.cli import lint_imports_command; "
        "sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()"
    )
    return subprocess.run(
        [sys.executable, "-c", command], capture_output=True, text=True, cwd=cwd, env=env
    )


def test_the_import_contracts_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "5 kept, 0 broken" in result.stdout


def test_every_top_level_module_sits_on_a_floor():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    floors = next(
        c["layers"]
        for c in contracts["contracts"]
        if c["type"] == "layers" and "containers" not in c
    )
    placed = {name for floor in floors for name in re.split(r"\s*[:|]\s*", floor.strip())}
    on_disk = {
        f"jgtest.{path.stem}"
        for path in (ROOT / "jgtest").iterdir()
        if path.suffix == ".py" and path.stem != "__init__"
    }
    on_disk |= {
        f"jgtest.{path.name}"
        for path in (ROOT / "jgtest").iterdir()
        if (path / "__init__.py").exists()
    }
    assert placed == on_disk | {"envs_bridge"}


def test_the_contracts_break_on_a_cycle_an_upward_or_a_sideways_import(tmp_path):
    for package in PACKAGES:
        ignore = shutil.ignore_patterns("__pycache__", "data", "templates")
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    probes = {
        "jgtest/envs/probe.py": "from jgtest.methods.wuji.config import STRATEGIES\n",  # a cycle
        "envs_bridge/probe.py": "from jgtest.methods.reline.config import GAMES\n",
        "envs_bridge/probe_report.py": "from jgtest.report.console import printable\n",  # up
        "jgtest/losses/probe.py": "from jgtest.envs.base import BUG_KINDS\n",  # sideways
        "jgtest/methods/wuji/probe.py": "from jgtest.methods.reline.config import GAMES\n",
    }
    for path, text in probes.items():
        (tmp_path / path).write_text(text)
    with (tmp_path / "jgtest" / "envs" / "kart.py").open("a") as kart:
        kart.write("from jgtest.envs.pacmaze import PacMaze\n")  # one game importing another
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "0 kept, 5 broken" in result.stdout
    found = " ".join(result.stdout.split())
    for arrow in (
        "jgtest.envs.probe -> jgtest.methods.wuji.config",
        "envs_bridge.probe_report -> jgtest.report.console",
        "jgtest.losses.probe -> jgtest.envs.base",
        "jgtest.methods.wuji.probe -> jgtest.methods.reline.config",
        "jgtest.envs.kart -> jgtest.envs.pacmaze",
    ):
        assert arrow in found, arrow


def test_no_import_cycle_runs_through_both_root_packages():
    graph = grimp.build_graph(*PACKAGES)
    cycles = [
        (a, b)
        for a in graph.modules
        for b in graph.find_modules_directly_imported_by(a)
        if graph.chain_exists(importer=b, imported=a)
    ]
    assert cycles == []
