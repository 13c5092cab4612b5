"""Codec benchmark: serialize/deserialize throughput and ratio of every codec, at 1 thread
and all threads, on uniform particles and ADS-B/AIS-shaped data, with pyarrow's own IPC
writer side by side in the same run."""

from __future__ import annotations

import os
import time

import pyarrow as pa

from colony.machine import describe as machine
from colony.codec import CODECS, pack, read_info, unpack
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


# -- engines: the batched engine API per engine, codec, submitting threads and batch size ----
_ENGINE_PEER = {"lz4": "lz4", "zstd": "zstd", "deflate": "zstd", "gdeflate": "zstd"}
BYTES_ROUTE = "software-bytes"


def _spread(xs: list[float]) -> dict:
    s = sorted(xs)
    return {"min": s[0], "median": s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2,
            "max": s[-1], "n": len(s)}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _engine_names(engines: str) -> list[str]:
    from colony.codec.engines import SoftwareEngine
    from colony.codec.registry import available_engines, register_engine
    present = [n for n, s in available_engines().items() if s == "available"]
    names = present if engines == "all" else [e.strip() for e in engines.split(",") if e.strip()]
    if BYTES_ROUTE in names or engines == "all":
        slow = SoftwareEngine(native_routes=False)    # the per-segment bytes route Colony used before
        slow.name = BYTES_ROUTE
        register_engine(slow)
        names = [n for n in names if n != BYTES_ROUTE] + [BYTES_ROUTE]
    return names


def _thread_counts(cores: int) -> list[int]:
    out, t = [], 1
    while t < cores:
        out.append(t)
        t *= 2
    return sorted(set(out) | {cores})


def run_engines(engines: str = "all", mb: int = 256, rounds: int = 5, batch_sizes=(16, 64, 256),
                thread_counts=None, progress=None, with_routes: bool = True) -> dict:
    """Every engine through the batched API, against pyarrow's own IPC codecs and (DEFLATE)
    a single-stream ISA-L inflate of the same body, measured in interleaved rounds: each
    round times every contender once, so load on a shared machine hits all sides alike."""
    from isal import isal_zlib

    from colony.codec import native
    from colony.codec.engines import DEFAULT_BATCH
    from colony.codec.registry import get_engine
    from colony.data import uniform

    cores = os.cpu_count() or 1
    thread_counts = list(thread_counts or _thread_counts(cores))
    names = _engine_names(engines)
    table = uniform(mb * 2**20 // 72, seed=0).combine_chunks()
    raw = table.nbytes
    plain = pack(table, "none")
    info = read_info(plain)
    body = plain.slice(info.header_len, info.body_len)      # the same IPC body every codec compresses
    rows, cells = [], []
    for codec in ("lz4", "zstd", "deflate", "gdeflate"):
        users = [n for n in names if codec in get_engine(n).codecs]
        for th in thread_counts:
            for n in users:
                sizes = batch_sizes if n != BYTES_ROUTE else (DEFAULT_BATCH,)
                cells += [(codec, th, n, bs) for bs in sizes]
    steps, done = len(cells), 0
    for codec in ("lz4", "zstd", "deflate", "gdeflate"):
        for th in thread_counts:
            mine = [c for c in cells if c[0] == codec and c[1] == th]
            if not mine:
                continue
            _with_threads(th)
            peer = _ENGINE_PEER[codec]
            opts = pa.ipc.IpcWriteOptions(compression=peer, use_threads=th > 1)
            read_opts = pa.ipc.IpcReadOptions(use_threads=th > 1)

            def pa_write():
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, table.schema, options=opts) as w:
                    w.write_table(table)
                return sink.getvalue()
            pa_buf = pa_write()
            contenders = {"pyarrow": {"ser": pa_write,
                                      "de": lambda: pa.ipc.open_stream(pa_buf, options=read_opts).read_all()}}
            if codec == "deflate":
                z = isal_zlib.compress(body, 1)
                contenders["isal-single-stream"] = {"ser": lambda: isal_zlib.compress(body, 1),
                                                    "de": lambda z=z: isal_zlib.decompress(z)}
            objs = {}
            for _, _, n, bs in mine:
                key = f"{n}|{bs}"
                objs[key] = obj = pack(table, f"outer-{codec}", threads=th, engine=n, batch=bs)
                contenders[key] = {
                    "ser": lambda n=n, bs=bs: pack(table, f"outer-{codec}", threads=th, engine=n, batch=bs),
                    "de": lambda n=n, bs=bs, o=obj: unpack(o, threads=th, verify=False, engine=n, batch=bs),
                    "de_verified": lambda n=n, bs=bs, o=obj: unpack(o, threads=th, verify=True, engine=n, batch=bs)}
            times: dict = {k: {m: [] for m in fns} for k, fns in contenders.items()}
            for _ in range(rounds):
                for k, fns in contenders.items():
                    for m, fn in fns.items():
                        times[k][m].append(_timed(fn))
            ratio = {"pyarrow": pa_buf.size / raw, "isal-single-stream": (len(z) / raw) if codec == "deflate" else None}
            for k, ts in times.items():
                n, _, bs = k.partition("|")
                r = {"codec": f"outer-{codec}" if "|" in k else (f"pyarrow-{peer}" if k == "pyarrow" else k),
                     "engine": n if "|" in k else None, "threads": th, "batch": int(bs) if bs else None,
                     "raw_bytes": raw, "ratio": objs[k].size / raw if k in objs else ratio[k]}
                for m, xs in ts.items():
                    key = {"ser": "serialize_gbps", "de": "deserialize_gbps",
                           "de_verified": "deserialize_verified_gbps"}[m]
                    r[key] = _spread([raw / x / 1e9 for x in xs])
                    if k != "pyarrow":
                        peer_xs = times["pyarrow"]["de" if m != "ser" else "ser"]
                        r[key.replace("_gbps", "_vs_pyarrow")] = _spread([p / x for p, x in zip(peer_xs, xs)])
                rows.append(r)
            done += len(mine)
            progress and progress(done, steps)
            del objs, contenders
    _with_threads(cores)
    return {"benchmark": "codec_engines", "machine": machine(),
            "config": {"mb": mb, "rounds": rounds, "threads": thread_counts, "batch_sizes": list(batch_sizes),
                       "engines": names, "default_batch": DEFAULT_BATCH, "native_routes": native.describe(),
                       "timing": "interleaved rounds: each round times every contender once; "
                                 "spread over rounds (min/median/max); ratios are per round, same round",
                       "dataset": "uniform particles (colony.data.uniform), combine_chunks"},
            "summary": _engine_summary(rows, thread_counts),
            "decode_routes": decode_routes(mb, rounds) if with_routes else None,
            "loadavg_1m_at_end": round(os.getloadavg()[0], 2), "rows": rows}


def _engine_summary(rows: list[dict], thread_counts: list[int]) -> dict:
    from colony.codec.engines import DEFAULT_BATCH

    def row(codec, engine, th, batch=DEFAULT_BATCH):
        return next((r for r in rows if r["codec"] == codec and r["engine"] == engine and r["threads"] == th
                     and r["batch"] == batch), None)

    out: dict = {"statistic": "best round (least disturbed on a shared machine); median beside it",
                 "targets": [], "stops_scaling_at_threads": {}}

    def peer(codec, th, name=None):
        name = name or f"pyarrow-{_ENGINE_PEER[codec]}"
        return next(r for r in rows if r["codec"] == name and r["threads"] == th)

    def ratio(a, ka, b, kb, stat):
        return a[ka][stat] / b[kb][stat]

    for codec in ("lz4", "zstd", "deflate"):
        for th in thread_counts:
            sw, old = row(f"outer-{codec}", "software", th), row(f"outer-{codec}", BYTES_ROUTE, th)
            if not sw:
                continue
            pa_row = peer(codec, th)
            key = f"outer-{codec}_t{th}"
            pairs = {"deserialize_unverified_vs_pyarrow": (sw, "deserialize_gbps", pa_row, "deserialize_gbps"),
                     "deserialize_verified_vs_pyarrow": (sw, "deserialize_verified_gbps", pa_row, "deserialize_gbps"),
                     "serialize_vs_pyarrow": (sw, "serialize_gbps", pa_row, "serialize_gbps")}
            if old:
                pairs.update({
                    "deserialize_vs_bytes_route": (sw, "deserialize_gbps", old, "deserialize_gbps"),
                    "deserialize_verified_vs_bytes_route": (sw, "deserialize_verified_gbps", old,
                                                            "deserialize_verified_gbps"),
                    "serialize_vs_bytes_route": (sw, "serialize_gbps", old, "serialize_gbps")})
            if codec == "deflate":
                iso = peer(codec, th, "isal-single-stream")
                pairs.update({
                    "deserialize_unverified_vs_isal_single_stream": (sw, "deserialize_gbps", iso, "deserialize_gbps"),
                    "deserialize_verified_vs_isal_single_stream": (sw, "deserialize_verified_gbps", iso,
                                                                   "deserialize_gbps")})
            s = {name: {"best": ratio(*p, "max"), "median": ratio(*p, "median")} for name, p in pairs.items()}
            out[key] = s
            if th <= 2:
                goals = ([("deserialize_unverified_vs_isal_single_stream", 1.0)] if codec == "deflate" else
                         [("deserialize_unverified_vs_pyarrow", 1.0), ("deserialize_verified_vs_pyarrow", 0.8)])
                goals += [("deserialize_vs_bytes_route", 1.0), ("deserialize_verified_vs_bytes_route", 1.0),
                          ("serialize_vs_bytes_route", 1.0)]
                for name, goal in goals:
                    if name in s:
                        out["targets"].append({"what": f"{key} {name}", "goal": goal,
                                               "value": round(s[name]["best"], 3),
                                               "median": round(s[name]["median"], 3), "met": s[name]["best"] >= goal})
    engines = {r["engine"] for r in rows if r["engine"]}
    for e in sorted(engines):
        for codec in ("lz4", "zstd", "deflate", "gdeflate"):
            series = [(th, r["deserialize_gbps"]["max"]) for th in thread_counts
                      if (r := row(f"outer-{codec}", e, th))]
            if series:
                knee = series[-1][0]
                for (t0, g0), (_, g1) in zip(series, series[1:]):
                    if g1 < 1.15 * g0:        # the next thread count adds less than 15 %
                        knee = t0
                        break
                out["stops_scaling_at_threads"][f"{e}/outer-{codec}"] = knee
    return out


def decode_routes(mb: int = 256, rounds: int = 5) -> dict:
    """The candidate ways to decode an object's segments into one body, one thread,
    decode only (no IPC read, no checksum): how the software engine's route was chosen."""
    import ctypes

    import numpy as np

    from colony.codec import native
    from colony.codec.engines import SoftwareEngine
    from colony.data import uniform

    table = uniform(mb * 2**20 // 72, seed=0).combine_chunks()
    out: dict = {}
    for codec in ("lz4", "zstd", "deflate"):
        obj = pack(table, f"outer-{codec}", threads=1)
        info = read_info(obj)
        seg = info.segments
        base = obj.address + info.header_len
        src, slen = (seg["off"].astype(np.int64) + base).tolist(), seg["slen"].tolist()
        rlen = seg["rlen"].astype(np.int64)
        offs, rl = (np.cumsum(rlen) - rlen).tolist(), rlen.tolist()
        views = [memoryview(obj)[info.header_len + o:info.header_len + o + n] for o, n in zip(seg["off"].tolist(), slen)]
        body = pa.allocate_buffer(info.body_len)
        dst = [body.address + o for o in offs]
        py = SoftwareEngine(native_routes=False)
        route = native.route(codec)
        loops = native.batch_loops()

        def python_bytes():                      # the Python packages' bytes API + one copy
            for v, d, n in zip(views, dst, rl):
                ctypes.memmove(d, py._py_decompress(codec, v, n), n)

        routes = {"python packages (bytes + copy)": python_bytes}
        if codec != "deflate":                   # Arrow has no zlib-stream codec
            arrow = pa.Codec("lz4_raw" if codec == "lz4" else "zstd")
            routes["pyarrow.Codec (new Buffer + copy)"] = lambda: [
                ctypes.memmove(d, arrow.decompress(v, decompressed_size=n).address, n)
                for v, d, n in zip(views, dst, rl)]
        if route is not None:
            routes["ctypes per segment, in place"] = lambda: [route.decompress(s, n, d, c)
                                                             for s, n, d, c in zip(src, slen, dst, rl)]
            if loops is not None:
                routes["C batch loop, in place"] = lambda: loops.decode(route, src, slen, dst, rl)
        times = {k: [] for k in routes}
        for _ in range(rounds):
            for k, fn in routes.items():
                times[k].append(_timed(fn))
        out[f"outer-{codec}"] = {k: _spread([info.body_len / x / 1e9 for x in xs]) for k, xs in times.items()}
    return {"what": "decode-only GB/s of raw body, 1 thread, per route", "rounds": rounds, "routes": out,
            "libraries": native.describe()}
