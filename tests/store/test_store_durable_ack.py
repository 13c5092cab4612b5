"""Acknowledgement per pool, in the store itself: a durable pool's put returns only after
the object is fsynced (so a store reopened over the directory has every acknowledged
object); a memory-only pool journals its keys, so a reopened store names what it lost."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from colony import codec
from colony.errors import ObjectLost, StoreError, UnknownKey
from colony.store import ObjectStore


def _obj(i: int) -> pa.Buffer:
    return codec.pack(pa.table({"i": list(range(i, i + 100))}))


def test_durable_put_fsyncs_file_and_directory_before_returning(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    s = ObjectStore("nic0", spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("keep", durable=True)
    e = s.put("keep", "a/1", _obj(1))
    assert e.spilled and len(synced) == 2          # the object file, then its directory (the rename)
    s2 = ObjectStore("nic0", spill_dir=tmp_path, disk_budget=1 << 20)   # the device restarted
    s2.create_pool("keep", durable=True)
    assert codec.unpack(s2.get("keep", "a/1"))[0].equals(pa.table({"i": list(range(1, 101))}))


def test_reading_a_durable_object_keeps_it_on_disk(tmp_path):
    """A get (the query service's statistics hook reads every put) must not move a durable
    object into memory: its fsynced file is what the put acknowledged."""
    s = ObjectStore("nic0", memory_budget=1 << 20, spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("keep", durable=True)
    s.put("keep", "a/1", _obj(1))
    for _ in range(2):
        assert codec.unpack(s.get("keep", "a/1"))[0].num_rows == 100
    assert s.info()["pools"]["keep"]["spilled"] == 1 and s.info()["memory_used"] == 0
    s2 = ObjectStore("nic0", spill_dir=tmp_path, disk_budget=1 << 20)   # crash after the reads
    s2.create_pool("keep", durable=True)
    assert codec.unpack(s2.get("keep", "a/1"))[0].equals(pa.table({"i": list(range(1, 101))}))


def test_memory_only_pool_reports_lost_keys_by_name_after_a_restart(tmp_path):
    s = ObjectStore("nic0", spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("mem")
    for i in range(3):
        s.put("mem", f"k/{i}", _obj(i))
    s.drop("mem", "k/1")
    s2 = ObjectStore("nic0", spill_dir=tmp_path, disk_budget=1 << 20)
    s2.create_pool("mem")
    assert s2.info()["lost"] == {"mem": ["k/0", "k/2"]}     # dropped k/1 is not "lost"
    with pytest.raises(ObjectLost, match="k/0"):
        s2.get("mem", "k/0")
    with pytest.raises(UnknownKey):
        s2.get("mem", "k/1")
    s2.put("mem", "k/0", _obj(0))                           # put again: no longer lost
    assert s2.info()["lost"] == {"mem": ["k/2"]}


def test_a_durable_pool_needs_a_disk(tmp_path):
    with pytest.raises(StoreError, match="durable"):
        ObjectStore("nic0").create_pool("keep", durable=True)


def test_durable_pool_respects_the_disk_budget(tmp_path):
    from colony.errors import ObjectTooLarge
    s = ObjectStore("nic0", spill_dir=tmp_path, disk_budget=1000)
    s.create_pool("keep", durable=True)
    with pytest.raises(ObjectTooLarge):
        s.put("keep", "big/1", codec.pack(pa.table({"x": list(range(10_000))})))
    assert s.list("keep") == []
