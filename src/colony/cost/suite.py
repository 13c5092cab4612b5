"""Calibration: a fixed suite of timed runs per device, persisted per device (pure; no Ray).

Cost models learn devices only from these files, never from emulation settings. The
in-device part (memcpy, Arrow IPC serialize/deserialize, the Colony object format, a few
Arrow kernels) runs inside the device's process under its real budgets; the runtime adds
transfers at several sizes over the device's link. Results live in
``$COLONY_CALIBRATION_DIR/<device>.json`` (default ``~/.cache/colony/calibration``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from colony import codec
from colony.machine import describe
from colony.timing import best_of

ENV = "COLONY_CALIBRATION_DIR"
SIZES = (64 << 10, 1 << 20, 16 << 20, 64 << 20)          # bytes for memcpy / transfers
ROWS = (100_000, 1_000_000)                              # rows for IPC and kernels
QUICK_SIZES = (64 << 10, 1 << 20, 8 << 20)
QUICK_ROWS = (50_000, 200_000)


def calibration_dir() -> Path:
    env = os.environ.get(ENV)
    return Path(env) if env else Path.home() / ".cache" / "colony" / "calibration"


def path_for(device: str) -> Path:
    return calibration_dir() / f"{device}.json"


def save(device: str, result: dict) -> Path:
    p = path_for(device)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True))
    os.replace(tmp, p)
    return p


def load(device: str) -> dict:
    """The persisted calibration of ``device``, or {} when it was never calibrated."""
    p = path_for(device)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def _particles(rows: int, seed: int) -> pa.Table:
    from colony.data import uniform
    return uniform(rows, seed=seed)


def device_suite(threads: int, seed: int = 0, quick: bool = False) -> dict:
    """Time the fixed in-device suite; every entry is (size, seconds, rate)."""
    sizes = QUICK_SIZES if quick else SIZES
    rows_list = QUICK_ROWS if quick else ROWS
    out: dict = {"threads": threads, "machine": describe(), "memcpy": [], "ipc_serialize": [],
                 "ipc_deserialize": [], "object_pack": [], "object_unpack": [], "kernels": []}
    rng = np.random.default_rng(seed)
    for n in sizes:
        src = rng.integers(0, 255, n, dtype=np.uint8)
        dst = np.empty_like(src)
        s = best_of(lambda: np.copyto(dst, src))
        out["memcpy"].append({"bytes": n, "seconds": s, "gbps": n / s / 1e9})
    for rows in rows_list:
        t = _particles(rows, seed)
        sink_size = pa.MockOutputStream()
        with pa.ipc.new_stream(sink_size, t.schema) as w:
            w.write_table(t)

        def ser():
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, t.schema) as w:
                w.write_table(t)
            return sink.getvalue()
        buf = ser()
        s = best_of(ser)
        out["ipc_serialize"].append({"rows": rows, "bytes": buf.size, "seconds": s, "gbps": buf.size / s / 1e9})
        s = best_of(lambda: pa.ipc.open_stream(buf).read_all())
        out["ipc_deserialize"].append({"rows": rows, "bytes": buf.size, "seconds": s, "gbps": buf.size / s / 1e9})
        obj = codec.pack([t], "none", threads=threads)
        s = best_of(lambda: codec.pack([t], "none", threads=threads))
        out["object_pack"].append({"rows": rows, "bytes": obj.size, "seconds": s, "gbps": obj.size / s / 1e9})
        s = best_of(lambda: codec.unpack(obj, verify=True, threads=threads))
        out["object_unpack"].append({"rows": rows, "bytes": obj.size, "seconds": s, "gbps": obj.size / s / 1e9})
        kernels = {
            "filter": lambda: t.filter(pc.greater_equal(t["x"], 0.5)),
            "sum": lambda: pc.sum(t["vx"]),
            "sort_indices": lambda: pc.sort_indices(t, [("particle_id", "ascending")]),
            "min_max": lambda: pc.min_max(t["y"]),
            "multiply": lambda: pc.multiply(t["vx"], t["vx"]),
        }
        for name, fn in kernels.items():
            s = best_of(fn)
            out["kernels"].append({"kernel": name, "rows": rows, "seconds": s, "rows_per_s": rows / s})
    return out
