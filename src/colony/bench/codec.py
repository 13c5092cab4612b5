"""Codec benchmark: serialize/deserialize throughput and ratio of every codec, at 1 thread
and all threads, on uniform particles and ADS-B/AIS-shaped data, with pyarrow's own IPC
writer side by side in the same run."""

from __future__ import annotations

import os

import pyarrow as pa

from colony.machine import describe as machine
from colony.codec import CODECS, pack, unpack
from colony.timing import best_of

# pyarrow's IPC compression that each Colony codec is compared with
_PYARROW_PEER = {"none": None, "inner-lz4": "lz4", "inner-zstd": "zstd", "outer-lz4": "lz4",
                 "outer-zstd": "zstd", "outer-deflate": "zstd"}


def _tile(t: pa.Table, nbytes: int) -> pa.Table:
    k = max(1, -(-nbytes // max(t.nbytes, 1)))
    return pa.concat_tables([t] * k).combine_chunks()


def datasets(mb: int) -> dict[str, pa.Table]:
    from colony.data import load_ais, load_opensky, uniform
    return {
        "uniform": uniform(mb * 2**20 // 72, seed=0).combine_chunks(),
        "adsb": _tile(load_opensky(), mb * 2**20),
        "ais": _tile(load_ais(), mb * 2**20),
    }


def _pyarrow_ipc(table: pa.Table, compression, threads: int, repeats: int) -> dict:
    opts = pa.ipc.IpcWriteOptions(compression=compression, use_threads=threads > 1)

    def write():
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema, options=opts) as w:
            w.write_table(table)
        return sink.getvalue()

    buf = write()
    read_opts = pa.ipc.IpcReadOptions(use_threads=threads > 1)
    ser = best_of(write, repeats)
    de = best_of(lambda: pa.ipc.open_stream(buf, options=read_opts).read_all(), repeats)
    return {"serialize_mbps": table.nbytes / ser / 1e6, "deserialize_mbps": table.nbytes / de / 1e6,
            "ratio": buf.size / table.nbytes}


def _with_threads(n: int):
    """Arrow's own pool sized to n for pyarrow's writer (inner codecs use it too)."""
    pa.set_cpu_count(n)


def zero_copy_decode_ms(gib: float = 1.0, repeats: int = 5) -> dict:
    from colony.data import uniform
    t = uniform(int(gib * 2**30 / 72), seed=1).combine_chunks()
    buf = pack(t)
    del t
    best = best_of(lambda: unpack(buf, verify=False), repeats)
    verified = best_of(lambda: unpack(buf, verify=True), 1)
    return {"object_bytes": buf.size, "decode_ms": best * 1e3, "decode_verified_ms": verified * 1e3}


def run(mb: int = 256, repeats: int = 3, zero_copy_gib: float = 1.0, progress=None) -> dict:
    cores = os.cpu_count() or 1
    thread_counts = sorted({1, cores})
    rows = []
    data = datasets(mb)
    steps = len(data) * len(thread_counts) * (len(CODECS) + 3)
    done = 0
    for ds, table in data.items():
        for threads in thread_counts:
            _with_threads(threads)
            peers = {}
            for comp in (None, "lz4", "zstd"):
                peers[comp] = _pyarrow_ipc(table, comp, threads, repeats)
                rows.append({"dataset": ds, "codec": f"pyarrow-{comp or 'none'}", "threads": threads,
                             "raw_bytes": table.nbytes, **peers[comp]})
                done += 1
                progress and progress(done, steps)
            for name in CODECS:
                buf = pack(table, name, threads=threads)
                ser = best_of(lambda: pack(table, name, threads=threads), repeats)
                de = best_of(lambda: unpack(buf, threads=threads), repeats)
                peer = peers[_PYARROW_PEER[name]]
                r = {"dataset": ds, "codec": name, "threads": threads, "raw_bytes": table.nbytes,
                     "serialize_mbps": table.nbytes / ser / 1e6,
                     "deserialize_mbps": table.nbytes / de / 1e6, "ratio": buf.size / table.nbytes,
                     "vs_pyarrow": f"pyarrow-{_PYARROW_PEER[name] or 'none'}"}
                r["serialize_vs_pyarrow"] = r["serialize_mbps"] / peer["serialize_mbps"]
                r["deserialize_vs_pyarrow"] = r["deserialize_mbps"] / peer["deserialize_mbps"]
                rows.append(r)
                done += 1
                progress and progress(done, steps)
    _with_threads(cores)

    def get(ds, codec, threads, key):
        return next(r[key] for r in rows if r["dataset"] == ds and r["codec"] == codec and r["threads"] == threads)

    summary = {}
    for outer in ("zstd", "deflate", "lz4"):
        one = get("uniform", f"outer-{outer}", 1, "serialize_mbps")
        allc = get("uniform", f"outer-{outer}", cores, "serialize_mbps")
        summary[f"outer_{outer}_scaling"] = allc / (one * cores)
    # what this machine's extra cores give at all: pyarrow's own multi-threaded zstd, same run
    summary["pyarrow_zstd_scaling_reference"] = (get("uniform", "pyarrow-zstd", cores, "serialize_mbps")
                                                 / (get("uniform", "pyarrow-zstd", 1, "serialize_mbps") * cores))
    zc = zero_copy_decode_ms(zero_copy_gib) if zero_copy_gib else None
    if zc:
        summary["zero_copy_decode_ms_1gib"] = zc["decode_ms"] * (1.0 / zero_copy_gib)
    for name in CODECS:
        for threads in thread_counts:
            summary[f"{name}_serialize_vs_pyarrow_t{threads}"] = get("uniform", name, threads, "serialize_vs_pyarrow")
            summary[f"{name}_deserialize_vs_pyarrow_t{threads}"] = get("uniform", name, threads, "deserialize_vs_pyarrow")
    return {"benchmark": "codec", "machine": machine(), "config": {"mb_per_dataset": mb, "repeats": repeats,
            "threads": thread_counts, "timing": "best of repeats; deserialize verifies checksums"},
            "summary": summary, "zero_copy": zc, "rows": rows}
