"""Shared fixtures. Ray starts only for tests that request ``ray_colony`` (marked ``ray``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Calibration records the tests make (small tables, few runs) go to a directory of this test
# run's own: in the user's ~/.cache/colony/calibration they replaced a benchmark's record of
# the same fingerprint, and the next benchmark priced 1M-row queries with them. Set before
# any colony starts, so every device process (Ray workers inherit it) writes there too.
if "COLONY_CALIBRATION_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile
    os.environ["COLONY_CALIBRATION_DIR"] = tempfile.mkdtemp(prefix="colony-test-calibration-")
    atexit.register(shutil.rmtree, os.environ["COLONY_CALIBRATION_DIR"], True)


def ray_temp_dir() -> str:
    """A Ray temp dir of this worktree's own (/tmp/ray-<worktree>), so engineers' clusters never collide."""
    return os.environ.get("COLONY_TEST_RAY_TMP", f"/tmp/ray-{ROOT.name}")


@pytest.fixture(scope="session")
def ray_colony(tmp_path_factory):
    """The embedded default colony (1 host + 4 emulated SmartNICs) on a 3-node Ray cluster.

    Host on the head node, nic0/nic2 on node 1, nic1/nic3 on node 2 (see
    ``colony.runtime.cluster.node_layout``), so transfers cross object stores. One per
    test session; tests must not shut it down. Its ``cluster`` attribute is the
    ``ray.cluster_utils.Cluster``. SmartNIC budgets are cut to 64 MiB memory + 512 MiB
    spill so spilling is exercised with small data. Place your service with
    ``ray_colony.place("svc", "role:smartnic", **options)``.
    """
    from colony.config import default
    from colony.runtime.cluster import local_cluster
    # several tests SIGKILL devices of this one session colony: Ray must always restart them (a device
    # created afresh after its restarts ran out would start empty and fail the next durability test)
    cfg = default().with_budgets(memory="64MiB", disk="512MiB").with_runtime(max_restarts=-1)
    with local_cluster(cfg, nodes=3, temp_dir=ray_temp_dir(), object_store_memory=256 << 20,
                       spill_root=tmp_path_factory.mktemp("spill")) as colony:
        yield colony


def pytest_collection_modifyitems(config, items):
    """Tests on the session's Ray colony run last, in their order: once started it stays up
    for the rest of the session, and idle it keeps ~6 % of two cores busy (raylets, GCS, the
    devices' load samplers), which every later test paid."""
    on_ray = []
    for item in items:
        if "ray_colony" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
            on_ray.append(item)
    ray_ids = {id(i) for i in on_ray}
    items[:] = [i for i in items if id(i) not in ray_ids] + on_ray


class FakeClock:
    """A clock that only moves when something sleeps on it: timing tests without time."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


@pytest.fixture
def clk():
    return FakeClock()


class FixedCores:
    """A core-load reading fixed by the test (the real sampler, ``colony.services.cpu.CoreLoad``,
    measures the machine); set ``stretch`` to change it."""

    def __init__(self, stretch: float = 1.0) -> None:
        self.stretch = stretch

    def slowdown(self, own: float = 0.0) -> float:
        return self.stretch

    def settled(self, own: float = 0.0) -> float:
        return self.stretch


@pytest.fixture
def cores():
    """A :class:`FixedCores` at stretch 1.0, to put on a service as its ``cores``."""
    return FixedCores()


@pytest.fixture
def colony_mount():
    """``mount(mnt, *argv)`` runs ``colony *argv`` (a FUSE mount command serving ``mnt``) in a
    subprocess and waits for the mount; after the test it is unmounted and the process reaped."""
    from colony.drivers.nearstore.fusefs import wait_mounted
    started = []

    def mount(mnt: Path, *argv: str) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        p = subprocess.Popen([sys.executable, "-m", "colony", *argv], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        started.append((mnt, p))
        if not wait_mounted(mnt, p):
            p.kill()
            pytest.fail("mount did not come up: " + (p.stdout.read() if p.stdout else ""))
        return p

    yield mount
    for mnt, p in started:
        subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
