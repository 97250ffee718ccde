"""Campaign seeds: ``0 <= seed < 2**32``, checked by every entry (command line, configs, records).

* chosen: refuse other seeds, because ``jax.random.key`` keeps 32 bits and would silently run
  another seed's campaign. Imports nothing heavy (``--help`` uses it).
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
