"""`colony up / status / down` end to end in subprocesses (a real local Ray colony)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.ray
def test_up_status_down_local_colony(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLONY_STATE_DIR=str(tmp_path / "state"),
               COLONY_SPILL_DIR=str(tmp_path / "spill"), COLONY_CALIBRATION_DIR=str(tmp_path / "calib"))
    tmp = f"/tmp/ray-{ROOT.name}-cli"

    def colony(*args, timeout=240):
        return subprocess.run([sys.executable, "-m", "colony", *args], env=env, capture_output=True, text=True,
                              timeout=timeout)
    up = colony("up", "--temp-dir", tmp, "--object-store-memory", "256MiB")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "emulated bluefield2" in up.stdout and "Ray auth: token" in up.stdout
        state = json.loads((tmp_path / "state" / "default.json").read_text())
        again = colony("up", "--temp-dir", tmp)
        assert again.returncode == 2 and "already up" in again.stderr
        st = colony("status", "--json", str(tmp_path / "st.json"))
        assert st.returncode == 0, st.stdout + st.stderr
        rows = json.loads((tmp_path / "st.json").read_text())["devices"]
        assert [r["device"] for r in rows] == ["host0", "nic0", "nic1", "nic2", "nic3"]
        assert all(r["emulated"] == (r["role"] == "smartnic") for r in rows)
        assert all(not r["restarted"] and r["warm_up"] is None for r in rows)   # only a restarted device warms itself
        assert "links (counted by the device" in st.stdout and all("links" in r and r["flight"] for r in rows)
        # codec advice reads the device's one calibration record, calibrating it first when it has none
        adv = colony("codec", "advise", "--device", "nic1", "--quick", "--json", str(tmp_path / "adv.json"))
        assert adv.returncode == 0, adv.stdout + adv.stderr
        [rec] = (tmp_path / "calib").glob("nic1@*.json")
        stored = json.loads(rec.read_text())
        got = json.loads((tmp_path / "adv.json").read_text())
        assert got["device"] == "nic1" and got["threads"] == stored["threads"] == 1
        assert {p["codec"] for p in got["profiles"]} == {p["codec"] for p in stored["codecs"]} >= {"none", "outer-zstd"}
        assert got["link_gbps"] > 0 and "advice:" in adv.stdout
        before = rec.stat().st_mtime_ns
        slow = colony("codec", "advise", "--device", "nic1", "--link-gbps", "0.01")
        assert slow.returncode == 0 and rec.stat().st_mtime_ns == before      # read, not recalibrated
        assert "advice: none" not in slow.stdout                           # a slow link: compression wins
    finally:
        down = colony("down")
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
    assert not (tmp_path / "state" / "default.json").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(state["pid"], 0)
    gone = colony("status")
    assert gone.returncode == 2 and "run `colony up`" in gone.stderr
