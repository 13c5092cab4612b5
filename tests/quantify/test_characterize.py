"""Characterization: stress-ng parsing, normalization, ranking, Arrow kernels, KV stress."""

import json
import shutil

import numpy as np
import pytest

from colony.errors import SpecFileError, ToolUnavailable
from colony.quantify import characterize as ch

YAML = """---
system-info:
      stress-ng-version: 0.15.06
      cpus: 4
metrics:
    - stressor: cpu
      bogo-ops: 961
      bogo-ops-per-second-usr-sys-time: 955.7
      bogo-ops-per-second-real-time: 955.5
      wall-clock-time: 1.0
    - stressor: memrate
      bogo-ops: 283
      bogo-ops-per-second-usr-sys-time: 0.700877
      bogo-ops-per-second-real-time: 27.980803
      wall-clock-time: 10.114077
...
"""


def _doc(label, **rates):
    return {"label": label, "machine": {"cpu_model": label},
            "stress_ng": {"stressors": {k: {"bogo_ops_per_s_real": v} for k, v in rates.items()}}}


def test_parse_yaml():
    p = ch.parse_stress_ng_yaml(YAML)
    assert p["version"] == "0.15.06"
    assert p["metrics"]["memrate"]["bogo_ops_per_s_real"] == pytest.approx(27.980803)
    assert p["metrics"]["cpu"]["bogo_ops"] == 961
    with pytest.raises(SpecFileError):
        ch.parse_stress_ng_yaml("metrics: [unclosed")


def test_normalize_and_rank():
    ref = _doc("pi", cpu=100, zlib=10, fork=50)
    fast = _doc("host", cpu=400, zlib=40, fork=50)
    slow = _doc("nic", cpu=50, zlib=20, fork=25)
    n = ch.normalize(fast, ref)
    assert n["ratios"] == {"cpu": 4.0, "fork": 1.0, "zlib": 4.0}
    assert n["geomean"] == pytest.approx((4 * 4 * 1) ** (1 / 3))
    res = ch.compare([slow, fast, ref], reference=ref)
    assert [r["label"] for r in res["ranking"]] == ["host", "pi", "nic"]
    assert res["per_stressor_order"]["zlib"] == ["host", "nic", "pi"]
    with pytest.raises(SpecFileError, match="share no stressor"):
        ch.normalize(_doc("a", cpu=1), _doc("b", zlib=1))


def test_load_results_errors(tmp_path):
    with pytest.raises(SpecFileError, match="not found"):
        ch.load_results(tmp_path / "x.json")
    (tmp_path / "bad.json").write_text(json.dumps({"x": 1}))
    with pytest.raises(SpecFileError, match="stress_ng"):
        ch.load_results(tmp_path / "bad.json")


def test_missing_stress_ng_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ToolUnavailable, match="sysdeps"):
        ch.run_stress_ng(["cpu"], 1)


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed (scripts/sysdeps.sh)")
def test_run_stress_ng_for_real():
    r = ch.run_stress_ng(["cpu", "no-such-stressor"], timeout_s=1)
    assert r["stressors"]["cpu"]["bogo_ops_per_s_real"] > 0
    assert "no-such-stressor" in r["failed"]


def test_arrow_kernels_compute_the_right_things():
    from colony.data import uniform
    t = uniform(20_000, seed=4)
    vx, vy, vz = (t[c].to_numpy() for c in ("vx", "vy", "vz"))
    mx = ch.kernel_maximum(t).column("max_s2")[0].as_py()
    assert mx == pytest.approx(float(np.max(vx * vx + vy * vy + vz * vz)))
    norm = ch.kernel_normalize(t)
    u = np.sqrt(norm["ux"].to_numpy() ** 2 + norm["uy"].to_numpy() ** 2 + norm["uz"].to_numpy() ** 2)
    assert np.allclose(u, 1.0) and norm.num_rows == 20_000
    for f in (1.0, 0.25, 0.01):
        kept = ch.kernel_bbox(t, f).num_rows / 20_000
        assert kept == pytest.approx(f, abs=0.01 + 0.1 * f)
    r = ch.arrow_kernels(rows=8192, threads=[1, 2], repeats=1, chunk=1024)
    assert set(r["kernels"]) == {"maximum", "normalize", "bbox_100pct", "bbox_50pct", "bbox_25pct",
                                 "bbox_10pct", "bbox_1pct"}
    assert [p["threads"] for p in r["kernels"]["maximum"]] == [1, 2]


def test_kv_stress_and_plots(tmp_path):
    r = ch.kv_stress(threads=[1, 2], iterations=200)
    assert set(r["modes"]) == {"colliding", "distinct"}
    assert all(p["ops_per_s"] > 0 for m in r["modes"].values() for p in m)
    doc = _doc("me", cpu=10)
    doc["kv"] = r
    paths = ch.plots(doc, tmp_path, reference=_doc("ref", cpu=5))
    assert len(paths) == 2


def test_shipped_reference_is_a_results_file():
    ref = ch.default_reference()
    assert "note" in ref and ref["stress_ng"]["stressors"]
