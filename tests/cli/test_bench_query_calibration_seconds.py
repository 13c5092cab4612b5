"""`colony bench query --json` records how long calibration took and on what sizes (through
the real entry point): a fresh home calibrates and says so; a second run on the same home
reuses the devices' records and records no calibration time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

COLONY = shutil.which("colony", path=str(Path(sys.executable).parent)) or "colony"


def _bench(tmp_path, out):
    q = tmp_path / "q.sql"
    q.write_text("select count(*) from particles where x < 0.5\n")
    r = subprocess.run([COLONY, "bench", "query", "--queries", str(q), "--rows", "20000", "--local", "--repeats", "1",
                        "--json", str(out), "--calib-runs", "8", "--calib-rows", "30000"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "HOME": str(tmp_path), "COLUMNS": "200",
                            "COLONY_CALIBRATION_DIR": str(tmp_path / "cal")})
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(out.read_text())


def test_calibration_seconds_and_sizes_are_in_the_json(tmp_path):
    first = _bench(tmp_path, tmp_path / "a.json")
    cal = first["calibration"]
    assert cal["calib_runs"] == 8 and cal["calib_rows"] == 30_000
    assert 0 < cal["calibration_s"] < 600
    rep = first["calibration_report"]["nic0"]
    assert rep["kept"] in ("ops", "nnls", "blend", "forest") and "large" in rep[rep["kept"]]
    # the table is on nic0: the host and nic0 are calibrated, not the SmartNICs it never queries
    assert sorted(p.name.split("@")[0] for p in tmp_path.rglob("*@*.json")) == ["host", "nic0"]
    assert set(first["calibration_report"]) == {"host", "nic0"}
    again = _bench(tmp_path, tmp_path / "b.json")
    assert again["calibration"]["calibration_s"] is None      # the records were still valid
