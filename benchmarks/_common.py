"""What every benchmark script shares: writing its JSON result."""

from __future__ import annotations

import json
from pathlib import Path


def write_json(path: Path | None, result: dict) -> None:
    """Writes ``result`` to ``path`` (parents created) and says so; nothing without a path."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")
