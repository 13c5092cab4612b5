"""Partition kernel properties: multiset union, bin rule, stable order, baseline agreement."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from colony.data import uniform
from colony.sift import mix64, partition_ids, routing_value, split, split_by_select
from colony.errors import SiftError


def _table(ids):
    ids = np.asarray(ids, dtype=np.uint64)
    return pa.table({"id": np.arange(len(ids), dtype=np.uint64), "particle_id": ids,
                     "s": pa.array([f"r{i}" for i in range(len(ids))])})


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.integers(0, 2**64 - 1), max_size=400), k=st.integers(1, 8),
       shift=st.integers(0, 20), routing=st.sampled_from(["low", "hash"]),
       block=st.sampled_from([None, 1, 7, 64]), cut=st.floats(0, 1))
def test_split_properties(ids, k, shift, routing, block, cut):
    t = _table(ids)
    c = int(cut * t.num_rows)
    t = pa.concat_tables([t.slice(0, c), t.slice(c)])      # chunked input, as after a concat of objects
    from colony.sift.partition import split_by_ids, id_array
    pids = partition_ids(id_array(t), k, shift, routing)
    parts = split_by_ids(t, pids, 1 << k, block_rows=block)
    assert len(parts) == 1 << k
    # union == input as a multiset (row ids are unique, so compare sorted row ids + payload)
    rows = sorted((r["id"], r["particle_id"], r["s"]) for p in parts for r in p.to_pylist())
    assert rows == sorted((r["id"], r["particle_id"], r["s"]) for r in t.to_pylist())
    for p, part in enumerate(parts):
        v = routing_value(part.column("particle_id").to_numpy(), routing)
        assert np.all(((v >> np.uint64(shift)) & np.uint64((1 << k) - 1)) == p)   # bin rule
        rid = part.column("id").to_numpy()
        assert np.all(np.diff(rid.astype(np.int64)) > 0)                           # input order kept
        assert part.schema == t.schema


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 3000), k=st.integers(1, 7), seed=st.integers(0, 10))
def test_split_matches_select_baseline(n, k, seed):
    t = uniform(n, seed=seed)
    a, b = split(t, k), split_by_select(t, k)
    assert [x.to_pylist() for x in a] == [x.to_pylist() for x in b]


def test_hash_is_stable_and_mixing():
    ids = np.arange(1 << 12, dtype=np.uint64) << np.uint64(8)   # low 8 bits all zero
    assert np.all(partition_ids(ids, 4) == 0)
    counts = np.bincount(partition_ids(ids, 4, routing="hash"), minlength=16)
    assert counts.min() > 0.7 * counts.mean()
    M = (1 << 64) - 1

    def ref(z):   # SplitMix64 finalizer in plain Python integers: the hash must never drift
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        return z ^ (z >> 31)
    sample = [0, 1, 2**63 + 5, 2**64 - 1, 123456789]
    assert mix64(np.array(sample, dtype=np.uint64)).tolist() == [ref(z) for z in sample]


def test_16bit_partitions_and_signed_ids():
    t = pa.table({"particle_id": pa.array(np.arange(70000), pa.int64())})
    parts = split(t, 16)
    assert len(parts) == 65536 and sum(p.num_rows for p in parts) == 70000


def test_bad_input_is_typed():
    with pytest.raises(SiftError, match="no 'particle_id'"):
        split(pa.table({"x": [1]}), 2)
    with pytest.raises(SiftError, match="negative"):
        split(pa.table({"particle_id": pa.array([-1], pa.int64())}), 2)
    with pytest.raises(SiftError, match="nulls"):
        split(pa.table({"particle_id": pa.array([1, None], pa.uint64())}), 2)
    with pytest.raises(SiftError, match="type string"):
        split(pa.table({"particle_id": ["a"]}), 2)
    with pytest.raises(SiftError, match="routing"):
        split(uniform(10), 2, routing="nope")
    with pytest.raises(SiftError, match="fit"):
        split(uniform(10), 8, shift=60)
