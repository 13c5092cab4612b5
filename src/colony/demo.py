"""`colony demo`: the main job, end to end, with a printed summary and an HTML report."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt

from colony.report import Report


def codec_section(report: Report, rows: int, say: Callable[[str], None]) -> dict:
    """Pack generated particles with every codec; measure size and speed on this machine."""
    from colony.codec import CODECS, pack, unpack
    from colony.data import uniform
    table = uniform(rows, seed=42).combine_chunks()
    threads = os.cpu_count() or 1
    results = []
    for name in CODECS:
        t0 = time.perf_counter()
        buf = pack(table, name, threads=threads)
        t1 = time.perf_counter()
        (back,) = unpack(buf, threads=threads)
        t2 = time.perf_counter()
        assert back.equals(table)
        results.append({"codec": name, "bytes": buf.size, "ratio": buf.size / table.nbytes,
                        "serialize_mbps": table.nbytes / (t1 - t0) / 1e6,
                        "deserialize_mbps": table.nbytes / (t2 - t1) / 1e6})
        say(f"packed {rows:,} particles with {name}")
    report.section("Object codecs", f"{rows:,} uniform particles ({table.nbytes / 1e6:.1f} MB raw), "
                   f"{threads} threads, this machine. Deserialization verifies every checksum.")
    report.table(["codec", "bytes", "ratio", "serialize MB/s", "deserialize MB/s"],
                 [(r["codec"], r["bytes"], r["ratio"], r["serialize_mbps"], r["deserialize_mbps"]) for r in results])
    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = [r["codec"] for r in results]
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], [r["serialize_mbps"] for r in results], 0.4, label="serialize")
    ax.bar([i + 0.2 for i in x], [r["deserialize_mbps"] for r in results], 0.4, label="deserialize")
    ax.set_xticks(list(x), names, rotation=20)
    ax.set_ylabel("MB/s (raw)")
    ax.legend()
    ax2 = ax.twinx()
    ax2.plot(list(x), [r["ratio"] for r in results], "ko--", label="size ratio")
    ax2.set_ylabel("stored / raw")
    ax2.set_ylim(0, 1.1)
    report.figure(fig, "codecs", "throughput (bars) and size ratio (dots) per codec")
    return {"rows": rows, "codecs": results}


def run(report_dir: Path, rows: int = 1_000_000, say: Callable[[str], None] = print) -> dict:
    report = Report(report_dir, "Colony demo")
    summary = {"codec": codec_section(report, rows, say)}
    summary["report"] = str(report.write())
    return summary
