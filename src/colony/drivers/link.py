"""An emulated device<->host link for in-process colonies (LocalColony has none).

Calls to a non-host device pay ``latency + bytes / bandwidth`` for the bytes they return
(pa.Buffer/bytes found in the answer), serialized per link so concurrent transfers share
its bandwidth. The cost models never read these settings: they learn the link from timed
``blob`` calls like any other device (see colony.drivers.query.calibrate_colony).
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

    def devices(self):
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


class PacedColony:
    """A colony-like object (``call``/``devices``) whose calls to some devices cross an
    :class:`EmulatedLink`; one per device, so each link has its own bandwidth.

    Works over an in-process LocalColony and over the Ray runtime's Colony alike (the
    runtime paces put/get/inject itself, but not service-call payloads).
    """

    def __init__(self, colony, host: str, links: dict[str, tuple[float, float]]) -> None:
        self.inner = colony
        self.host = host
        self.links = {d: EmulatedLink(colony, host, bw, lat) for d, (bw, lat) in links.items()}

    def devices(self):
        return self.inner.devices()

    def call(self, device, service, method, *args, **kwargs):
        return (self.links.get(device) or self.inner).call(device, service, method, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def runtime_links(colony, host: str, gbps: dict[str, float] | None = None,
                  latency_s: float = 30e-6) -> PacedColony:
    """Pace service calls to each device of a Ray colony at its link rate (Gbit/s):
    ``gbps`` where given, else the device's configured ``link_gbps``; unpaced if neither."""
    rates = {}
    for d in colony.devices():
        g = (gbps or {}).get(d.name, colony.config.device(d.name).link_gbps)
        if g and d.name != host:
            rates[d.name] = (g * 1e9 / 8, latency_s)
    return PacedColony(colony, host, rates)
