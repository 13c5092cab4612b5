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


def colony_section(report: Report, c) -> list[dict]:
    devices = [{"device": d.name, "role": d.role, "label": d.label, "threads": d.threads or "all",
                "services": ", ".join(d.services)} for d in c.devices()]
    report.section("The colony", "The embedded default: a local Ray colony. Emulated devices are weakened "
                   "by real mechanisms (thread budgets, paced links) and are labelled as emulated. The demo places "
                   "the sift service on the SmartNICs and the query service on every device at run time.")
    report.table(["device", "role", "label", "threads", "services"], [list(r.values()) for r in devices])
    return devices


def sift_section(report: Report, c, particles: int, steps: int) -> dict:
    from colony.demo.sift import sift_demo
    out = sift_demo(c, report.dir, n_particles=particles, steps=steps)
    report.section("Particle sifting: snapshots to tracks",
                   f"A time-stepped simulation of {particles:,} particles over {steps} steps injects one snapshot "
                   "per rank and step into the SmartNICs; processing elements split by bits of the particle id "
                   "and hand parts device to device until every particle's track sits in one bin.")
    report.table(["metric", "value"], [(k, v) for k, v in out.items() if not isinstance(v, (dict, list))
                                       and k != "figure"])
    if out.get("figure"):
        report.image(out["figure"], "split vs publish time per stage, and bin balance")
    return out


def query_section(report: Report, c, rows: int) -> dict:
    from colony.demo.query import query_demo
    out = query_demo(c, str(report.dir), rows=rows)
    import json
    from colony.machine import describe
    (Path(report.dir) / "query_demo.json").write_text(json.dumps({**out, "machine": describe()}, indent=1,
                                                                 default=str))
    report.section("In-transit queries: push-down, push-back or split",
                   f"{rows:,} particles spread over the SmartNICs ({out['colony']}). The decision engine picks a "
                   "placement per query from calibrated per-device models; every placement is also run to show "
                   "predicted against actual time.")
    report.table(["query", "decision", "est rows", "rows", "predicted ms (auto)", "actual ms per placement"],
                 [(q["label"], q["decision"], round(q["est_rows"]), q["rows"],
                   round(1e3 * q["predicted"].get(q["decision"], float("nan")), 2),
                   ", ".join(f"{k} {1e3 * v:.1f}" for k, v in q["actual"].items())) for q in out["queries"]])
    report.image(out["figure"], "predicted vs actual time per placement (* = decision)")
    return out


def run(report_dir: Path, rows: int = 1_000_000, say: Callable[[str], None] = print,
        particles: int = 20_000, steps: int = 20, query_rows: int = 400_000) -> dict:
    """Codecs on this machine, then sifting and queries on the embedded Ray colony."""
    import colony
    report = Report(report_dir, "Colony demo")
    summary = {"codec": codec_section(report, rows, say)}
    say("starting the embedded colony (local Ray, 1 host + 4 emulated SmartNICs)")
    c = colony.connect()
    try:
        summary["colony"] = colony_section(report, c)
        say("sifting a simulation's snapshots into tracks")
        summary["sift"] = sift_section(report, c, particles, steps)
        say("calibrating query cost models (cached afterwards) and running queries")
        summary["query"] = query_section(report, c, query_rows)
    finally:
        c.shutdown()
    summary["report"] = str(report.write())
    return summary
