"""An emulated device<->host link for in-process colonies (LocalColony has none).

Calls to a non-host device pay ``latency + bytes / bandwidth`` for the bytes they return
(pa.Buffer/bytes found in the answer), serialized per link so concurrent transfers share
its bandwidth. The cost models never read these settings: they learn the link from timed
``blob`` calls like any other device (see colony.query.client.calibrate_colony).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pyarrow as pa


def payload_bytes(obj) -> int:
    if isinstance(obj, (pa.Buffer,)):
        return obj.size
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return len(obj)
    if isinstance(obj, pa.Table):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(payload_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(payload_bytes(v) for v in obj)
    return 0


class EmulatedLink:
    """Wrap a colony-like object (``call``/``devices``); time transfers to/from non-host devices."""

    def __init__(self, colony, host: str, bandwidth_Bps: float = 1.25e9, latency_s: float = 50e-6) -> None:
        self.inner = colony
        self.host = host
        self.bandwidth = float(bandwidth_Bps)
        self.latency = float(latency_s)
        self._locks: dict[str, threading.Lock] = {}

    def devices(self) -> list[str]:
        return self.inner.devices()

    def _pay(self, device: str, nbytes: int) -> None:
        lock = self._locks.setdefault(device, threading.Lock())
        with lock:
            time.sleep(self.latency + nbytes / self.bandwidth)

    def call(self, device: str, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        if device != self.host:
            self._pay(device, payload_bytes(args) + payload_bytes(kwargs))
        out = self.inner.call(device, service, method, *args, **kwargs)
        if device != self.host:
            self._pay(device, payload_bytes(out))
        return out

    def __getattr__(self, name):
        return getattr(self.inner, name)
