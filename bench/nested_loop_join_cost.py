"""What a nested-loop (range) join costs here, in process on one thread, against the price
the newest ``nic0`` calibration record puts on the estimator's op vector for the same plan.

DataFusion runs a join without an equality key as ``NestedLoopJoinExec``, which evaluates
the condition on every pair of rows; the estimator counts those pairs as ``join_nl``.
Writes ``bench/results/nested_loop_join_cost.json``. Run under the shared lock:
    flock /tmp/colony-heavy.lock .venv/bin/python bench/nested_loop_join_cost.py
"""

import json
import statistics
import time
from pathlib import Path

import datafusion
import numpy as np
import pyarrow as pa

from colony.cost.models import DeviceModels
from colony.cost.suite import calibration_dir, newest
from colony.machine import describe
from colony.query import estimate, to_substrait
from colony.query.stats import TableStats

SQL = "select w.w, count(*) from r join w on r.ts >= w.start and r.ts < w.stop group by w.w"


def main() -> None:
    record = newest("nic0")
    if record is None:
        raise SystemExit(f"no nic0 calibration record under {calibration_dir()}: run `colony bench query` first")
    model = DeviceModels.from_json(json.loads(record.read_text())["query"])
    rng = np.random.default_rng(0)
    out = []
    for rows in (100_000, 400_000):
        r = pa.table({"ts": rng.integers(0, 30 * 3600, rows), "v": rng.random(rows)})
        for k in (4, 16, 30, 64):
            width = 30 * 3600 // k
            start = np.arange(k) * width
            w = pa.table({"w": np.arange(k), "start": start, "stop": start + width})
            ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))
            ctx.register_record_batches("r", [r.to_batches()])
            ctx.register_record_batches("w", [w.to_batches()])
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                ctx.sql(SQL).collect()
                times.append(time.perf_counter() - t0)
            est = estimate(to_substrait(SQL, {"r": r.schema, "w": w.schema}),
                           {"r": TableStats.build([r]), "w": TableStats.build([w])})
            s = statistics.median(times)
            out.append({"rows": rows, "windows": k, "pairs": rows * k, "ms_median_of_5": 1e3 * s,
                        "ms_min": 1e3 * min(times), "ms_max": 1e3 * max(times), "ns_per_pair": 1e9 * s / (rows * k),
                        "priced_ms": 1e3 * model.predict_exec(est.ops, 1), "join_nl": est.ops.get("join_nl", 0.0)})
            print(out[-1])
    Path("bench/results/nested_loop_join_cost.json").write_text(json.dumps(
        {"machine": describe(), "record": record.name, "sql": SQL, "threads": 1, "runs": out}, indent=1))


if __name__ == "__main__":
    main()
