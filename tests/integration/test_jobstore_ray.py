"""The job store on Ray device actors: round trip through the data plane, and a device
process killed mid-write gives a typed error and publishes nothing."""

import os
import signal
import time

import pytest

from colony.drivers.jobstore import JobStore
from colony.errors import NoSuchFile, RuntimeFailure, WriteFailed


def _until_answers(c, device, timeout=90):
    """Retry a cheap call until Ray has restarted the killed device."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            return c.call(device, "objects", "pools")
        except RuntimeFailure:
            time.sleep(0.5)
    raise AssertionError(f"{device} did not come back within {timeout} s")


def test_round_trip_and_device_killed_mid_write(ray_colony):
    c = ray_colony
    js = JobStore.up(c, "rayjob", "default", chunk_size=256 << 10)
    try:
        data = os.urandom(3 << 20)
        m = js.write("ckpt/1", data)
        assert m["nchunks"] == 12 and js.read("ckpt/1") == data
        usage = {u["device"]: u for u in js.usage()}
        assert sorted(usage) == ["nic0", "nic1", "nic2", "nic3"]
        assert all(u["chunks"] == 3 for u in usage.values())             # striped over the 4 SmartNICs
        assert len({u["pid"] for u in usage.values()}) == 4               # four device processes

        victim = [s for s in c.status() if s["device"] == "nic2"][0]

        def kill(i):
            if i == 4:
                os.kill(victim["pid"], signal.SIGKILL)
        with pytest.raises(WriteFailed):
            js.write("ckpt/2", os.urandom(6 << 20), on_chunk=kill)
        with pytest.raises(NoSuchFile):
            js.stat("ckpt/2")
        assert [f["path"] for f in js.list()] == ["ckpt/1"]
        _until_answers(c, "nic2")
        js.gc()
        txns = {k.split("/")[3] for d in js.members for k in c.call(d, "objects", "list", "default", "job/rayjob/")}
        assert txns <= {js.stat("ckpt/1")["txn"]}                        # no chunk of the failed write left
        js.write("ckpt/2", data[:1000])                                  # the store works again
        assert js.read("ckpt/2") == data[:1000]
    finally:
        js.close()
    assert all(c.call(d, "objects", "list", "default", "job/rayjob/") == [] for d in js.members)
