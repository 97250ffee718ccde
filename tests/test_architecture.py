"""The architecture (pyproject.toml's ``[tool.importlinter]`` contracts, checked by import-linter): no
import cycle in any package, dependencies pointing one way (games and learning pieces ← agents, oracles,
search, plans ← methods ← command line and main job), and no method imported by a bridge. The contracts
fail when a cycle is introduced (shown on a copy of the sources with one probe module added), and
grimp finds no cycle through the two root packages together (one the contracts, per package, do not see).
Also: ``jgtest --help`` and ``jgtest run METHOD --help`` load no JAX and no method."""

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("jgtest", "envs_bridge")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(cwd), "PATH": str(Path(sys.executable).parent)}
    command = "import sys; from importlinter.cli import lint_imports_command; sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()"
    return subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, cwd=cwd, env=env)


def test_the_import_contracts_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 kept, 0 broken" in result.stdout


def test_the_contracts_break_when_a_cycle_or_a_bridge_to_a_method_is_introduced(tmp_path):
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "data", "templates"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "jgtest" / "envs" / "probe.py").write_text("from jgtest.methods.wuji.config import STRATEGIES\n")  # envs -> methods -> envs
    (tmp_path / "envs_bridge" / "probe.py").write_text("from jgtest.methods.reline.config import GAMES\n")
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "0 kept, 3 broken" in result.stdout
    assert "jgtest.envs.probe -> jgtest.methods.wuji.config" in result.stdout.replace("\n", " ")


def test_no_import_cycle_runs_through_both_root_packages():
    graph = grimp.build_graph(*PACKAGES)
    cycles = [(a, b) for a in graph.modules for b in graph.find_modules_directly_imported_by(a) if graph.chain_exists(importer=b, imported=a)]
    assert cycles == []
