"""The device's CPU for a plan's first decision, measured in process and cold, as on a device.

On the Ray colony the same code's decision CPU drifts 20-30 % between consecutive benchmark
runs (docs/query.md, "Runs 98-101"), more than a code change to the estimator saves. This
measures it where it can be compared: an in-process colony (``LocalColony``, emulated links),
one query file, and for each new plan the device's ``explain`` (the first decision: statistics,
plan decode and estimate, placements priced; the handler thread's CPU, split into those parts)
*after* the previous query has run pushed down, so the caches are as cold as a device's.
Prices come from a Ray colony's calibration records (``host0`` and ``nic0``), set on the
in-process devices: only the pricing part depends on them. To compare two versions of the
code, run it on each in turn, several times (alternating), and compare the medians.

    python -m colony.bench.decision_cpu --dataset tpch --json OUT
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from importlib import resources
from pathlib import Path

from colony.bench.query_families import read_families
from colony.errors import ColonyError

QUERIES = Path(str(resources.files("colony.bench") / "queries"))
DATASETS = {"particles": (None, QUERIES / "families.sql"),
            "tpch": ("/tmp/colony-tpch-sf005", QUERIES / "tpch" / "queries.sql"),
            "flights": ("/tmp/colony-nycflights13", QUERIES / "flights" / "queries.sql"),
            "tpcds": ("/tmp/colony-tpcds-sf01", QUERIES / "tpcds" / "queries.sql")}


def _tables(dataset: str, rows: int, data: str | None) -> dict:
    from colony.data import uniform
    from colony.data.tables import read_dir
    if dataset == "particles":
        return {"particles": uniform(rows, seed=0)}
    if not Path(data).is_dir():
        if dataset == "tpch":
            from colony.data.tpch import write
            write(data, 0.05)
        elif dataset == "tpcds":
            from colony.data.tpcds import write
            write(data, 0.1)
        else:
            from colony.data.nycflights import write
            write(data)
    return read_dir(data)


def _records(directory: Path) -> dict:
    """The newest calibration record of ``host0`` and ``nic0`` in ``directory``."""
    from colony.cost.suite import newest
    out = {}
    for dev in ("host0", "nic0"):
        path = newest(dev, directory)
        if path is None:
            raise SystemExit(f"no calibration record of {dev} under {directory}: run `colony bench query` "
                             "on the Ray colony first (it writes them)")
        rec = json.loads(path.read_text())
        if not rec.get("query"):
            raise SystemExit(f"{path} holds no query models: recalibrate")
        out[dev] = rec["query"]
    return out


def measure(dataset: str = "particles", rows: int = 1_000_000, data: str | None = None,
            records: Path | None = None, queries: str | None = None) -> dict:
    """Per new plan of the dataset's query file (or ``queries``), the device's CPU for its
    first decision."""
    from colony.cost.models import DeviceModels
    from colony.cost.suite import calibration_dir
    from colony.drivers.emulated import emulated_colony, load_tables
    from colony.drivers.query import QueryClient
    from colony.query.plan import TableSpec
    default_data, qfile = DATASETS[dataset]
    tables = _tables(dataset, rows, data or default_data)
    models = _records(Path(records) if records else calibration_dir())
    colony = emulated_colony()
    load_tables(colony, "nic0", tables)
    svc = colony.host("nic0").services["query"]
    svc.models = DeviceModels.from_json(models["nic0"])
    svc.host_models = DeviceModels.from_json(models["host0"])
    client = QueryClient(colony, "host", {n: TableSpec(n, n, "*") for n in tables})
    seen, plans, errors = set(), [], 0
    for q in read_families(str(queries or qfile)):
        if q["sql"] in seen:
            continue                  # a repeated plan's decision is the cached one
        seen.add(q["sql"])
        try:
            r = client.query(q["sql"], explain=True)
            parts = r.extra.get("estimate_cpu_parts_s") or {}
            client.query(q["sql"], placement="down")       # its run leaves the caches cold
        except ColonyError:
            errors += 1
            continue
        plans.append({"family": q.get("family"), "total_ms": 1e3 * r.extra["estimate_cpu_s"],
                      **{f"{k}_ms": 1e3 * v for k, v in parts.items()}})
    keys = [k for k in plans[0] if k.endswith("_ms")] if plans else []
    return {"dataset": dataset, "rows": rows if dataset == "particles" else None, "plans": len(plans),
            "errors": errors, "median_ms": {k: statistics.median(p[k] for p in plans) for k in keys},
            "mean_ms": {k: statistics.fmean(p[k] for p in plans) for k in keys}, "per_plan": plans}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="particles")
    ap.add_argument("--rows", type=int, default=1_000_000, help="particles (with --dataset particles)")
    ap.add_argument("--data", help="the dataset's directory of Parquet tables (tpch, flights, tpcds)")
    ap.add_argument("--records", help="calibration records (default: this machine's)")
    ap.add_argument("--queries", help="another query file (default: the dataset's benchmark queries)")
    ap.add_argument("--label", help="which code this is (e.g. a commit checked out over src/)")
    ap.add_argument("--json", help="write the result here")
    a = ap.parse_args()
    import subprocess

    from colony.machine import describe
    t0 = time.time()
    out = measure(a.dataset, a.rows, a.data, a.records, a.queries)
    out.update(machine=describe(), wall_s=time.time() - t0, label=a.label,
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip())
    print(json.dumps({k: out[k] for k in ("dataset", "label", "plans", "errors", "median_ms", "commit")}))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
