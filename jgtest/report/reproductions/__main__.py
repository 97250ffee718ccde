"""``python -m jgtest.report.reproductions [--check]``."""

import sys

from jgtest.report.reproductions import main

if __name__ == "__main__":
    sys.exit(main())
