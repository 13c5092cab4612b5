"""Link pacing for nearstore: the host link and each device's device-to-device link.

A thin adapter over the runtime's token bucket (:mod:`colony.pacing`): rates are given
in bit/s with ``None`` meaning unpaced (the link then only counts bytes), and the
default burst is 10 ms of traffic but at least 64 KiB (one socket buffer), so tiny
control messages are not charged a sleep each.
"""

from __future__ import annotations

import threading
import time

from colony.errors import NearStoreError
from colony.pacing import TokenBucket as _Bucket


class TokenBucket:
    def __init__(self, rate_bps: float | None, burst_bytes: int | None = None,
                 clock=time.monotonic, sleep=time.sleep) -> None:
        if rate_bps is not None and rate_bps <= 0:
            raise NearStoreError(f"link rate {rate_bps} bit/s must be positive (None = unpaced)")
        self.rate_Bps = None if rate_bps is None else rate_bps / 8.0
        if self.rate_Bps is None:
            self._b = None
            self.burst = 0
        else:
            self.burst = burst_bytes if burst_bytes is not None else max(64 << 10, int(self.rate_Bps * 0.01))
            # the runtime bucket needs a positive burst; 1 byte is as good as none
            self._b = _Bucket(self.rate_Bps, max(1, self.burst), clock=clock, sleep=sleep)
        self._lock = threading.Lock()
        self._bytes = 0

    @property
    def paced(self) -> bool:
        return self._b is not None

    @property
    def bytes(self) -> int:
        return self._b.bytes if self._b is not None else self._bytes

    @property
    def waited_s(self) -> float:
        return self._b.waited if self._b is not None else 0.0

    def consume(self, nbytes: int) -> float:
        """Take ``nbytes`` of tokens; sleep until they are earned. Returns seconds slept."""
        if self._b is None:
            with self._lock:
                self._bytes += nbytes
            return 0.0
        return self._b.consume(nbytes)


def gbps(rate: float | None) -> float | None:
    """Gbit/s -> bit/s (None stays unpaced)."""
    return None if rate is None else float(rate) * 1e9
