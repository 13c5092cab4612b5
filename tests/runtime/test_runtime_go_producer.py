"""A producer that is not Python: the Go program in producers/go injects particles into a
device of the running 3-node colony over Arrow Flight (Colony's bulk protocol, with the
colony's token); the colony then serves exactly those particles."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from colony.runtime import auth

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def go_producer(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("go") / "colony-inject"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "go-producer.sh"), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode == 3:
        pytest.skip(f"Go toolchain not installable here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _token_args() -> list[str]:
    if os.environ.get("RAY_AUTH_TOKEN"):
        return []
    return ["-token-file", str(auth.token_path())]


def test_go_producer_injects_particles_over_flight(ray_colony, go_producer):
    c = ray_colony
    n = 50_000
    loc = next(s["flight"] for s in c.status() if s["device"] == "nic2")
    key = next(k for k in (f"go/{i}" for i in range(64)) if c.owner("inject", k) == "nic2")
    proc = subprocess.run([str(go_producer), "-location", loc, *_token_args(), "-pool", "inject", "-key", key,
                           "-particles", str(n)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ack = json.loads(proc.stdout)
    assert ack["entry"][1] == key and ack["entry"][3] == n
    t = c.get("inject", key)[0]
    assert t.num_rows == n and t.schema.names[:3] == ["id", "time", "particle_id"]
    i = np.arange(n)
    assert np.array_equal(t.column("id").to_numpy(), i)
    assert np.array_equal(t.column("x").to_numpy(), i / 2) and np.array_equal(t.column("z").to_numpy(), -i)
    assert ack["bytes"] >= n * 72
    c.drop("inject", key)


def test_go_producer_without_the_token_is_refused(ray_colony, go_producer):
    loc = next(s["flight"] for s in ray_colony.status() if s["device"] == "nic2")
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"}
    proc = subprocess.run([str(go_producer), "-location", loc, "-key", "go/refused", "-particles", "10"],
                          capture_output=True, text=True, timeout=120, env=env)
    # when the server closes the stream before the first batch is written, gRPC's Send says only
    # EOF; the producer then reads the stream's status, so the refusal is always named
    assert proc.returncode == 1 and "Unauthenticated" in proc.stderr, proc.stderr
    assert "go/refused" not in ray_colony.list("inject", "go/")
