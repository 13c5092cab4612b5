"""Calibration: a fixed suite of timed runs per device, and the device's one calibration
record (pure; no Ray).

Cost models learn devices only from these records, never from emulation settings. The
in-device part (memcpy, Arrow IPC serialize/deserialize, the Colony object format, a few
Arrow kernels) runs inside the device's process under its real budgets; the runtime adds
transfers at several sizes over the device's link. One record per device,
``$COLONY_CALIBRATION_DIR/<device>.json`` (default ``~/.cache/colony/calibration``), holds
the suite's results, the query cost models (``query``: execution, serialization, setup,
link and call-path models) and the fingerprint the runtime computed for the device. The
fingerprint is only compared, never read: a record of another fingerprint is stale and
dropped whole the next time any part is written (:func:`update`).
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


def path_for(device: str, directory=None) -> Path:
    return (Path(directory) if directory else calibration_dir()) / f"{device}.json"


def save(device: str, result: dict, directory=None) -> Path:
    p = path_for(device, directory)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=1, sort_keys=True))
    os.replace(tmp, p)
    return p


def load(device: str, directory=None) -> dict:
    """The persisted record of ``device`` as stored, or {} when it was never calibrated."""
    p = path_for(device, directory)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def record(device: str, fingerprint: str, directory=None) -> dict:
    """The device's record if it was made for ``fingerprint``; {} when there is none;
    ``{"stale": why}`` when it was made for another (the device changed: recalibrate)."""
    rec = load(device, directory)
    if not rec:
        return {}
    if rec.get("fingerprint") != fingerprint:
        return {"stale": f"device {device!r} changed since its calibration (role, threads, link, runtime, software "
                         "or layout); recalibrate it (colony calibrate, or any query recalibrates its cost models)"}
    return rec


def update(device: str, fingerprint: str, parts: dict, directory=None) -> dict:
    """Write ``parts`` into the device's record; a record of another fingerprint goes whole."""
    rec = load(device, directory)
    if rec.get("fingerprint") != fingerprint:
        rec = {}
    rec.update(parts)
    rec["fingerprint"] = fingerprint
    save(device, rec, directory)
    return rec


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
