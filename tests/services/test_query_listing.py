"""A device's query service keeps each table's object listing while its store's keys stand
still (a decision's listing and matching was ~5 % of its CPU), and lists again after a put,
a drop or a quarantine: a query never misses an object or reads a lost one."""

import numpy as np
import pyarrow as pa
import pytest

from colony.config.builders import devices as devices_config
from colony.errors import ObjectLost
from colony.runtime.local import LocalColony

TABLE = {"t": ("mem", "t/*")}


def _colony(tmp_path):
    return LocalColony(devices_config({
        "host": {"role": "host", "threads": 1, "services": {"query": {}}},
        "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}}, "pools": ["mem"],
                 "memory": 1 << 20, "disk": 1 << 30, "workdir": str(tmp_path / "nic0")}}), budgets=True)


def _objects(lc) -> int:
    return lc.call("nic0", "query", "describe", TABLE)["t"]["objects"]


def test_listing_follows_puts_drops_and_quarantine(tmp_path):
    lc = _colony(tmp_path)
    store = lc.store("nic0")
    store.put("mem", "t/0", pa.table({"v": np.ones(1000)}))
    store.put("mem", "other", pa.table({"v": np.ones(10)}))
    assert _objects(lc) == 1 and _objects(lc) == 1            # the second from the kept listing
    store.put("mem", "t/1", pa.table({"v": np.ones(1000)}))
    assert _objects(lc) == 2
    store.drop("mem", "t/0")
    assert _objects(lc) == 1
    store.put("mem", "t/big", pa.table({"v": np.ones(200_000)}))   # 1.6 MB > memory: spilled
    assert _objects(lc) == 2
    path = next((tmp_path / "nic0").rglob("*big*"))
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ObjectLost):
        store.get("mem", "t/big")                              # quarantined
    with pytest.raises(ObjectLost, match="t/big"):
        _objects(lc)                                           # refused by name, not listed from before
