"""`colony offload report` through the real entry point: the seeds' spec and this machine's JSONs."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _colony(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-m", "colony", *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_offload_report_on_seed_and_measured_inputs(tmp_path):
    r = _colony("offload", "report", "--platform", "seed", "--out", str(tmp_path / "seed"),
                "--json", str(tmp_path / "seed.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OFFLOAD DOES NOT PAY" in r.stdout and "flips if device_core_speed = 0.4375" in r.stdout
    assert (tmp_path / "seed" / "index.html").exists()
    rep = json.loads((tmp_path / "seed.json").read_text())
    assert rep["sources"]["measured here"] == []
    res = ROOT / "bench" / "results"
    r = _colony("offload", "report", "--interference", str(res / "interference.json"), "--mbwu",
                str(res / "mbwu.json"), "--availability", str(res / "availability.json"),
                "--out", str(tmp_path / "here"), "--json", str(tmp_path / "here.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((tmp_path / "here.json").read_text())
    assert "slowdown_host" in rep["sources"]["measured here"]
    assert len(list((tmp_path / "here").glob("sensitivity_*.png"))) == 16
    bad = _colony("offload", "report", "--platform", str(tmp_path / "nope.toml"))
    assert bad.returncode == 2 and "cannot read platform spec" in bad.stderr
