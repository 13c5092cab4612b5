"""Memory budget with spill to disk in the object format, reload on get, recovery, all-or-nothing."""

import numpy as np
import pyarrow as pa
import pytest

from colony import codec
from colony.store import ObjectStore
from colony.errors import ObjectTooLarge, StoreError, UnknownKey
from colony.store.objects import SPILL_SUFFIX, clear_spill_dir


def obj(n_bytes: int, seed: int = 0) -> pa.Buffer:
    rows = max(1, n_bytes // 8)
    t = pa.table({"v": np.random.default_rng(seed).random(rows)})
    return codec.pack([t])


def files(d):
    from colony.store.objects import JOURNAL_DIR   # the key journals of memory-only pools are not spill files
    return sorted(p.name for p in d.rglob("*") if p.is_file() and p.parent.name != JOURNAL_DIR)


def test_unlimited_store_never_spills(tmp_path):
    s = ObjectStore("d", spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("p")
    for i in range(5):
        assert not s.put("p", f"k/{i}", obj(100_000, i)).spilled
    assert files(tmp_path) == []


def test_lru_spills_and_reload_on_get(tmp_path):
    a, b, c = obj(40_000, 1), obj(40_000, 2), obj(40_000, 3)
    s = ObjectStore("d", memory_budget=100_000, spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("p")
    s.put("p", "a/1", a)
    s.put("p", "b/2", b)
    s.get("p", "a/1")                     # a is now more recent than b
    s.put("p", "c/3", c)                  # b (least recently used) spills
    info = s.info()
    assert info["pools"]["p"]["spilled"] == 1 and info["memory_used"] <= 100_000
    spilled = tmp_path / "p" / ("b%2F2" + SPILL_SUFFIX)
    assert spilled.exists()
    # the spill file is the object format itself
    assert codec.read_info(spilled.read_bytes()).rows == codec.read_info(b).rows
    assert [e.spilled for e in s.entries("p")] == [False, True, False]
    got = s.get("p", "b/2")               # reload: b back in memory, something else spilled
    assert bytes(got) == bytes(b)
    assert not spilled.exists()
    assert s.info()["pools"]["p"]["spilled"] == 1
    assert s.get_tables("p", "a/1")[0].equals(codec.unpack(a)[0])


def test_object_larger_than_memory_goes_straight_to_disk(tmp_path):
    s = ObjectStore("d", memory_budget=10_000, spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("p")
    big = obj(50_000)
    assert s.put("p", "big/0", big).spilled
    assert bytes(s.get("p", "big/0")) == bytes(big)   # served from disk, stays spilled
    assert s.info()["pools"]["p"]["spilled"] == 1


def test_too_large_for_memory_plus_disk_stores_nothing(tmp_path):
    s = ObjectStore("d", memory_budget=50_000, spill_dir=tmp_path, disk_budget=60_000)
    s.create_pool("p")
    s.put("p", "a/0", obj(40_000, 1))
    before = (s.info(), files(tmp_path))
    with pytest.raises(ObjectTooLarge, match="does not fit device 'd'.*raise the device's memory/disk budget"):
        s.put("p", "huge/1", obj(200_000, 2))
    assert (s.info(), files(tmp_path)) == before
    assert s.list("p") == ["a/0"]
    # without a spill dir a full memory budget also refuses cleanly
    m = ObjectStore("m", memory_budget=50_000)
    m.create_pool("p")
    m.put("p", "a/0", obj(40_000))
    with pytest.raises(ObjectTooLarge):
        m.put("p", "b/1", obj(40_000))
    assert m.list("p") == ["a/0"]


def test_recovery_after_restart_keeps_spilled_objects_only(tmp_path):
    s = ObjectStore("d", memory_budget=60_000, spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("p")
    objs = {f"k/{i}": obj(40_000, i) for i in range(3)}
    for k, o in objs.items():
        s.put("p", k, o)
    spilled = {e.key for e in s.entries("p") if e.spilled}
    assert spilled == {"k/0", "k/1"}
    (tmp_path / "p" / "junk.clny.tmp").write_bytes(b"partial")   # an interrupted spill
    (tmp_path / "p" / "bad.clny").write_bytes(b"not an object")
    del s
    r = ObjectStore("d", memory_budget=60_000, spill_dir=tmp_path, disk_budget=1 << 20)   # "restarted"
    assert r.recovered == 2 and set(r.list("p")) == spilled   # k/2 lived only in memory: lost
    for k in spilled:
        assert bytes(r.get("p", k)) == bytes(objs[k])
    assert not (tmp_path / "p" / "junk.clny.tmp").exists()


def test_drop_replace_and_long_keys(tmp_path):
    s = ObjectStore("d", memory_budget=30_000, spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("p")
    long_key = "x" * 300 + "/7"
    s.put("p", long_key, obj(50_000, 1))          # to disk, hashed file name
    s.put("p", long_key, obj(20_000, 2))          # replaced: now fits memory, old file gone
    assert s.info()["disk_used"] == 0 and s.info()["pools"]["p"]["spilled"] == 0
    s.put("p", "y/1", obj(20_000, 3))             # spills the long key
    assert s.info()["pools"]["p"]["spilled"] == 1
    r = ObjectStore("d", memory_budget=30_000, spill_dir=tmp_path, disk_budget=1 << 20)
    assert long_key in r.list("p")
    s.drop("p", long_key)
    with pytest.raises(UnknownKey):
        s.get("p", long_key)
    assert not any(f.endswith(SPILL_SUFFIX) for f in files(tmp_path))


def test_hooks_see_spilled_puts_and_clear_spill_dir(tmp_path):
    seen = []
    s = ObjectStore("d", memory_budget=10_000, spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("p")
    s.on_put(lambda pool, key, tables: seen.append((key, tables[0].num_rows)))
    s.put("p", "k/1", obj(40_000))
    assert seen == [("k/1", 5000)]
    (tmp_path / "p" / "keep.txt").write_text("not ours")
    assert clear_spill_dir(tmp_path) == 1
    assert files(tmp_path) == ["keep.txt"]


def test_disk_budget_needs_spill_dir():
    with pytest.raises(StoreError, match="needs a spill_dir"):
        ObjectStore("d", memory_budget=1, disk_budget=10)


def test_unwritable_spill_dir_leaves_store_unchanged(tmp_path):
    s = ObjectStore("d", memory_budget=50_000, spill_dir=tmp_path, disk_budget=1 << 20)
    s.create_pool("p")
    s.put("p", "a/0", obj(40_000, 1))
    (tmp_path / "p").write_text("a file where the pool's spill directory should be")
    with pytest.raises(StoreError, match="could not spill"):
        s.put("p", "b/1", obj(40_000, 2))
    assert s.list("p") == ["a/0"] and s.info()["disk_used"] == 0
    assert bytes(s.get("p", "a/0")) == bytes(obj(40_000, 1))


def test_generation_moves_with_keys_not_with_spills(tmp_path):
    """Readers keep what they listed while ``generation`` stands still: it moves when a pool,
    a key or a lost key comes or goes, and not when an object only spills or reloads."""
    s = ObjectStore("d", memory_budget=100_000, spill_dir=tmp_path, disk_budget=1 << 20)
    g = s.generation
    s.create_pool("p")
    assert s.generation > g
    seen = []
    for i, k in enumerate(("a", "b", "c")):       # the third put spills the least recently used
        g = s.generation
        s.put("p", k, obj(40_000, i))
        assert s.generation > g
        seen.append(s.generation)
    assert s.info()["pools"]["p"]["spilled"] == 1
    g = s.generation
    for k in ("a", "b", "c"):                     # reloads, and the spills they cause
        s.get("p", k)
    assert s.generation == g
    s.drop("p", "b")
    assert s.generation > g
