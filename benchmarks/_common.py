"""What every benchmark script shares: its ``--quick`` / ``--json`` arguments and writing its JSON
result."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def parse_args(doc: str, argv=None) -> argparse.Namespace:
    """``--quick`` (fewer sizes and repeats) and ``--json PATH``, described by the script's
    docstring."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--json", type=Path, help="write the results here")
    return parser.parse_args(argv)


def write_json(path: Path | None, result: dict) -> None:
    """Writes ``result`` to ``path`` (parents created) and says so; nothing without a path."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")
