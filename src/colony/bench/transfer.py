"""Bulk transport benchmark (`colony bench transfer`): Ray's object store vs Arrow Flight vs memcpy.

On a 3-node ``ray.cluster_utils`` colony (the client on the head node, ``nic0`` on
another node, so bytes cross object stores / sockets), for Arrow batches of 64 KiB to
256 MiB, side by side in one run with the same repeats:

- ``ray_put``: ``ray.put(table)`` + the device receives it (``DeviceActor.echo``), host -> device;
- ``flight_put``: ``DoPut`` of the same table to the device's Flight endpoint, host -> device;
- ``ray_get``: the device returns ``n`` bytes over Ray (``DeviceActor.send``), device -> host;
- ``flight_get``: ``DoGet`` of ``n`` bytes from the device's Flight endpoint, device -> host;
- ``memcpy``: copying the same bytes in this process (the bound of any local transport);
- ``ray_put_same_node`` / ``flight_put_same_node``: the same puts to ``host0``, on the
  client's own node (Ray passes objects through shared memory there, Flight through a socket).

One transfer at a time (latency of a lone request, what a small call sees) and, for
sizes >= 1 MiB, 4 in flight (throughput). Times are min / median / max of ``repeats``.
The per-size winner of the bulk paths decides ``runtime.bulk_bytes`` (docs/runtime.md).
All on one machine: "between nodes" means between processes over loopback, not a network.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]
PATHS = ("ray_put", "flight_put", "ray_get", "flight_get", "memcpy", "ray_put_same_node", "flight_put_same_node")


def make_table(nbytes: int) -> pa.Table:
    """Four float64 columns, ``nbytes`` in all."""
    rows = max(1, nbytes // 32)
    rng = np.random.default_rng(nbytes)
    return pa.table({c: rng.random(rows) for c in "abcd"})


def _spread(times: list[float], nbytes: int) -> dict:
    med = statistics.median(times)
    return {"min_s": min(times), "median_s": med, "max_s": max(times), "runs": len(times),
            "gbps_median": nbytes / med / 1e9, "gbps_best": nbytes / min(times) / 1e9}


def _timed(fn, repeats: int) -> list[float]:
    fn()   # warm: connections, first-touch of buffers
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def worker(sizes: list[int], repeats: int, inflight: int, temp_dir: str, out: str) -> None:
    """Inside a fresh process: a 3-node colony, every size and path; JSON to ``out``."""
    import ray

    from colony.config import default
    from colony.runtime.cluster import local_cluster
    spill = tempfile.mkdtemp(prefix="colony-bench-spill-")
    cfg = default().with_budgets(memory=0).with_spill_root(spill)
    rows = []
    with local_cluster(cfg, nodes=3, temp_dir=temp_dir, object_store_memory=1 << 30, num_cpus=1) as colony:
        device = "nic0"
        actor = colony.actor(device)
        local = colony.actor("host0")                          # on the client's own node
        tr = colony.transfers
        st = {s["device"]: s for s in colony.status()}
        crosses = st[device]["node_id"] != ray.get_runtime_context().get_node_id()
        same = st["host0"]["node_id"] == ray.get_runtime_context().get_node_id()
        pool = ThreadPoolExecutor(inflight)
        for n in sizes:
            table = make_table(n)
            nb = table.nbytes
            dst = np.empty(nb // 8, dtype=np.float64)
            cols = [c.chunk(0).to_numpy() for c in table.columns]

            def memcpy():
                o = 0
                for c in cols:
                    dst[o:o + len(c)] = c
                    o += len(c)
            paths = {
                "ray_put": lambda: ray.get(actor.echo.remote(ray.put(table))),
                "flight_put": lambda: tr.echo(device, table),
                "ray_get": lambda: ray.get(actor.send.remote(nb)),
                "flight_get": lambda: tr.blob(device, nb),
                "memcpy": memcpy,
                "ray_put_same_node": lambda: ray.get(local.echo.remote(ray.put(table))),
                "flight_put_same_node": lambda: tr.echo("host0", table),
            }
            reps = repeats if n <= (16 << 20) else max(3, repeats // 2)
            row = {"bytes": nb, "single": {}, "inflight": {}}
            for name, fn in paths.items():
                row["single"][name] = _spread(_timed(fn, reps), nb)
            if n >= (1 << 20):
                for name in ("ray_put", "flight_put", "ray_get", "flight_get", "ray_put_same_node",
                             "flight_put_same_node"):
                    fn = paths[name]
                    k = max(inflight, min(32, (256 << 20) // n))   # move >= 256 MiB (or 4 batches) per run

                    def many(fn=fn, k=k):
                        list(pool.map(lambda _i: fn(), range(k)))
                    ts = _timed(many, max(3, reps // 2))
                    row["inflight"][name] = _spread(ts, nb * k) | {"batches": k, "inflight": inflight}
            best_put = max(("ray_put", "flight_put"), key=lambda p: row["single"][p]["gbps_median"])
            row["winner_put_same_node"] = max(("ray_put_same_node", "flight_put_same_node"),
                                              key=lambda p: row["single"][p]["gbps_median"])
            best_get = max(("ray_get", "flight_get"), key=lambda p: row["single"][p]["gbps_median"])
            row["winner_put"], row["winner_get"] = best_put, best_get
            rows.append(row)
            print(f"{nb >> 10} KiB: " + ", ".join(f"{p} {row['single'][p]['gbps_median']:.2f}" for p in PATHS),
                  file=sys.stderr, flush=True)
        links = colony.links()
        result = {"device": device, "device_on_other_node": crosses, "same_node_device": "host0",
                  "same_node_device_on_client_node": same, "rows": rows, "auth": colony.auth_mode,
                  "links": links}
    Path(out).write_text(json.dumps(result))


def run(sizes: list[int] | None = None, repeats: int = 5, inflight: int = 4,
        temp_dir: str = "/tmp/ray-colony-bench") -> dict:
    from colony.machine import describe as machine
    sizes = sizes or SIZES
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, "-m", "colony.bench.transfer", "worker", "--sizes", ",".join(map(str, sizes)),
           "--repeats", str(repeats), "--inflight", str(inflight), "--temp-dir", temp_dir, "--out", out]
    mach = machine()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"transfer benchmark worker failed:\n{proc.stderr[-4000:]}")
    res = json.loads(Path(out).read_text())
    os.unlink(out)
    crossover = next((r["bytes"] for r in res["rows"] if r["winner_put"] == "flight_put"
                      and all(x["winner_put"] == "flight_put" for x in res["rows"] if x["bytes"] >= r["bytes"])), None)
    summary = {"flight_wins_put_from_bytes": crossover,
               "per_size": {r["bytes"]: {p: round(r["single"][p]["gbps_median"], 3) for p in PATHS}
                            for r in res["rows"]},
               "per_size_inflight": {r["bytes"]: {p: round(v["gbps_median"], 3) for p, v in r["inflight"].items()}
                                     for r in res["rows"] if r["inflight"]}}
    return {"benchmark": "transfer", "machine": mach, "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
            "wall_s": time.perf_counter() - t0, "sizes": sizes, "repeats": repeats, "inflight": inflight,
            "note": "3 ray.cluster_utils nodes on one machine: transfers cross processes over loopback, "
                    "not a network", **res, "summary": summary}


def table(result: dict):
    from rich.table import Table
    t = Table(title="bulk transport, client -> nic0 on another Ray node (GB/s, median of one at a time)")
    t.add_column("bytes", justify="right")
    for p in PATHS:
        t.add_column(p, justify="right")
    t.add_column("put winner")
    for r in result["rows"]:
        t.add_row(f"{r['bytes'] >> 10} KiB", *(f"{r['single'][p]['gbps_median']:.2f}" for p in PATHS),
                  r["winner_put"])
    return t


def _main() -> None:
    import argparse
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--sizes", required=True)
    w.add_argument("--repeats", type=int, default=5)
    w.add_argument("--inflight", type=int, default=4)
    w.add_argument("--temp-dir", required=True)
    w.add_argument("--out", required=True)
    a = ap.parse_args()
    worker([int(s) for s in a.sizes.split(",")], a.repeats, a.inflight, a.temp_dir, a.out)


if __name__ == "__main__":
    _main()
