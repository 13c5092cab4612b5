"""A token bucket that paces a link to a configured rate (pure; no Ray).

The runtime uses it to emulate a slower host<->device link: every transfer over an
emulated device's link first takes ``nbytes`` tokens, so throughput over any window
longer than ``burst / rate`` cannot exceed the rate. Services can reuse it to pace
device-to-device transfers. Reservations may run into debt, so one call for a large
transfer waits exactly ``n / rate`` after the burst is spent, and concurrent callers
are served in arrival order. A bucket with rate ``None`` is an unpaced link: it never
waits and only counts bytes, so callers need no special case for "no pacing".
"""

from __future__ import annotations

import threading
import time
from typing import Callable


class TokenBucket:
    """``rate`` bytes per second (None: unpaced) with a bucket of ``burst`` bytes (default: 10 ms of rate)."""

    def __init__(self, rate: float | None, burst: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        if rate is not None and not rate > 0:
            raise ValueError(f"token bucket rate must be > 0 bytes/s (None = unpaced), got {rate!r}")
        self.rate = None if rate is None else float(rate)
        self.burst = float(burst) if burst is not None else (self.rate or 0.0) * 0.01
        if self.rate is not None and self.burst <= 0:
            raise ValueError(f"token bucket burst must be > 0 bytes, got {burst!r}")
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._last = clock()
        self._lock = threading.Lock()
        self.waited = 0.0       # total seconds callers were held back (for reports)
        self.bytes = 0          # total bytes that passed

    @classmethod
    def gbps(cls, gbit_per_s: float | None, **kw) -> "TokenBucket":
        """A bucket for a link of ``gbit_per_s`` Gbit/s (None: unpaced)."""
        return cls(None if gbit_per_s is None else gbit_per_s * 1e9 / 8, **kw)

    @property
    def paced(self) -> bool:
        return self.rate is not None

    def reserve(self, n: int) -> float:
        """Take ``n`` tokens now and return how long the caller must wait before sending."""
        if n < 0:
            raise ValueError("cannot reserve a negative number of bytes")
        with self._lock:
            self.bytes += n
            if self.rate is None:
                return 0.0
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= n
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
            self.waited += wait
            return wait

    def consume(self, n: int) -> float:
        """Block until ``n`` bytes may pass; returns the seconds waited."""
        wait = self.reserve(n)
        if wait > 0:
            self._sleep(wait)
        return wait
