"""Errors pooled over repeated runs of one query set, through the module's entry point: the
records of every run together (not a median of the runs' medians), each run's accuracy kept."""

import json
import subprocess
import sys


def _run(path, errs, held, acc):
    recs = [{"sql": f"q{i}", "held_out": h, "exec_err": {"down": e, "back": e / 2}, "total_err": {"down": e / 4}}
            for i, (e, h) in enumerate(zip(errs, held))]
    recs.append({"sql": "bad", "error": "QueryError: boom"})
    path.write_text(json.dumps({"summary": {"queries": len(recs), "errors": 1, "decision_accuracy": acc,
                                            "decision_accuracy_no_margin": acc, "auto_over_oracle": 1.01},
                                "records": recs}))
    return str(path)


def test_pool_takes_every_record_of_every_run(tmp_path):
    a = _run(tmp_path / "a.json", [10, 20, 30], [True, False, True], 1.0)
    b = _run(tmp_path / "b.json", [40, 50], [True, False], 0.5)
    out = tmp_path / "pooled.json"
    subprocess.run([sys.executable, "-m", "colony.bench.query_report", "--pool", str(out), a, b], check=True)
    p = json.loads(out.read_text())
    assert p["records"] == 5 and [r["decision_accuracy"] for r in p["runs"]] == [1.0, 0.5]
    assert p["exec_pct"]["all"]["down"] == {"n": 5, "median": 30, "p90": 50}
    assert p["exec_pct"]["held_out"]["down"]["median"] == 30 and p["exec_pct"]["held_out"]["down"]["n"] == 3
    assert p["exec_pct"]["seen"]["back"] == {"n": 2, "median": 10.0, "p90": 25.0}
    assert p["total_pct"]["down"]["n"] == 5 and p["total_pct"]["split"] is None


def test_bad_input_gets_a_message_and_a_status_not_a_traceback(tmp_path):
    run = [sys.executable, "-m", "colony.bench.query_report"]
    help_ = subprocess.run(run + ["--help"], capture_output=True, text=True)
    assert help_.returncode == 0 and "--pool" in help_.stdout
    missing = subprocess.run(run + [str(tmp_path / "nope.json")], capture_output=True, text=True)
    assert missing.returncode == 2 and "cannot read the run" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    got = subprocess.run(run + ["--pool", str(tmp_path / "o.json"), str(bad)], capture_output=True, text=True)
    assert got.returncode == 2 and "Traceback" not in got.stderr
