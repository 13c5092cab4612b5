"""Benchmarks are importable modules: `colony bench` works from any directory."""

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
def test_bench_codec_quick_from_another_directory(tmp_path):
    out = tmp_path / "codec.json"
    r = subprocess.run([COLONY, "bench", "codec", "--quick", "--json", str(out)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["machine"] and doc


def test_bench_query_help_from_another_directory(tmp_path):
    r = subprocess.run([COLONY, "bench", "query", "--help"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "--queries" in r.stdout
