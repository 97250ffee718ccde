"""``python -m jgtest.cli``: the ``jgtest`` command."""

import sys

from jgtest.cli import main

sys.exit(main())
