"""Every ``python -m colony.bench.*`` module answers ``--help`` with its usage and runs nothing:
before, seven of them ignored their arguments, ran the benchmark and overwrote the committed
result under bench/results/."""

import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

BENCH = Path(str(resources.files("colony.bench")))
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if '__name__ == "__main__"' in p.read_text())


def test_the_benchmark_modules_are_found():
    assert {"deadline", "mbwu", "sift_file", "query_report", "decision_cpu"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_help_prints_usage_and_writes_nothing(module, tmp_path):
    r = subprocess.run([sys.executable, "-m", f"colony.bench.{module}", "--help"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage:" in r.stdout and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []          # nothing ran: no result written


@pytest.mark.parametrize("module", ["deadline", "mbwu", "sift_file"])
def test_an_argument_it_does_not_take_is_an_error(module, tmp_path):
    r = subprocess.run([sys.executable, "-m", f"colony.bench.{module}", "--no-such-flag"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "unrecognized arguments" in r.stderr
    assert list(tmp_path.iterdir()) == []
