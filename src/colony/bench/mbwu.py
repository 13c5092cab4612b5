"""MBWU bench on this machine: thread sweep (one device, caching minimized), landscapes side
by side, and a device sweep, on a SMALL dataset (YCSB workload A: 16 B keys, 4 KiB values,
50/50 read/update, Zipfian). Writes bench/results/mbwu.json.

Run:  flock /tmp/colony-bench.lock python -m colony.bench.mbwu
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from colony.quantify import mbwu as m
from colony.machine import describe as machine_info
from colony.quantify.ycsb import workload


def _brief(p: dict) -> dict:
    u = p["utilization"]
    return {"threads": p["threads"], "devices": p["devices"], "ops_per_s": round(p["ops_per_s"], 1),
            "cpu_pct": round(u["cpu_pct_mean"], 1), "device_util_pct": round(p["bottleneck"]["device_util_pct"], 1),
            "bottleneck": p["bottleneck"]["resource"], "mbwus": p.get("mbwus")}


def run(device: Path, records: int = 40_000, threads=(1, 2, 4, 8, 16, 32), duration: float = 4.0,
        sweep_threads: int = 8, devices: int = 3) -> dict:
    device = Path(device)
    shutil.rmtree(device, ignore_errors=True)
    device.mkdir(parents=True)
    w = workload("a", recordcount=records, operationcount=0)
    t0 = time.time()
    log = lambda k, r: print(f"  {k}: {r['ops_per_s']:.1f} ops/s", flush=True)  # noqa: E731
    print("thread sweep (network landscape, caching minimized)", flush=True)
    ts = m.thread_sweep(device / "dev1", w, threads, duration, "network", progress=log)
    print("landscapes side by side (normal caching)", flush=True)
    ls = m.landscape_sweep(device / "dev1", w, sweep_threads, duration,
                           landscapes=("integrated", "network", "disaggregated"))
    unit = ts["mbwu_ops"] or ts["peak_ops_per_s"]
    unit_kind = "MBWU" if ts["mbwu_ops"] else "provisional unit = CPU-bound peak of the thread sweep (NOT an MBWU)"
    print(f"device sweep normalized by {unit_kind}", flush=True)
    ds = m.device_sweep([device / f"dev{i}" for i in range(1, devices + 1)], w, sweep_threads, unit, duration,
                        "network", progress=log)
    shutil.rmtree(device, ignore_errors=True)
    data_mib = records * (w.value_size + w.key_size) / 2 ** 20
    doc = {
        "machine": machine_info(),
        "dataset": {"workload": "YCSB A (50% read / 50% update, Zipfian 0.99, scrambled)", "records": records,
                    "key_bytes": 16, "value_bytes": w.value_size, "logical_mib": round(data_mib, 1),
                    "path": str(device), "filesystem_device": ts["device"]},
        "summary": {
            "mbwu_ops_per_s": ts["mbwu_ops"],
            "mbwu_refused": ts.get("refused"),
            "thread_sweep_peak_ops_per_s": round(ts["peak_ops_per_s"], 1),
            "thread_sweep_peak_threads": ts["peak_threads"],
            "peak_bottleneck": ts["bottleneck"],
            "thread_sweep": [_brief(p) for p in ts["points"]],
            "landscapes_ops_per_s": {k: (round(v["ops_per_s"], 1) if "ops_per_s" in v else v["unavailable"])
                                     for k, v in ls.items()},
            "device_sweep_unit": unit_kind, "device_sweep_unit_ops_per_s": round(unit, 1),
            "device_sweep": [_brief(p) for p in ds["points"]],
            "device_sweep_plateau": ds["plateau_note"], "device_sweep_warning": ds["device"]["warning"],
            "page_cache_drop": ts["page_cache"], "caching": ts["caching"],
            "power": ts["points"][-1]["utilization"]["power"],
            "wall_seconds": round(time.time() - t0, 1),
        },
        "thread_sweep": ts, "landscapes": ls, "device_sweep": ds,
    }
    return doc


def main(argv=None) -> None:
    out = Path("bench/results/mbwu.json")
    doc = run(Path("/tmp/colony-bench-mbwu"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str))
    print(json.dumps(doc["summary"], indent=2, default=str))


if __name__ == "__main__":
    from colony.bench.common import entry
    entry("colony.bench.mbwu", __doc__, sys.argv[1:])
    main()
