"""One colony started by the real entry point (`colony up`), shared by the CLI tests that
need a running colony and do not test `up`/`down` themselves (tests/cli/test_runtime.py
does): starting one took ~21 s and stopping it ~5 s on 2 cores."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class CliColony:
    """``run(*args)`` runs ``colony *args`` in a subprocess against the running colony."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLONY_STATE_DIR=str(tmp / "state"),
                        COLONY_SPILL_DIR=str(tmp / "spill"), COLONY_MODELS_DIR=str(tmp / "models"),
                        RAY_AUTH_TOKEN_PATH=str(tmp / "token"))

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "colony", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)


@pytest.fixture(scope="session")
def cli_colony(tmp_path_factory):
    c = CliColony(tmp_path_factory.mktemp("cli-colony"))
    up = c.run("up", "--temp-dir", f"/tmp/ray-{ROOT.name}-cli", "--object-store-memory", "256MiB")
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield c
    finally:
        down = c.run("down")
        assert down.returncode == 0, down.stdout + down.stderr
