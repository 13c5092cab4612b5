"""Cardinality q-error at every plan level of a query file over a ``--data`` directory, in
process: each relation's estimated rows (``colony.query.estimate.levels``) against the rows
DataFusion returns for that relation's subtree, and the time of each plan's estimate. The
check ``tests/query/test_estimate_any_schema.py`` makes on TPC-H, for any schema.

    .venv/bin/python bench/plan_levels.py --queries src/colony/bench/queries/tpcds/queries.sql \\
        --data /tmp/colony-tpcds-sf01 --json bench/results/plan_levels_tpcds.json
"""

import argparse
import json
import subprocess
import time
from collections import defaultdict

import numpy as np

from colony.bench.query_families import read_families
from colony.data.tables import read_dir
from colony.machine import describe
from colony.query import plan as qplan
from colony.query import to_substrait
from colony.query.estimate import estimate, levels, plan_json
from colony.query.stats import TableStats


def _dist(v: list) -> dict:
    return {"n": len(v), "median": float(np.median(v)), "p90": float(np.percentile(v, 90)), "max": float(max(v))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", required=True)
    ap.add_argument("--data", required=True, help="one Parquet file or folder per table, table name = file name")
    ap.add_argument("--label", help="which code this is (e.g. a commit checked out over src/)")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    tables = read_dir(a.data)
    stats = {k: TableStats.build([v]) for k, v in tables.items()}
    schemas = {k: v.schema for k, v in tables.items()}
    ctx = qplan.execution_context(2)
    for n, v in tables.items():
        qplan.register(ctx, n, [[v]])
    per_op, worst, est_ms, supported, failed = defaultdict(list), {}, {}, 0, []
    for q in read_families(a.queries):
        name = q["family"]
        try:
            pb = to_substrait(q["sql"], schemas)
            t0 = time.perf_counter()
            e = estimate(plan_json(pb), stats)
            est_ms[name] = 1e3 * (time.perf_counter() - t0)
            supported += bool(e.supported)
            rows = []
            for lv in levels(pb, stats):
                actual = qplan.execute(ctx, lv["plan"]).num_rows
                qe = max(lv["est_rows"], 1.0) / max(actual, 1)
                qe = max(qe, 1.0 / qe)
                per_op[lv["op"]].append(qe)
                rows.append((qe, lv["op"], lv["est_rows"], actual))
            worst[name] = max(rows)
        except Exception as ex:          # a query the engine cannot run a level of: reported
            failed.append({"query": name, "error": repr(ex)[:300]})
    every = sum(per_op.values(), [])
    out = {"queries": a.queries, "data": a.data, "label": a.label, "machine": describe(),
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip(),
           "supported": supported, "levels_failed": failed, "per_op": {k: _dist(v) for k, v in sorted(per_op.items())},
           "all_levels": _dist(every), "estimate_ms_first_call": _dist(list(est_ms.values())),
           "worst_level_per_query": {k: {"q_error": v[0], "op": v[1], "est_rows": v[2], "rows": v[3]}
                                     for k, v in worst.items()}}
    print(json.dumps({k: out[k] for k in ("supported", "per_op", "all_levels", "estimate_ms_first_call")}, indent=1))
    print("levels not run:", [f["query"] for f in failed])
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
