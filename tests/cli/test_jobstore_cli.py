"""`colony jobstore up / put / ls / get / status / down` through the real entry point on a
local Ray colony started by `colony up`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.ray
def test_jobstore_commands_end_to_end(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLONY_STATE_DIR=str(tmp_path / "state"),
               COLONY_SPILL_DIR=str(tmp_path / "spill"))

    def colony(*args, timeout=240):
        return subprocess.run([sys.executable, "-m", "colony", *args], env=env, capture_output=True, text=True,
                              timeout=timeout)
    up = colony("up", "--temp-dir", f"/tmp/ray-{ROOT.name}-jscli", "--object-store-memory", "256MiB")
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        r = colony("jobstore", "up", "--job", "j1", "--chunk-size", "65536")
        assert r.returncode == 0 and "striped over ['nic0', 'nic1', 'nic2', 'nic3']" in r.stdout, r.stdout + r.stderr
        src = tmp_path / "ckpt.bin"
        src.write_bytes(os.urandom(500_000))
        r = colony("jobstore", "put", str(src), "ckpt/0", "--job", "j1")
        assert r.returncode == 0 and "500000 bytes in 8 chunks" in r.stdout, r.stdout + r.stderr
        assert "ckpt/0" in colony("jobstore", "ls", "--job", "j1").stdout
        out = tmp_path / "back.bin"
        r = colony("jobstore", "get", "ckpt/0", str(out), "--job", "j1")
        assert r.returncode == 0 and out.read_bytes() == src.read_bytes(), r.stderr
        r = colony("jobstore", "status", "--job", "j1", "--json", str(tmp_path / "st.json"))
        assert r.returncode == 0, r.stdout + r.stderr
        st = json.loads((tmp_path / "st.json").read_text())
        assert sum(d["chunks"] for d in st["devices"]) == 8 and [f["path"] for f in st["files"]] == ["ckpt/0"]
        missing = colony("jobstore", "get", "nope", "-", "--job", "j1")
        assert missing.returncode == 2 and "no committed file 'nope'" in missing.stderr
        r = colony("jobstore", "down", "--job", "j1")
        assert r.returncode == 0 and "8 chunks dropped" in r.stdout, r.stdout + r.stderr
        gone = colony("jobstore", "ls", "--job", "j1")
        assert gone.returncode == 2 and "jobstore up --job j1" in gone.stderr
        r = colony("status", "--json", str(tmp_path / "c.json"))
        rows = json.loads((tmp_path / "c.json").read_text())["devices"]
        assert sum(p["objects"] for d in rows for name, p in d["store"]["pools"].items() if name == "default") == 0
    finally:
        down = colony("down")
        assert down.returncode == 0, down.stdout + down.stderr
