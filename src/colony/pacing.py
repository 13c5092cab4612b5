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
from dataclasses import dataclass
from typing import Any, Callable


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
        return cls(gbps_to_Bps(gbit_per_s), **kw)

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


def gbps_to_Bps(gbit_per_s: float | None) -> float | None:
    """Gbit/s -> bytes/s (None stays None: unpaced). The one place Colony converts link rates."""
    return None if gbit_per_s is None else float(gbit_per_s) * 1e9 / 8


@dataclass(frozen=True)
class LinkModel:
    """What a link is: ``rate`` bytes/s (None: unpaced, the transport's own speed),
    ``latency_s`` charged per transfer, ``duplex`` (True: each direction has the full
    rate; False: both directions share it) and ``burst`` bytes that may pass without
    waiting (0: every transfer is charged exactly latency + size / rate)."""

    rate: float | None = None
    latency_s: float = 0.0
    duplex: bool = True
    burst: float = 0.0

    @classmethod
    def gbps(cls, gbit_per_s: float | None, **kw) -> "LinkModel":
        return cls(rate=gbps_to_Bps(gbit_per_s), **kw)

    @property
    def paced(self) -> bool:
        return self.rate is not None

    @property
    def gbit_per_s(self) -> float | None:
        return None if self.rate is None else self.rate * 8 / 1e9

    def cost_s(self, nbytes: int) -> float:
        """What one transfer of ``nbytes`` is charged on an idle link."""
        return 0.0 if self.rate is None else self.latency_s + nbytes / self.rate


class Link:
    """One link between two endpoints (``a<->b``): paced by its :class:`LinkModel` when the
    model has a rate, counted always (bytes, transfers and busy seconds per direction).

    This is the single pacing point of Colony: every byte the runtime moves between the
    client, the host and devices is charged here by the endpoint that sends or receives it.
    Each direction keeps a virtual finish time: a transfer starts when the bytes queued
    before it have drained, so concurrent senders share the rate in arrival order. A
    sleep that overshoots is credited to the transfer that follows right after it, so a
    stream of bulk transfers achieves the configured rate, while a lone small call is
    still charged latency + size / rate.
    """

    MAX_CREDIT_S = 0.005   # at most this much oversleep is credited
    GAP_S = 0.0005         # the caller's own time between two back-to-back transfers

    def __init__(self, a: str, b: str, model: LinkModel, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.a, self.b = a, b
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self.counts = {d: {"bytes": 0, "transfers": 0, "busy_s": 0.0, "waited_s": 0.0} for d in self.directions}
        self.set_model(model)

    @property
    def name(self) -> str:
        return f"{self.a}<->{self.b}"

    @property
    def directions(self) -> tuple[str, str]:
        return f"{self.a}->{self.b}", f"{self.b}->{self.a}"

    def set_model(self, model: LinkModel) -> None:
        """Change the model at run time (counters are kept)."""
        if model.rate is not None and not model.rate > 0:
            raise ValueError(f"link rate must be > 0 bytes/s (None = unpaced), got {model.rate!r}")
        with self._lock:
            self.model = model
            now = self._clock()
            lanes = self.directions if model.duplex else ("shared",)
            self._finish = {d: now for d in lanes}
            self._late = {d: 0.0 for d in lanes}

    def _lane(self, d: str) -> str:
        return d if self.model.duplex else "shared"

    def transfer(self, nbytes: int, src: str, dst: str, seconds: float | None = None) -> float:
        """Charge ``nbytes`` going ``src -> dst``: wait latency + size/rate when paced (after
        the bytes already queued on that direction), count always. ``seconds`` is the
        measured time of an unpaced transfer (its busy time). Returns the seconds waited."""
        d = f"{src}->{dst}"
        if d not in self.counts:
            raise ValueError(f"link {self.name} has no direction {d}")
        n = int(nbytes)
        if n < 0:
            raise ValueError("cannot transfer a negative number of bytes")
        m = self.model
        wait, target, lane = 0.0, None, self._lane(d)
        with self._lock:
            if m.rate is not None:
                now = self._clock()
                fin = self._finish[lane]
                if fin < now <= fin + self._late[lane] + self.GAP_S:
                    start = fin                       # right behind the previous transfer: credit its overshoot
                else:
                    start = max(fin, now - m.burst / m.rate)
                target = start + n / m.rate
                self._finish[lane] = target
                wait = max(0.0, target - now) + m.latency_s
                busy = m.cost_s(n)
            else:
                busy = seconds or 0.0
            c = self.counts[d]
            c["bytes"] += n
            c["transfers"] += 1
            c["busy_s"] += busy
            c["waited_s"] += wait
        if wait > 0:
            self._sleep(wait)
            late = self._clock() - (target + m.latency_s)
            with self._lock:
                self._late[lane] = min(self.MAX_CREDIT_S, max(0.0, late))
        return wait

    @property
    def waited_s(self) -> float:
        """Seconds transfers were held back by pacing, both directions."""
        with self._lock:
            return sum(c["waited_s"] for c in self.counts.values())

    @property
    def bytes(self) -> int:
        with self._lock:
            return sum(c["bytes"] for c in self.counts.values())

    def stats(self) -> dict:
        with self._lock:
            return {"link": self.name, "gbps": self.model.gbit_per_s, "latency_s": self.model.latency_s,
                    "duplex": self.model.duplex, "paced": self.model.paced,
                    "directions": {d: dict(c) for d, c in self.counts.items()}}


def payload_bytes(obj: Any) -> int:
    """Bytes of the Arrow data and buffers in a call's arguments or result (what crosses a link)."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return memoryview(obj).nbytes
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return 0
    if isinstance(obj, dict):
        return sum(payload_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(payload_bytes(v) for v in obj)
    nbytes = getattr(obj, "nbytes", None)      # pa.Table / RecordBatch / Array, numpy arrays
    if isinstance(nbytes, int):
        return nbytes
    size = getattr(obj, "size", None)          # pa.Buffer
    if isinstance(size, int) and hasattr(obj, "to_pybytes"):
        return size
    return 0
