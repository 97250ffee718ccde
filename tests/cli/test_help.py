"""``jgtest --help`` and ``jgtest run METHOD --help`` answer at once: the command line's entry
(``jgtest.cli.main``, as the ``jgtest`` script runs it) loads no JAX, NumPy or method before the
arguments are parsed."""

import subprocess
import sys
from pathlib import Path

from jgtest.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _run_methods() -> list[str]:
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    return list(run._subparsers._group_actions[0].choices)


def test_help_loads_no_jax_numpy_or_method():
    helps = [["--help"], ["run", "--help"]] + [["run", m, "--help"] for m in _run_methods()]
    probe = (
        "import sys\n"
        "from jgtest.cli import main\n"
        f"for argv in {helps!r}:\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as done:\n"
        "        assert done.code == 0, (argv, done.code)\n"
        "heavy = ('jax', 'jaxlib', 'numpy', 'jgtest.methods', 'jgtest.envs')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy[:3] or "
        "m.startswith(heavy[3:])))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert len(helps) >= 9 and "usage: jgtest run compare-explorers" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"
