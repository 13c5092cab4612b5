"""Links: the one model of how bytes cross between the client, the host and devices (pure).

A :class:`LinkModel` says what a link is (rate, latency, duplex, burst); a :class:`Link`
paces transfers to it when it has a rate and counts them always (bytes, transfers, busy
and waited seconds, per direction). The runtime charges every byte it moves on one
(``colony.runtime.links``); nearstore's device-to-device and host links are Links too.
:func:`gbps_to_Bps` is the one Gbit/s conversion.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable


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
    transfer that arrives at most 50 ms after the previous one finished continues a stream:
    the time since then was its own transport time (and any oversleep), which a real link
    overlaps with its own, so a stream takes max(transport, size / rate) per transfer and
    achieves the configured rate (or the transport's, when that is slower). A lone call on
    an idle link waits latency + size / rate in full; ``busy_s`` always records that charge.
    A transfer that is a message of its own (``stream=False``: a query's push-back) never
    continues another's stream: the gap before it was the link standing idle, not its own
    transport (a 287-byte reply 38 ms earlier let a 50 MB push-back cross for free).
    """

    STREAM_GAP_S = 0.05    # a transfer this soon after the previous one finished continues its stream
    # a wait shorter than this is charged, not slept: time.sleep overshoots it by ~50 us and
    # hands the core to other threads (a 5 KB query plan at 16 Gbit/s owes 2.5 us). The lane's
    # virtual finish still counts it, so the next transfer queues behind it and a stream of
    # small ones is paced in aggregate.
    MIN_SLEEP_S = 1e-4

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
            lanes = self.directions if model.duplex else ("shared",)
            self._finish = {d: float("-inf") for d in lanes}   # idle: no stream to continue

    def _lane(self, d: str) -> str:
        return d if self.model.duplex else "shared"

    def transfer(self, nbytes: int, src: str, dst: str, seconds: float | None = None,
                 credit_s: float = 0.0, stream: bool = True) -> float:
        """Charge ``nbytes`` going ``src -> dst``: wait latency + size/rate when paced (after
        the bytes already queued on that direction), count always. ``seconds`` is the
        measured time of an unpaced transfer (its busy time). ``credit_s``: how long these same
        bytes have already been (or will be) charged by another link in series (nearstore's
        topology over the runtime's links): the transfer counts as begun that long ago, so
        only the remainder is waited and the slower link sets the pace, not the sum of both.
        ``stream=False``: a message of its own, never the continuation of an earlier transfer.
        Returns the seconds charged (slept, unless below ``MIN_SLEEP_S``: then queued)."""
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
                if stream and fin < now <= fin + self.STREAM_GAP_S:
                    # a stream: the time since the previous transfer finished was this one's own
                    # transport time, which a real link overlaps with its own (up to size / rate)
                    allowance = n / m.rate
                else:
                    allowance = m.burst / m.rate
                # credit_s: these bytes have been moving that long already (on a link in series)
                start = max(fin, now - max(allowance, credit_s))
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
        if wait >= self.MIN_SLEEP_S:
            self._sleep(wait)
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


def counted(stats: list[dict], link: str, direction: str, field: str = "bytes") -> float:
    """One counter (``bytes``, ``transfers``, ``busy_s``, ``waited_s``) of one direction of a
    link, from link stats as ``Colony.links()`` / ``LocalColony.link_stats()`` return them;
    0 where that link or direction has carried nothing yet."""
    return sum(ln["directions"][direction][field] for ln in stats
               if ln["link"] == link and direction in ln["directions"])


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
    if type(obj).__module__.split(".")[0] not in ("pyarrow", "numpy"):
        return 0                                # facts about data (an Entry's nbytes) are not data
    nbytes = getattr(obj, "nbytes", None)      # pa.Table / RecordBatch / Array, numpy arrays
    if isinstance(nbytes, int):
        return nbytes
    size = getattr(obj, "size", None)          # pa.Buffer
    if isinstance(size, int):
        return size
    return 0
