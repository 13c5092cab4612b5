"""Sifting on a real Ray colony: PEs on the emulated SmartNICs, device-to-device hand-off,
and a device actor killed mid-sift (Ray restarts it; every particle lands exactly once)."""

import os
import signal
import time

import numpy as np
import pytest

from colony.data import uniform
from colony.errors import RuntimeFailure
from colony.sift import bin_of
from colony.drivers.sift import Sifter

pytestmark = pytest.mark.ray


def _pid(c, device):
    return [s for s in c.status() if s["device"] == device][0]["pid"]


def _wait_restarted(c, device, old_pid, timeout=90):
    deadline = time.time() + timeout
    while True:
        try:
            st = [s for s in c.status() if s["device"] == device][0]
            if st["pid"] != old_pid:
                return st
        except RuntimeFailure:
            pass
        if time.time() > deadline:
            raise AssertionError(f"{device} did not come back within {timeout} s")
        time.sleep(0.5)


def test_sift_on_ray_survives_killed_device_exactly_once(ray_colony):
    c = ray_colony
    c.place("sift", "role:smartnic")
    members = [d.name for d in c.devices() if d.role == "smartnic"]
    table = uniform(120_000, seed=3, n_particles=12_000, steps=10)
    s = Sifter(c, members, k=2, n_bins=16, retry_wait_s=0.5, max_retries=180, run="chaos")
    step = table.num_rows // 8
    for i in range(8):
        s.inject(table.slice(i * step, step), members[i % len(members)], source=f"rank{i}", seq=0)
    r1 = s.run_stage(1)
    assert r1.rows == table.num_rows and r1.objects > 0
    for d in members:                                   # stage 2 split everywhere, parts wait in outboxes
        c.call(d, "sift", "compact", 2, True)
    victim = "nic2"
    old = _pid(c, victim)
    os.kill(old, signal.SIGKILL)                        # the device dies holding unacknowledged parts
    r2 = s.run_stage(2)                                 # retries until Ray restarted it; it recovers
    st = _wait_restarted(c, victim, old)
    assert st["restarted"]
    assert r2.objects > 0
    assert c.call(victim, "sift", "status")["accepted"] > 0     # its journal came back from its disk
    got = s.all_tracks()
    ids = got.column("id").to_numpy()
    assert got.num_rows == table.num_rows and len(np.unique(ids)) == table.num_rows   # exactly once
    for b in list(s.bins())[:4]:
        t = s.bin(b)
        assert np.all(bin_of(t.column("particle_id").to_numpy(), s.plan) == b)
    # the final bins are durable too: kill a bin holder after the run, nothing is lost
    victim2 = "nic3"
    old2 = _pid(c, victim2)
    os.kill(old2, signal.SIGKILL)
    _wait_restarted(c, victim2, old2)
    assert sum(s.bins().values()) == table.num_rows
    tr = s.track(int(table.column("particle_id")[0].as_py()))
    assert tr.column("time").to_pylist() == sorted(tr.column("time").to_pylist())


def test_sift_demo_on_ray(ray_colony, tmp_path):
    from colony.demo.sift import sift_demo
    r = sift_demo(ray_colony, tmp_path, n_particles=4000, steps=5, threshold_rows=6000)
    assert r["devices"] == ["nic0", "nic1", "nic2", "nic3"]
    assert r["exactly_once"] and r["rows_placed"] == 20_000 and r["track_of_particle_0_complete"]
    assert (tmp_path / "sift_stages.png").exists()
