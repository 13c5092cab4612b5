"""`colony bench codec --engines all` through the real entry point, on a tiny table."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

COLONY = shutil.which("colony", path=str(Path(sys.executable).parent)) or "colony"


@pytest.mark.slow
def test_bench_codec_engines_all(tmp_path):
    out = tmp_path / "engines.json"
    r = subprocess.run([COLONY, "bench", "codec", "--engines", "all", "--mb", "2", "--repeats", "1",
                        "--batch-sizes", "4,64", "--json", str(out)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "codec_engines" and doc["machine"]["loadavg_1m_at_start"] is not None
    engines = {row["engine"] for row in doc["rows"] if row["engine"]}
    assert {"software", "software-bytes"} <= engines
    cores = os.cpu_count() or 1
    for codec in ("outer-lz4", "outer-zstd", "outer-deflate"):
        mine = [row for row in doc["rows"] if row["codec"] == codec and row["engine"] == "software"]
        assert {row["batch"] for row in mine} == {4, 64}
        assert {row["threads"] for row in mine} == set(doc["config"]["threads"]) and cores in doc["config"]["threads"]
        for row in mine:
            for key in ("serialize_gbps", "deserialize_gbps", "deserialize_verified_gbps"):
                s = row[key]
                assert 0 < s["min"] <= s["median"] <= s["max"]
            assert row["deserialize_vs_pyarrow"]["median"] > 0 and 0 < row["ratio"] < 1.2
    peers = {row["codec"] for row in doc["rows"] if row["engine"] is None}
    assert {"pyarrow-lz4", "pyarrow-zstd", "isal-single-stream"} <= peers
    targets = doc["summary"]["targets"]
    assert targets and all(isinstance(t["met"], bool) and t["value"] > 0 for t in targets)
    assert set(doc["summary"]["stops_scaling_at_threads"]) >= {"software/outer-lz4", "software-bytes/outer-zstd"}
    assert "targets" in r.stdout
