"""The garbage collector's pauses in a SmartNIC device on the embedded Ray colony while it
serves TPC-DS: each of the 99 queries' first decision (``explain``, the decision CPU the
benchmark scores as estimation overhead), then the query pushed down; then the device's
``status`` gc field (frozen objects; collections, total and longest pause per generation).

A device freezes its heap once started (colony.runtime.process). To see the collector
without that, run this from a worktree whose ``freeze_heap`` returns at once (and whose
query worker skips its freeze), with ``PYTHONPATH=<worktree>/src``; alternate the two.

    .venv/bin/python bench/gc_pauses.py --label frozen --json bench/results/gc_pauses.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from colony.machine import describe


def measure(data: str, queries: str) -> dict:
    from colony.bench.query_families import read_families
    from colony.drivers.emulated import query_colony_on_ray
    from colony.data.tables import read_dir
    from colony.drivers.query import QueryClient
    from colony.errors import ColonyError
    from colony.query.plan import TableSpec
    tables = read_dir(data)
    colony, host, close = query_colony_on_ray(tables, "nic0")
    try:
        client = QueryClient(colony, host, {n: TableSpec(n, n, "*") for n in tables})
        before = next(s for s in colony.status() if s["device"] == "nic0")["gc"]
        cpu, seen, errors = [], set(), 0
        for q in read_families(queries):
            if q["sql"] in seen:
                continue
            seen.add(q["sql"])
            try:
                cpu.append(client.query(q["sql"], explain=True).extra["estimate_cpu_s"])
                client.query(q["sql"], placement="down")
            except ColonyError:
                errors += 1
        after = next(s for s in colony.status() if s["device"] == "nic0")["gc"]
    finally:
        close()
    cpu.sort()
    return {"plans": len(cpu), "errors": errors,
            "decision_cpu_ms": {"median": 1e3 * statistics.median(cpu), "mean": 1e3 * statistics.fmean(cpu),
                                "p90": 1e3 * cpu[int(0.9 * (len(cpu) - 1))], "max": 1e3 * cpu[-1]},
            "gc_before": before, "gc_after": after}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", required=True, help="which code this is (frozen, or not_frozen from a worktree)")
    ap.add_argument("--data", default="/tmp/colony-tpcds-sf01")
    ap.add_argument("--queries", default="src/colony/bench/queries/tpcds/queries.sql")
    ap.add_argument("--json", default="bench/results/gc_pauses.json", help="runs are appended here")
    a = ap.parse_args()
    if not Path(a.data, "store_sales.parquet").is_file():
        from colony.data.tpcds import write
        write(a.data, 0.1)
    t0 = time.time()
    run = {"label": a.label, **measure(a.data, a.queries), "wall_s": time.time() - t0}
    print(json.dumps(run))
    path = Path(a.json)
    out = json.loads(path.read_text()) if path.is_file() else {"machine": describe(), "runs": []}
    out["runs"].append(run)
    path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
