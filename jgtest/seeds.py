"""Campaign seeds: ``0 <= seed < 2**32``.

``jax.random.key(seed)`` keeps 32 bits of a seed, so seed ``2**32`` would silently run seed 0's
campaign, and a negative one another's. Every entry (the command line, each method's config, a bug
record) checks its seeds here instead. Imports nothing heavy (the command line's ``--help`` uses it).
"""

from __future__ import annotations

import numbers

from jgtest.errors import BadInput

#: One past the largest seed.
SEED_LIMIT = 2**32


def check_seed(seed, what: str = "seed") -> int:
    """``seed`` as an ``int``, once checked to be a whole number in ``[0, 2**32)``.

    Raises:
      BadInput: not a whole number (a bool, a float), or out of range; the message names ``what``.
    """
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
        raise BadInput(f"{what} must be a whole number, got {seed!r}")
    if not 0 <= seed < SEED_LIMIT:
        raise BadInput(f"{what} must be in [0, 2**32), got {seed}: seeds are 32-bit")
    return int(seed)
