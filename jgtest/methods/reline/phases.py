"""Wall time and progress of a RELINE run's phases (training, calibration, evaluation, ...)."""

from __future__ import annotations

import time


class Phases:
    """Wall time per phase, and the progress callback ``progress(phase, done, total)``."""

    def __init__(self, progress):
        self.progress = progress or (lambda phase, done, total: None)
        self.wall_s: dict[str, float] = {}

    def run(self, phase: str, fn, periods: int = 1):
        start = time.perf_counter()
        self.progress(phase, 0, periods)
        result = fn(lambda done, total: self.progress(phase, done, total))
        self.progress(phase, periods, periods)
        self.wall_s[phase] = round(time.perf_counter() - start, 2)
        return result
