"""The one benchmark timer: every calibration and benchmark times work the same way."""

from __future__ import annotations

import time
from typing import Callable


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """Fastest of ``repeats`` runs in seconds (the least disturbed measurement)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
