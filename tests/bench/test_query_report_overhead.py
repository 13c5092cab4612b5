"""The report of a `colony bench query` JSON states the estimation overhead both ways (the
device handler thread's CPU, and its wall time), the calibration's seconds and sizes, and
each device's cross-validated learners with their error on the largest runs."""

import json

from colony.bench.query_report import render


def _record(cpu_s: float, wall_s: float, auto_s: float) -> dict:
    terms = {"down": {"exec": 0.01, "estimate": wall_s, "total": 0.02},
             "back": {"exec_host": 0.01, "estimate": wall_s, "total": 0.03}}
    return {"sql": "select 1", "family": "T1", "decision": "down", "oracle": "down", "est_rows": 1, "rows": 1,
            "predicted": {k: v["total"] for k, v in terms.items()}, "predicted_terms": terms,
            "actual": {"down": auto_s, "back": 0.03}, "auto_actual": auto_s, "estimate_cpu_s": cpu_s,
            "actual_terms": {"down": {"exec": auto_s / 2}}}


def test_report_states_overhead_cpu_and_wall_and_the_calibration(tmp_path):
    recs = [_record(0.0004, 0.0006, 0.04), _record(0.0002, 0.0003, 0.02), _record(0.0010, 0.0020, 0.05)]
    cv = {"ape_median": 9.5, "ape_p90": 30.0, "mape": 12.0,
          "large": {"runs": 40, "min_rows": 3e5, "ape_median": 11.25, "ape_p90": 33.0}}
    doc = {"summary": {"queries": 3, "estimate_overhead_pct": {"n": 3, "median": 1.0, "p90": 1.8}},
           "colony": "test", "repeats": 3, "learner_kept": {"nic0": "ops"},
           "calibration": {"calibration_s": 171.4, "calib_runs": 240, "calib_rows": 1_200_000},
           "calibration_report": {"nic0": {"kept": "ops", "ops": cv, "nnls": dict(cv, ape_median=10.0),
                                           "forest": dict(cv, ape_median=15.0)}},
           "records": recs}
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    text = render(str(p))
    assert "median 1.0 %, p90 1.8 %" in text and "(0.40 ms median CPU)" in text
    assert "wall clock median 1.5 %" in text                 # 0.6 / 40, 0.3 / 20, 2.0 / 50 ms
    assert "over the device's measured execution (pushed down) median 2.0 %" in text    # 0.4 / 20 ms
    assert "calibration 171 s (240 runs per device, tables up to 1,200,000 rows)" in text
    assert "nic0: kept **ops**, CV median APE ops 9.5 % (large 11.2 %), nnls 10.0 %" in text
    doc["calibration"] = {"calibration_s": None}
    p.write_text(json.dumps(doc))
    assert "calibration records reused" in render(str(p))
