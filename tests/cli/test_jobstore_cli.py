"""`colony jobstore up / put / ls / get / status / down` through the real entry point on a
local Ray colony started by `colony up` (the CLI tests' shared colony, tests/cli/conftest.py)."""

import json
import os

import pytest


def _default_pool_objects(colony, out) -> int:
    r = colony("status", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(out.read_text())["devices"]
    return sum(p["objects"] for d in rows for name, p in d["store"]["pools"].items() if name == "default")


@pytest.mark.ray
def test_jobstore_commands_end_to_end(cli_colony, tmp_path):
    colony = cli_colony.run
    before = _default_pool_objects(colony, tmp_path / "c0.json")      # other tests' tables share the pool
    r = colony("jobstore", "up", "--job", "j1", "--chunk-size", "65536")
    assert r.returncode == 0 and "striped over ['nic0', 'nic1', 'nic2', 'nic3']" in r.stdout, r.stdout + r.stderr
    try:
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
    finally:
        r = colony("jobstore", "down", "--job", "j1")
    assert r.returncode == 0 and "8 chunks dropped" in r.stdout, r.stdout + r.stderr
    gone = colony("jobstore", "ls", "--job", "j1")
    assert gone.returncode == 2 and "jobstore up --job j1" in gone.stderr
    assert _default_pool_objects(colony, tmp_path / "c2.json") == before
