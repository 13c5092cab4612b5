"""Acknowledged means durable, per pool, across a real device crash: objects a durable
pool acknowledged all come back after the device's process is SIGKILLed and Ray restarts
it; a memory-only pool's objects that lived only in memory are reported lost by name."""

from __future__ import annotations

import os
import signal
import time

import pyarrow as pa
import pytest

from colony.cli.runtime import restart_note
from colony.errors import ColonyError, ObjectLost


def _pid(colony, device: str) -> int:
    return next(s["pid"] for s in colony.status() if s["device"] == device)


def test_durable_pool_keeps_every_acknowledged_object_and_memory_pool_names_its_losses(ray_colony):
    c = ray_colony
    dev = "nic3"
    keys_d = [k for k in (f"dur/{i}" for i in range(64)) if c.owner("durable", k) == dev]
    keys_m = [k for k in (f"mem/{i}" for i in range(64)) if c.owner("default", k) == dev]
    tables = {k: pa.table({"k": [k] * 50, "v": list(range(50))}) for k in keys_d + keys_m}
    for k in keys_d:
        assert c.put("durable", k, tables[k]).spilled          # acknowledged = on disk
    for k in keys_m:
        assert not c.put("default", k, tables[k]).spilled      # acknowledged = in memory only
    for k in keys_d:
        assert c.get("durable", k)[0].equals(tables[k])       # reading must not undo the acknowledgement
    os.kill(_pid(c, dev), signal.SIGKILL)                      # crash right after the acknowledgements
    t0 = time.monotonic()
    while True:
        try:
            info = c.info(dev)
            break
        except ColonyError:
            assert time.monotonic() - t0 < 120, "device did not restart"
            time.sleep(0.5)
    for k in keys_d:
        assert c.get("durable", k)[0].equals(tables[k])
    assert sorted(info["lost"]["default"]) == sorted(keys_m)
    with pytest.raises(ObjectLost, match=keys_m[0]):
        c.get("default", keys_m[0])
    st = next(s for s in c.status() if s["device"] == dev)
    assert sorted(st["store"]["lost"]["default"]) == sorted(keys_m)
    # the restarted process warms its own handler threads (no client is there to do it)
    k = c.config.runtime.max_concurrency
    t1 = time.monotonic()           # from when it serves: a slow restart must not eat the warm-up's wait
    while st["warm_threads"] < k and time.monotonic() - t1 < 120:
        time.sleep(0.2)
        st = next(s for s in c.status() if s["device"] == dev)
    assert st["restarted"] and st["warm_threads"] == k, st["warm_up"]
    assert st["warm_up"] == "done"
    assert restart_note(st) == "restarted" and restart_note({**st, "warm_up": "pending"}) == "restarted (warm-up pending)"
    for k in keys_d:
        c.drop("durable", k)
