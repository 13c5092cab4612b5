"""Benchmark of the Flight SQL gateway: N concurrent ADBC clients (1..32) on the mixed query
workload, throughput and p50/p99 latency, beside the same clients calling the query client
directly (what `colony query` runs); and the gateway's overhead per query, one client at a
time, gateway and direct alternating on the same queries.

The colony is the embedded default on Ray (host0 + nic0..nic3, SmartNIC links paced by the
runtime as for `colony query`), particles on nic0; the gateway runs in its own process
(as `colony serve` does), attached to the same Ray cluster.

Run: flock /tmp/colony-heavy.lock python -m colony.bench.gateway   (or `colony bench gateway`)
Writes bench/results/gateway.json.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

TEMP_DIR = "/tmp/ray-colony-bench-gateway"
LINKS_GBPS = {"nic0": 16.0, "nic1": 8.0, "nic2": 4.0, "nic3": 32.0}
CATALOG_TTL_S = 2.0        # `colony serve`'s default ([gateway] catalog_ttl_s), on both sides


def _config():
    from colony.config.builders import embedded
    from colony.drivers.catalog import default_models_dir
    return embedded(links_gbps=LINKS_GBPS, pools={"particles": ["nic0"]}, name="gwbench",
                    services={"query": {"devices": "all", "options": {"models_dir": default_models_dir("gwbench")}}})


def workload(n: int = 24, seed: int = 5) -> list[str]:
    """The mixed workload: templated queries T1-T16 (filters, computed columns, group-bys,
    sort/limit, aggregates) with random constants, as the query benchmark's mixed section."""
    from colony.cost.calibrate import random_query
    rng = np.random.Generator(np.random.SFC64(seed))
    return [random_query(rng)[1] for _ in range(n)]


def serve_child(address: str, port_file: str) -> None:
    """The gateway process: attach to the bench's colony and serve until killed."""
    from colony.drivers.catalog import Catalog
    from colony.gateway.server import Gateway
    from colony.runtime.client import Colony
    c = Colony(_config(), address=address, create=False)
    gw = Gateway(Catalog(c, ttl_s=CATALOG_TTL_S), "grpc://127.0.0.1:0",
                 token=os.environ["COLONY_GATEWAY_TOKEN"], name="gwbench")
    Path(port_file).write_text(str(gw.port))
    gw.serve()


def _pct(a, q):
    return float(np.percentile(a, q)) if len(a) else float("nan")


def _sweep(run_one, queries: list[str], n: int, seconds: float) -> dict:
    """``n`` threads, each looping over the workload (staggered) for ``seconds``."""
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        k = i * 7
        while time.perf_counter() < stop:
            sql = queries[k % len(queries)]
            k += 1
            t0 = time.perf_counter()
            try:
                run_one(i, sql)
            except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                with lock:
                    errors.append(f"{type(e).__name__}: {str(e)[:120]}")
                continue
            with lock:
                lat.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    ths = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    wall = time.perf_counter() - t0
    return {"clients": n, "queries": len(lat), "wall_s": wall, "qps": len(lat) / wall, "p50_ms": _pct(lat, 50) * 1e3,
            "p99_ms": _pct(lat, 99) * 1e3, "errors": len(errors), "first_errors": errors[:3]}


def run(clients: list[int], rows: int, seconds: float, repeats: int, calib_runs: int = 60) -> dict:
    import adbc_driver_flightsql.dbapi as fdb
    from adbc_driver_flightsql import DatabaseOptions
    from rich.console import Console

    import colony as colony_pkg
    from colony.data import uniform
    from colony.drivers.catalog import Catalog, host_of
    from colony.drivers.query import ensure_calibrated
    con = Console()
    c = colony_pkg.connect(_config(), temp_dir=TEMP_DIR)
    child = None
    try:
        host = host_of(c)
        t = uniform(rows, seed=3)
        for i in range(4):
            c.put("particles", f"particles/{i:06d}", t.slice(i * rows // 4, rows // 4))
        t0 = time.perf_counter()                   # the runtime paces calls on the SmartNIC links
        calibrated = ensure_calibrated(c, host, calib_runs, max(rows, 100_000))
        calib_s = time.perf_counter() - t0
        cat = Catalog(c, ttl_s=CATALOG_TTL_S)
        queries = workload()
        token = secrets.token_hex(24)
        port_file = Path(TEMP_DIR) / f"gateway-port-{os.getpid()}"
        port_file.unlink(missing_ok=True)
        import ray
        child = subprocess.Popen([sys.executable, "-m", "colony.bench.gateway", "--serve",
                                  ray.get_runtime_context().gcs_address, str(port_file)],
                                 env=dict(os.environ, COLONY_GATEWAY_TOKEN=token), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while not port_file.exists() or not port_file.read_text():
            if child.poll() is not None or time.time() > deadline:
                raise RuntimeError("the gateway process did not start")
            time.sleep(0.2)
        uri = f"grpc://127.0.0.1:{port_file.read_text()}"
        db = {DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {token}"}
        conns = [fdb.connect(uri, db_kwargs=db, autocommit=True) for _ in range(max(clients))]
        curs = [cn.cursor() for cn in conns]

        def via_gateway(i, sql):
            curs[i].execute(sql)
            return curs[i].fetch_arrow_table()

        def direct(i, sql):
            return cat.query(sql).table

        # warm both paths (plans, catalog scan, connections)
        for q in queries:
            via_gateway(0, q)
            direct(0, q)
        # overhead: one client, alternating gateway and direct on the same query
        per_query = []
        for q in queries:
            g, d = [], []
            for _ in range(repeats):
                for side, fn in (("g", via_gateway), ("d", direct)):
                    t0 = time.perf_counter()
                    res = fn(0, q)
                    (g if side == "g" else d).append(time.perf_counter() - t0)
            per_query.append({"sql": q, "rows": res.num_rows, "gateway_ms": [x * 1e3 for x in g],
                              "direct_ms": [x * 1e3 for x in d],
                              "overhead_ms": (np.median(g) - np.median(d)) * 1e3,
                              "overhead_ratio": float(np.median(g) / np.median(d))})
            con.print(f"[dim]{q[:60]}: gateway {np.median(g) * 1e3:.1f} ms, direct {np.median(d) * 1e3:.1f} ms[/]")
        ov = [p["overhead_ms"] for p in per_query]
        ratio = [p["overhead_ratio"] for p in per_query]
        overhead = {"repeats": repeats, "queries": per_query,
                    "overhead_ms": {"min": min(ov), "median": float(np.median(ov)), "p90": _pct(ov, 90),
                                    "max": max(ov)},
                    "overhead_ratio": {"min": min(ratio), "median": float(np.median(ratio)), "p90": _pct(ratio, 90),
                                       "max": max(ratio)},
                    "gateway_total_ms_median_sum": float(sum(np.median(p["gateway_ms"]) for p in per_query)),
                    "direct_total_ms_median_sum": float(sum(np.median(p["direct_ms"]) for p in per_query))}
        # concurrency sweep: gateway and direct, `repeats` runs each, alternating
        sweep: dict = {"gateway": {}, "direct": {}}
        for n in clients:
            for r in range(repeats):
                for name, fn in (("gateway", via_gateway), ("direct", direct)):
                    res = _sweep(fn, queries, n, seconds)
                    sweep[name].setdefault(str(n), []).append(res)
                    con.print(f"{name:8s} clients={n:2d} run {r}: {res['qps']:.1f} q/s p50 {res['p50_ms']:.0f} ms "
                              f"p99 {res['p99_ms']:.0f} ms errors {res['errors']}")
        summary = {}
        for name, by_n in sweep.items():
            summary[name] = {}
            for n, runs in by_n.items():
                qps = [x["qps"] for x in runs]
                summary[name][n] = {"qps": {"min": min(qps), "median": float(np.median(qps)), "max": max(qps)},
                                    "p50_ms_median": float(np.median([x["p50_ms"] for x in runs])),
                                    "p99_ms_median": float(np.median([x["p99_ms"] for x in runs])),
                                    "p99_ms_max": max(x["p99_ms"] for x in runs),
                                    "errors": sum(x["errors"] for x in runs)}
        for cu in curs:
            cu.close()
        for cn in conns:
            cn.close()
        return {"summary": {"overhead": {k: overhead[k] for k in ("overhead_ms", "overhead_ratio",
                                                                   "gateway_total_ms_median_sum",
                                                                   "direct_total_ms_median_sum")},
                            "throughput": summary},
                "overhead": overhead, "sweep": sweep, "workload": queries, "calibrated_now": calibrated,
                "calibration_s": calib_s}
    finally:
        if child is not None:
            child.kill()
            child.wait()
        c.shutdown()


def run_cli(json_out: Path, clients: list[int], rows: int, seconds: float, repeats: int) -> dict:
    from colony.bench.common import write_json
    from colony.machine import describe as machine
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    t0 = time.time()
    m = machine()
    res = run(clients, rows, seconds, repeats)
    res.update(machine=m, commit=commit, wall_s=time.time() - t0, loadavg_1m_at_end=round(os.getloadavg()[0], 2),
               config={"clients": clients, "rows": rows, "seconds_per_run": seconds, "repeats": repeats,
                       "colony": "embedded default on Ray (host0 + nic0..nic3 emulated bluefield2), particles on "
                                 "nic0 as 4 objects, SmartNIC links paced by the runtime at "
                                 + ", ".join(f"{k} {v:g} Gbit/s" for k, v in LINKS_GBPS.items()),
                       "gateway": "colony.gateway in its own process (as `colony serve`), token auth, no TLS; "
                                  "clients: ADBC Flight SQL driver (DBAPI cursor, fetch_arrow_table), one "
                                  "connection per client thread; direct: Catalog.query in the bench process "
                                  "(the `colony query` path without its process start); catalog rescanned "
                                  f"every {CATALOG_TTL_S:g} s on both sides"})
    write_json(json_out, res)
    print(f"wrote {json_out}")
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m colony.bench.gateway")
    ap.add_argument("--serve", nargs=2, metavar=("RAY_ADDRESS", "PORT_FILE"), help=argparse.SUPPRESS)
    ap.add_argument("--json", default="bench/results/gateway.json")
    ap.add_argument("--clients", default="1,2,4,8,16,32")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    if a.serve:
        serve_child(*a.serve)
        return
    run_cli(Path(a.json), [int(x) for x in a.clients.split(",")], a.rows, a.seconds, a.repeats)


if __name__ == "__main__":
    main()
