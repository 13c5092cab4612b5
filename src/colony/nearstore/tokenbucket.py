"""Token-bucket pacing for emulated links (host link, device-to-device link).

A transfer of n bytes takes tokens; when the bucket is short the caller sleeps until the
debt is paid at the configured rate, so a link never carries more than ``rate`` on
average and at most ``burst`` bytes ahead of it. Thread-safe: concurrent senders share
one link's rate. ``rate_bps=None`` means unpaced (the link only counts bytes).
"""

from __future__ import annotations

import threading
import time

from colony.errors import NearStoreError


class TokenBucket:
    def __init__(self, rate_bps: float | None, burst_bytes: int | None = None,
                 clock=time.monotonic, sleep=time.sleep) -> None:
        if rate_bps is not None and rate_bps <= 0:
            raise NearStoreError(f"link rate {rate_bps} bit/s must be positive (None = unpaced)")
        self.rate_Bps = None if rate_bps is None else rate_bps / 8.0
        # Default burst: 10 ms of traffic, at least 64 KiB (one socket buffer's worth).
        self.burst = burst_bytes if burst_bytes is not None else (
            0 if rate_bps is None else max(64 << 10, int(self.rate_Bps * 0.01)))
        self._clock, self._sleep = clock, sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()
        self.bytes = 0            # everything that passed, paced or not
        self.waited_s = 0.0       # total time callers slept for tokens

    @property
    def paced(self) -> bool:
        return self.rate_Bps is not None

    def consume(self, nbytes: int) -> float:
        """Take ``nbytes`` of tokens; sleep until they are earned. Returns seconds slept."""
        with self._lock:
            self.bytes += nbytes
            if self.rate_Bps is None:
                return 0.0
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate_Bps)
            self._last = now
            self._tokens -= nbytes
            wait = -self._tokens / self.rate_Bps if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
            with self._lock:
                self.waited_s += wait
        return wait


def gbps(rate: float | None) -> float | None:
    """Gbit/s -> bit/s (None stays unpaced)."""
    return None if rate is None else float(rate) * 1e9
