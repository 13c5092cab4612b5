"""Run the calibration suite on every device of a colony and persist it per device.

The in-device suite (memcpy, IPC, object format, Arrow kernels) runs inside each device
actor under its real budgets; transfers at several sizes are timed from this client
over the device's link in both directions (host->device: put + receive + ack;
device->host: a buffer of that size back). Results go into each device's one calibration
record (``colony.cost.suite.update``, with the device's fingerprint; the query cost models
in it stay) on this machine and into each device's context.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import pyarrow as pa
import ray

from colony.cost import suite as calibration
from colony.runtime.client import Colony
from colony.runtime.fingerprint import fingerprint
from colony.runtime.futures import resolve as _resolve


def _transfers(colony: Colony, device: str, sizes, repeats: int) -> list[dict]:
    actor = colony.actor(device)
    out = []
    rng = np.random.default_rng(0)
    for n in sizes:
        buf = pa.py_buffer(rng.integers(0, 255, n, dtype=np.uint8).tobytes())
        best_up = best_down = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            _resolve(actor.echo.remote(ray.put(buf)))
            t1 = time.perf_counter()
            got = _resolve(actor.send.remote(n))
            t2 = time.perf_counter()
            assert len(memoryview(got)) == n
            best_up, best_down = min(best_up, t1 - t0), min(best_down, t2 - t1)
        out.append({"bytes": n, "direction": "host_to_device", "seconds": best_up, "gbps": n / best_up / 1e9})
        out.append({"bytes": n, "direction": "device_to_host", "seconds": best_down, "gbps": n / best_down / 1e9})
    return out


def calibrate(colony: Colony, devices: list[str] | None = None, *, quick: bool = False, repeats: int = 3,
              progress: Callable[[str], None] | None = None) -> dict[str, dict]:
    """Calibrate ``devices`` (default: all) one at a time; returns {device: result}."""
    names = devices or [d.name for d in colony.devices()]
    infos = {d.name: d for d in colony.devices()}
    sizes = calibration.QUICK_SIZES if quick else calibration.SIZES
    results = {}
    for name in names:
        colony.actor(name)   # UnknownDevice early
        if progress:
            progress(name)
        t0 = time.time()
        suite = _resolve(colony.actor(name).calibrate.remote(quick=quick))
        suite["transfers"] = _transfers(colony, name, sizes, repeats)
        suite.update({"device": name, "role": infos[name].role, "label": infos[name].label,
                      "colony": colony.config.name, "timestamp": time.time(), "quick": quick,
                      "duration_s": time.time() - t0})
        calibration.update(name, fingerprint(colony.config.device(name)), suite)
        _resolve(colony.actor(name).set_calibration.remote(suite))
        results[name] = suite
    return results


def record(colony: Colony, device: str) -> dict:
    """``device``'s calibration record for its fingerprint in this colony ({} when it has none,
    ``{"stale": why}`` when it changed since)."""
    colony.actor(device)   # UnknownDevice early
    return calibration.record(device, fingerprint(colony.config.device(device)))


def summary(result: dict) -> dict:
    """A few headline rates from one device's calibration (for tables), at the largest sizes."""
    def top(rows, key="gbps"):
        """The rate at the largest size measured (bandwidth at scale, not cache-resident)."""
        if not rows:
            return 0.0
        size = "bytes" if "bytes" in rows[0] else "rows"
        return max(rows, key=lambda r: r[size])[key]
    up = [t for t in result.get("transfers", []) if t["direction"] == "host_to_device"]
    down = [t for t in result.get("transfers", []) if t["direction"] == "device_to_host"]
    filt = [k for k in result.get("kernels", []) if k["kernel"] == "filter"]
    return {"memcpy_gbps": top(result.get("memcpy", [])), "ipc_ser_gbps": top(result.get("ipc_serialize", [])),
            "ipc_deser_gbps": top(result.get("ipc_deserialize", [])), "h2d_gbps": top(up), "d2h_gbps": top(down),
            "filter_mrows_s": top(filt, "rows_per_s") / 1e6, "threads": result.get("threads")}
