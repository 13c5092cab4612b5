"""Pure nearstore pieces: addresses, records, chunked ops, token bucket, block store, locks."""

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colony.errors import AddressError, BlockRangeError, DataError, LockTimeout, NearStoreError, UnknownOperation
from colony.nearstore import records as R
from colony.nearstore.address import BLOCK_BITS, MAX_BLOCK, Extent, decode, encode, fmt
from colony.nearstore.blockstore import BlockStore
from colony.nearstore.locks import BlockLocks
from colony.nearstore.ops import chunk_size_for, get_operation


# -- addresses ------------------------------------------------------------------
@given(st.integers(0, 511), st.integers(0, MAX_BLOCK))
def test_address_roundtrip_all_device_ids(dev, block):
    addr = encode(dev, block)
    assert 0 <= addr < 2 ** 64
    assert addr >> 55 == dev                      # the device lives in the upper 9 bits
    assert decode(addr) == (dev, block)


def test_address_every_device_id_and_edges():
    for dev in range(512):
        assert decode(encode(dev, 0)) == (dev, 0)
        assert decode(encode(dev, MAX_BLOCK)) == (dev, MAX_BLOCK)
    assert BLOCK_BITS == 55
    assert encode(511, MAX_BLOCK) == 2 ** 64 - 1
    assert fmt(encode(3, 7)) == "d3:b7"
    for bad in (-1, 512, 10_000):
        with pytest.raises(AddressError):
            encode(bad, 0)
    with pytest.raises(AddressError):
        encode(0, MAX_BLOCK + 1)
    with pytest.raises(AddressError):
        decode(2 ** 64)


def test_extent_blocks():
    e = Extent(encode(5, 10), 4097)
    assert e.device == 5 and e.block == 10
    assert e.nblocks(4096) == 2 and list(e.blocks(4096)) == [10, 11]


# -- records and operations -------------------------------------------------------
def test_host_sort_is_memcmp_order_and_stable():
    data = R.generate(5000, seed=3, distinct_keys=40)
    out = R.as_records(R.host_sort(data))
    keys = [bytes(r[:10]) for r in out]
    assert keys == sorted(keys)
    # ties keep input order: the payload carries the input position
    pos = out[:, 10:18].copy().view(">u8").ravel()
    for k in set(keys):
        idx = [i for i, kk in enumerate(keys) if kk == k]
        assert list(pos[idx]) == sorted(pos[idx])


def test_keys_with_trailing_zero_bytes_order_like_memcmp():
    recs = np.zeros((3, 100), dtype=np.uint8)
    recs[0, :10] = list(b"ab\x00\x00\x00\x00\x00\x00\x00\x01")
    recs[1, :10] = list(b"ab\x00\x00\x00\x00\x00\x00\x00\x00")
    recs[2, :10] = list(b"a\xff" + b"\x00" * 8)
    out = R.sort_records(recs)
    assert [bytes(r[:10]) for r in out] == sorted(bytes(r[:10]) for r in recs)


def _chunks(buf: bytes, size: int):
    return [buf[i:i + size] for i in range(0, len(buf), size)]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400), st.integers(1, 30), st.integers(1, 30),
       st.integers(1, 20), st.integers(0, 10_000))
def test_streaming_merge_equals_stable_merge(na, nb, ca, cb, distinct, seed):
    a = R.host_sort(R.generate(na, seed=seed, distinct_keys=distinct))
    b = R.host_sort(R.generate(nb, seed=seed + 1, distinct_keys=distinct))
    # same key pool for both sides, so ties across inputs are common
    if na and nb:
        b_recs = R.as_records(b).copy()
        a_recs = R.as_records(a)
        b_recs[:, :10] = a_recs[np.random.default_rng(seed).integers(0, na, nb), :10]
        b = R.host_sort(b_recs.tobytes())
    op = get_operation("merge")
    out = []
    op.run([iter(_chunks(a, ca * 100)), iter(_chunks(b, cb * 100))], out.append)
    assert b"".join(out) == R.host_sort(a + b)        # ties: left input first == stable sort


def test_sort_op_chunked_equals_host_sort():
    data = R.generate(3000, seed=9, distinct_keys=100)
    op = get_operation("sort")
    out = []
    op.run([iter(_chunks(data, chunk_size_for(op, 7000)))], out.append)
    assert b"".join(out) == R.host_sort(data)
    assert chunk_size_for(op, 1 << 20) == (1 << 20) // 100 * 100
    with pytest.raises(DataError):
        chunk_size_for(op, 99)


def test_bad_records_and_unknown_op():
    with pytest.raises(DataError):
        R.as_records(b"x" * 150)
    with pytest.raises(UnknownOperation):
        get_operation("nope")
    with pytest.raises(DataError):
        get_operation("sort", key_size=8).run([iter([b"x" * 100])], lambda b: None)


# -- block store ---------------------------------------------------------------------
def test_block_store_roundtrip_free_and_errors(tmp_path):
    bs = BlockStore(tmp_path / "d.blocks", device_id=7, block_size=512)
    e1 = bs.allocate(1000)
    e2 = bs.allocate(10)
    assert e1.device == 7 and e1.nblocks(512) == 2 and e2.block == 2
    bs.write(e1, b"a" * 1000)
    bs.write(e2, b"0123456789")
    assert bs.read(e1) == b"a" * 1000 and bs.read(e2, 3, 4) == b"3456"
    bs.free(e1)
    e3 = bs.allocate(512)
    assert e3.block == 0                                 # reused
    with pytest.raises(BlockRangeError):
        bs.read(e2, 5, 10)
    with pytest.raises(BlockRangeError):
        bs.read(Extent(encode(3, 0), 10))                # another device's block
    with pytest.raises(BlockRangeError):
        bs.read(Extent(encode(7, 100), 10))              # past the end
    with pytest.raises(NearStoreError):
        BlockStore(tmp_path / "x", 0, block_size=1000)
    assert (tmp_path / "d.blocks").stat().st_size == bs.nblocks * 512
    bs.close()


# -- locks ---------------------------------------------------------------------------
def test_lock_waiter_runs_as_soon_as_unlocked():
    locks = BlockLocks()
    locks.lock(0, 10, "sort0")
    locks.wait(0, 10, "sort0")                             # the holder itself passes
    got = []
    t = threading.Thread(target=lambda: got.append((locks.wait(5, 6, "merge"), time.monotonic())))
    t.start()
    time.sleep(0.2)
    assert not got                                          # still waiting
    t_unlock = time.monotonic()
    locks.unlock("sort0")
    t.join(2)
    assert got and got[0][1] - t_unlock < 0.1 and got[0][0] >= 0.15
    assert locks.waits == 1 and locks.held() == []


def test_lock_disjoint_ranges_do_not_block_and_timeout_raises():
    locks = BlockLocks(timeout_s=0.1)
    locks.lock(0, 10, "a")
    assert locks.wait(10, 20, "b") == 0.0
    with pytest.raises(LockTimeout, match="held by \\['a'\\]"):
        locks.wait(9, 10, "b")
    locks.lock(10, 20, "b")
    assert locks.unlock("a", 0, 10) == 1 and locks.held() == [(10, 20, "b")]
