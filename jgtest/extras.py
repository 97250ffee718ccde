"""Optional dependencies: a one-line refusal naming the pip extra that installs a missing one.

Example: ``require("craftax", "craftax", "craftax:Craftax-Classic-Symbolic-v1")`` raises
``BadInput("craftax:Craftax-Classic-Symbolic-v1 needs the craftax package, not installed here:
pip install -e '.[craftax]'")`` where Craftax is not installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from jgtest.errors import BadInput


def require(module: str, extra: str, what: str) -> Path:
    """The installed top-level ``module``'s directory.

    Raises:
      BadInput: ``module`` is not installed; the message names ``what`` needs it and the
        ``extra`` that installs it.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise BadInput(
            f"{what} needs the {module.replace('_', '-')} package, not installed here: "
            f"pip install -e '.[{extra}]'"
        )
    return Path(spec.origin).parent
