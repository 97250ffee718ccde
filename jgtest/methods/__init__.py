"""The test campaigns: each a frozen config plus a ``run`` function."""
