"""`colony bench query --data DIR --local` through the real entry point: any schema, family
headers, median of 3 runs, failures counted, the JSON fields kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

COLONY = shutil.which("colony", path=str(Path(sys.executable).parent)) or "colony"


def test_bench_query_on_a_multi_table_schema(tmp_path):
    from colony.data.tpch import write
    write(str(tmp_path / "data"), 0.001, seed=3)
    q = tmp_path / "q.sql"
    q.write_text("-- family: join\n"
                 "select o_orderpriority, count(*) from orders join lineitem on o_orderkey = l_orderkey "
                 "where l_quantity < 10 group by o_orderpriority\n"
                 "-- family: broken held-out\n"
                 "select nope from lineitem\n")
    out = tmp_path / "r.json"
    r = subprocess.run([COLONY, "bench", "query", "--queries", str(q), "--data", str(tmp_path / "data"), "--local",
                        "--json", str(out), "--calib-runs", "10", "--calib-rows", "20000"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    s = doc["summary"]
    assert s["queries"] == 2 and s["failures"] == 1 and not doc["partial"]
    for k in ("auto_over_oracle", "auto_over_best_static", "decision_accuracy", "decision_accuracy_no_margin",
              "noise_floor_pct", "prediction_error"):
        assert k in s
    ok, bad = doc["records"]
    assert bad["family"] == "broken" and bad["held_out"] and "error" in bad
    assert ok["family"] == "join" and ok["supported"] and set(ok["actual"]) >= {"down", "back"}
    assert all(len(v) == 3 for v in ok["runs_s"].values())        # median of 3 runs per placement
    assert ok["card_err"] is not None and set(ok["predicted"]) == set(ok["actual"])
    assert doc["learner_kept"]["nic0"] in ("ops", "nnls", "blend", "forest")
