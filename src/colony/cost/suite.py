"""Calibration: a fixed suite of timed runs per device, and the device's one calibration
record (pure; no Ray).

Cost models learn devices only from these records, never from emulation settings. The
in-device part (memcpy, Arrow IPC serialize/deserialize, the Colony object format, a few
Arrow kernels) runs inside the device's process under its real budgets; the runtime adds
transfers at several sizes over the device's link. One record per device and fingerprint,
``$COLONY_CALIBRATION_DIR/<device>@<fingerprint>.json`` (default ``~/.cache/colony/calibration``),
holds the suite's results, the query cost models (``query``: execution, serialization, setup,
link and call-path models) and the fingerprint the runtime computed for the device. The
fingerprint is only compared and used as a file key, never read: a device whose only records
carry other fingerprints is stale (it changed, or it is another colony's device of the same
name; each keeps its own record instead of overwriting the other's). The newest
:data:`KEEP` records per device name are kept.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from colony import codec
from colony.codec import profile as codec_profile
from colony.machine import describe
from colony.timing import best_of

ENV = "COLONY_CALIBRATION_DIR"
SIZES = (64 << 10, 1 << 20, 16 << 20, 64 << 20)          # bytes for memcpy / transfers
ROWS = (100_000, 1_000_000)                              # rows for IPC and kernels
QUICK_SIZES = (64 << 10, 1 << 20, 8 << 20)
QUICK_ROWS = (50_000, 200_000)
KEEP = 4                                                 # records kept per device name (other fingerprints)


def calibration_dir() -> Path:
    env = os.environ.get(ENV)
    return Path(env) if env else Path.home() / ".cache" / "colony" / "calibration"


def path_for(device: str, fingerprint: str, directory=None) -> Path:
    return (Path(directory) if directory else calibration_dir()) / f"{device}@{fingerprint}.json"


def _all(device: str, directory=None) -> list[Path]:
    """The device's records, whatever their fingerprint, newest first."""
    d = Path(directory) if directory else calibration_dir()
    found = [p for p in d.glob(f"{glob.escape(device)}@*.json") if p.stem.rpartition("@")[0] == device]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def _others(device: str, fingerprint: str, directory=None) -> list[Path]:
    """The device's records made for other fingerprints, newest first."""
    mine = path_for(device, fingerprint, directory)
    return [p for p in _all(device, directory) if p != mine]


def newest(device: str, directory=None) -> Path | None:
    """The device's most recently written record of any fingerprint (None: none): what an
    offline tool (``colony.bench.decision_cpu``, ``bench/nested_loop_join_cost.py``) prices
    with, the models the last benchmark on this machine calibrated or used."""
    found = _all(device, directory)
    return found[0] if found else None


def save(device: str, fingerprint: str, result: dict, directory=None) -> Path:
    p = path_for(device, fingerprint, directory)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({**result, "fingerprint": fingerprint}, indent=1, sort_keys=True))
    os.replace(tmp, p)
    for old in _others(device, fingerprint, directory)[KEEP - 1:]:
        old.unlink(missing_ok=True)
    return p


def load(device: str, fingerprint: str, directory=None) -> dict:
    """The persisted record of ``device`` for ``fingerprint`` as stored, or {} when there is none."""
    try:
        return json.loads(path_for(device, fingerprint, directory).read_text())
    except (OSError, ValueError):
        return {}


def record(device: str, fingerprint: str, directory=None) -> dict:
    """The device's record made for ``fingerprint``; {} when the device was never calibrated;
    ``{"stale": why}`` when its only records are for other fingerprints (recalibrate)."""
    rec = load(device, fingerprint, directory)
    if rec or not _others(device, fingerprint, directory):
        return rec
    return {"stale": f"device {device!r} changed since its calibration (role, threads, link, runtime, software "
                     "or layout); recalibrate it (colony calibrate, or any query recalibrates its cost models)"}


def update(device: str, fingerprint: str, parts: dict, directory=None) -> dict:
    """Write ``parts`` into the device's record for ``fingerprint``."""
    rec = {**load(device, fingerprint, directory), **parts}
    save(device, fingerprint, rec, directory)
    rec["fingerprint"] = fingerprint
    return rec


def _particles(rows: int, seed: int) -> pa.Table:
    from colony.data import uniform
    return uniform(rows, seed=seed)


def device_suite(threads: int, seed: int = 0, quick: bool = False) -> dict:
    """Time the fixed in-device suite; every entry is (size, seconds, rate); ``codecs`` holds
    each (codec, engine)'s throughput and ratio (``colony.codec.profile.profiles``)."""
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
    # every codec on every compression engine present, at the largest row count (codec advice)
    table = _particles(rows_list[-1], seed).combine_chunks()
    out["codecs"] = [asdict(p) for p in codec_profile.calibrate(table, threads=threads)]
    return out
