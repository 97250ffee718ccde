"""What a run leaves for people: reports, JUnit XML, replay, shrinking, regression runs, plots and
the reproduction pages. Names load on first use (PEP 562), so the reproduction pages need no JAX."""

import importlib

__all__ = ["BugRecord", "BugRecordWriter", "read_bug_records"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("jgtest.records"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
