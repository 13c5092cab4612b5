"""Disk is a trust boundary: a spill file changed on disk is never served (issue 14)."""

import logging
import struct

import numpy as np
import pyarrow as pa
import pytest

from colony import codec
from colony.errors import ObjectLost, StoreError
from colony.query import plan as qplan
from colony.store import ObjectStore
from colony.store.objects import QUARANTINE, SPILL_SUFFIX, clear_spill_dir

ONE = struct.pack("<d", 1.0)


def _ones(n=200_000):
    return pa.table({"v": np.ones(n)})


def _flip_one_byte(path):
    """1.0 -> 65536.0 in the first value: one byte (0x3f -> 0x40) changed on disk."""
    raw = bytearray(path.read_bytes())
    at = raw.index(ONE)
    raw[at + 7] = 0x40
    assert struct.unpack_from("<d", raw, at)[0] == 65536.0
    path.write_bytes(bytes(raw))


def _spilled_store(tmp_path):
    s = ObjectStore("nic0", memory_budget=1 << 20, spill_dir=tmp_path, disk_budget=1 << 30)
    s.create_pool("p")
    assert s.put("p", "ones", _ones()).spilled        # 1.6 MB > memory budget: straight to disk
    return s, tmp_path / "p" / ("ones" + SPILL_SUFFIX)


def _sum(store) -> float:
    ctx = qplan.execution_context(1)
    qplan.register(ctx, "t", [store.get_tables("p", "ones")])
    return ctx.sql("select sum(v) as s from t").to_arrow_table()["s"][0].as_py()


def test_intact_spill_is_served(tmp_path):
    s, _ = _spilled_store(tmp_path)
    assert _sum(s) == 200_000.0


def test_one_byte_changed_on_disk_is_a_typed_loss_not_a_wrong_sum(tmp_path, caplog):
    s, path = _spilled_store(tmp_path)
    _flip_one_byte(path)
    with caplog.at_level(logging.ERROR, logger="colony.store.objects"):
        with pytest.raises(ObjectLost, match=r"p/ones .*is lost: spill file .*ones\.clny failed its checksum"):
            _sum(s)                                 # before: 265535.0, no error
    assert str(path) in caplog.text                 # reported by name
    assert not path.exists()
    moved = tmp_path / QUARANTINE / "p" / path.name
    assert moved.exists()                           # kept aside as evidence, never served
    with pytest.raises(ObjectLost):                 # every later get says lost too
        s.get("p", "ones")
    info = s.info()
    assert list(info["lost_reasons"]) == ["p/ones"] and info["lost"] == {"p": ["ones"]} and info["disk_used"] == 0 and info["pools"]["p"]["objects"] == 0
    s.put("p", "ones", _ones())                     # putting it again from its source heals it
    assert _sum(s) == 200_000.0 and s.info()["lost"] == {} and s.info()["lost_reasons"] == {}


def test_restart_recovery_checks_the_body_and_quarantines(tmp_path):
    s, path = _spilled_store(tmp_path)
    s.put("p", "other", _ones(150_000))             # also spilled, intact
    _flip_one_byte(path)
    again = ObjectStore("nic0", memory_budget=1 << 20, spill_dir=tmp_path, disk_budget=1 << 30)
    assert again.recovered == 1 and again.list("p") == ["other"]
    with pytest.raises(ObjectLost, match="failed its checksum"):
        again.get("p", "ones")
    assert (tmp_path / QUARANTINE / "p" / path.name).exists()
    third = ObjectStore("nic0", memory_budget=1 << 20, spill_dir=tmp_path, disk_budget=1 << 30)
    assert third.recovered == 1                     # the quarantine is not recovered as a pool
    assert clear_spill_dir(tmp_path) == 1 and (tmp_path / QUARANTINE / "p" / path.name).exists()


def test_truncated_spill_file_is_lost_too(tmp_path):
    s, path = _spilled_store(tmp_path)
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ObjectLost, match="failed its checksum"):
        s.get("p", "ones")


def test_direct_to_disk_spill_error_is_typed(tmp_path):
    s = ObjectStore("nic0", memory_budget=1 << 20, spill_dir=tmp_path / "spill", disk_budget=1 << 30)
    s.create_pool("p")
    (tmp_path / "spill" / "p").write_text("a file where the pool's spill directory should be")
    with pytest.raises(StoreError, match="could not write p/big .*check the spill directory"):
        s.put("p", "big", _ones())                  # before: raw NotADirectoryError
    assert s.info()["disk_used"] == 0 and s.list("p") == []


def test_verify_matches_unpack_on_good_objects():
    buf = codec.pack([_ones(10_000)], "outer-zstd")
    assert codec.verify(buf).rows == 10_000


def test_a_spill_directory_that_is_a_file_is_a_typed_error(tmp_path):
    blocker = tmp_path / "spill"
    blocker.write_text("a file where the spill directory should be")
    s = ObjectStore("nic0", memory_budget=1 << 20, spill_dir=blocker, disk_budget=1 << 30)
    with pytest.raises(StoreError, match="check the spill directory"):
        s.create_pool("p")


def test_unusable_spill_directory_for_the_key_journal_is_typed(tmp_path):
    blocker = tmp_path / "spill"
    blocker.write_text("a file where the spill directory should be")
    s = ObjectStore("nic0", memory_budget=1 << 20, spill_dir=blocker, disk_budget=1 << 30)
    with pytest.raises(StoreError, match="cannot keep (its|the) key journal"):
        s.create_pool("p")                          # before: raw NotADirectoryError


def test_a_quarantined_object_moves_the_generation(tmp_path):
    """A listing kept across a quarantine would still name the lost object: the generation
    that keys such a listing moves with it."""
    s, path = _spilled_store(tmp_path)
    g = s.generation
    _flip_one_byte(path)
    with pytest.raises(ObjectLost):
        s.get("p", "ones")
    assert s.generation > g and s.lost_keys("p") == ["ones"]
