"""`python -m colony.bench.decision_cpu`: each new plan's first decision, priced with a
calibration record's models, its CPU split into parts; a repeated statement is not measured
twice (its decision would be the cached one)."""

import json
import subprocess
import sys

from colony.drivers.emulated import emulated_colony
from colony.drivers.query import calibrate_colony


def test_first_decisions_are_measured_in_parts(tmp_path):
    lc = emulated_colony(n_nics=1)
    from colony.drivers.emulated import load_particles
    load_particles(lc, "nic0", 20_000)
    calibrate_colony(lc, "host", n_runs=6, max_rows=20_000)
    for dev, name in (("host", "host0"), ("nic0", "nic0")):
        (tmp_path / f"{name}@x.json").write_text(json.dumps({"query": lc.call(dev, "query", "models_json")}))
    q = tmp_path / "q.sql"
    q.write_text("-- family: A\nselect count(*) from particles where x < 0.3\n"
                 "select count(*) from particles where x < 0.3\n"
                 "-- family: B\nselect particle_id, avg(vx) from particles group by particle_id\n")
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "colony.bench.decision_cpu", "--rows", "20000", "--records",
                        str(tmp_path), "--queries", str(q), "--label", "t", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(out.read_text())
    assert (d["plans"], d["errors"], d["label"]) == (2, 0, "t")
    assert [p["family"] for p in d["per_plan"]] == ["A", "B"]
    for p in d["per_plan"]:
        assert p["total_ms"] > 0 and p["decide_ms"] > 0 and p["estimate_ms"] > 0
        assert abs(p["stats_ms"] + p["estimate_ms"] + p["decide_ms"] - p["total_ms"]) < 1e-6
    assert d["machine"]["cores_logical"] >= 1


def test_missing_records_are_refused_by_name(tmp_path):
    r = subprocess.run([sys.executable, "-m", "colony.bench.decision_cpu", "--rows", "1000", "--records",
                        str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "no calibration record of host0" in r.stderr
