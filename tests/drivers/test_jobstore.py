"""The job-local store through the Colony interface, in process (LocalColony): round trip,
striping, checksums, atomic commit, cleanup at job end."""

import os

import pyarrow as pa
import pytest

from colony.config.builders import devices
from colony.drivers.jobstore import JobStore
from colony.errors import ChecksumMismatch, CommitRefused, JobStoreError, NoSuchFile, WriteFailed
from colony.runtime.local import LocalColony
from colony.services.jobstore import META_POOL, chunk_prefix


def colony(n=3, workdir=None):
    spec = {"host0": {"role": "host", "pools": ["hostjs"]}}
    for i in range(n):
        spec[f"nic{i}"] = {"pools": ["js"], "workdir": workdir}
    return LocalColony(devices(spec))


def test_round_trip_striped_over_every_member():
    c = colony(3)
    data = os.urandom(5 * 65536 + 123)
    with JobStore.up(c, "j1", "js", chunk_size=65536) as js:
        m = js.write("ckpt/0001", data)
        assert m["nchunks"] == 6 and m["size"] == len(data)
        assert js.read("ckpt/0001") == data
        assert js.read("ckpt/0001", offset=65530, length=20) == data[65530:65550]   # across a chunk edge
        assert js.read("ckpt/0001", offset=len(data) - 3) == data[-3:]
        per_dev = {d: len(c.store(d).list("js", chunk_prefix("j1"))) for d in js.members}
        assert per_dev == {"nic0": 2, "nic1": 2, "nic2": 2}                            # round-robin stripes
        assert [f["path"] for f in js.list()] == ["ckpt/0001"]
        assert sum(u["bytes"] for u in js.usage()) >= len(data)
        assert js.metadata == "nic0" and c.store("host0").list("hostjs") == []


def test_overwrite_publishes_new_version_and_drops_the_old_chunks():
    c = colony(2)
    with JobStore.up(c, "j2", "js", chunk_size=1000) as js:
        js.write("f", b"a" * 2500)
        js.write("f", b"b" * 1200)
        assert js.read("f") == b"b" * 1200
        keys = [k for d in js.members for k in c.store(d).list("js", chunk_prefix("j2"))]
        assert len(keys) == 2 and len({k.split("/")[3] for k in keys}) == 1
        js.unlink("f")
        with pytest.raises(NoSuchFile):
            js.read("f")
        assert all(c.store(d).list("js", "job/") == [] for d in js.members)


def test_corrupted_chunk_is_a_typed_checksum_error():
    c = colony(2)
    with JobStore.up(c, "j3", "js", chunk_size=4096) as js:
        data = os.urandom(10000)
        js.write("x", data)
        key = sorted(c.store("nic1").list("js", chunk_prefix("j3")))[0]
        store = c.store("nic1")
        raw = bytearray(memoryview(store.get("js", key)))
        raw[-10] ^= 0xFF                      # a bit flip in the chunk's bytes, header intact
        store.put("js", key, pa.py_buffer(bytes(raw)))
        with pytest.raises(ChecksumMismatch):
            js.read("x")


def test_uncommitted_and_aborted_writes_are_invisible_and_cleaned():
    c = colony(2)
    with JobStore.up(c, "j4", "js", chunk_size=1000) as js:
        js.write("f", b"old" * 100)
        w = js.open_write("f")
        w.write(b"n" * 3000)
        for f in list(w._pending):
            f.result()
        assert js.read("f") == b"old" * 100                  # chunks sent, not committed: old version
        assert js.gc() == 0                                   # an open write's chunks are not garbage
        w.abort()
        assert js.read("f") == b"old" * 100
        keys = [k for d in js.members for k in c.store(d).list("js", chunk_prefix("j4"))]
        assert len(keys) == 1
        with pytest.raises(JobStoreError):
            w.commit()


def test_commit_refuses_a_write_whose_chunk_vanished():
    c = colony(2)
    with JobStore.up(c, "j5", "js", chunk_size=1000) as js:
        w = js.open_write("f")
        w.write(b"z" * 2500)
        for f in list(w._pending):
            f.result()
        victim = c.store("nic1").list("js", chunk_prefix("j5"))[0]
        c.store("nic1").drop("js", victim)                  # as if the device had lost it
        with pytest.raises(CommitRefused):
            w.commit()
        with pytest.raises(NoSuchFile):
            js.stat("f")


def test_device_refusing_mid_write_gives_typed_error_and_publishes_nothing():
    """nic1 runs out of room mid-write (its store refuses a chunk): the writer aborts with a
    typed error, the new version is not visible, the previous one stays readable, and the
    chunks already sent are gone. (A device process dying mid-write: tests/integration.)"""
    from colony.store import ObjectStore
    c = LocalColony(devices({"nic0": {"pools": ["js"]}, "nic1": {"pools": ["js"]}}))
    small = ObjectStore("nic1", memory_budget=6000)
    small.create_pool("js")
    c.hosts["nic1"].ctx.store = small
    with JobStore.up(c, "j6", "js", chunk_size=1000) as js:
        js.write("ckpt", b"v1" * 500)
        with pytest.raises(WriteFailed) as e:
            js.write("ckpt", os.urandom(20_000))
        assert "ObjectTooLarge" in str(e.value)
        assert [f["path"] for f in js.list()] == ["ckpt"]
        assert js.read("ckpt") == b"v1" * 500
        old_txn = js.stat("ckpt")["txn"]
        left = [k for d in ("nic0", "nic1") for k in c.store(d).list("js", chunk_prefix("j6"))]
        assert left and all(k.split("/")[3] == old_txn for k in left)


def test_job_end_drops_everything_unless_keep():
    c = colony(2)
    js = JobStore.up(c, "j7", "js", chunk_size=512)
    js.write("a", b"1" * 2000)
    out = js.close()
    assert out["chunks_dropped"] == 4 and not out["kept"]
    assert all(c.store(d).list("js", "job/") == [] for d in ("nic0", "nic1"))
    assert c.store("nic0").list(META_POOL) == []
    with JobStore.up(c, "j8", "js", chunk_size=512, keep=True) as js:
        js.write("a", b"1" * 2000)
    assert sum(len(c.store(d).list("js", "job/j8/")) for d in ("nic0", "nic1")) == 4
    js2 = JobStore.up(c, "j8", "js")                           # a kept job can be reopened and read
    assert js2.read("a") == b"1" * 2000
    js2.close()


def test_daemon_on_the_host_is_the_same_service():
    c = colony(2)
    with JobStore.up(c, "h", "hostjs", chunk_size=1000) as js:
        js.write("f", b"q" * 3333)
        assert js.members == ["host0"] and js.read("f") == b"q" * 3333
        assert js.usage()[0]["chunks"] == 4
