"""Flight message size on the inject path: every batch is cut into messages of about
``Transfers.message_bytes`` (zero-copy slices) and, whatever the size, every acknowledged
object is stored intact."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from colony.runtime.flight import MESSAGE_BYTES, _chunks


def _batch(rows: int, seed: int = 0) -> pa.RecordBatch:
    rng = np.random.default_rng(seed)
    return pa.record_batch({"x": rng.random(rows), "id": np.arange(rows, dtype=np.int64)})


@pytest.mark.parametrize("limit", [64 << 10, 1 << 20, None])
def test_chunks_cut_a_batch_into_messages_of_the_asked_size_without_losing_rows(limit):
    b = _batch(500_000)                                           # 8 MB
    parts = list(_chunks(b, limit))
    size = limit or MESSAGE_BYTES
    assert len(parts) == -(-b.nbytes // size) or len(parts) == -(-b.nbytes // size) + 1
    assert all(p.nbytes <= size for p in parts)
    assert pa.Table.from_batches(parts).equals(pa.Table.from_batches([b]))


def test_a_small_batch_is_one_message():
    b = _batch(1000)
    assert list(_chunks(b, 1 << 20)) == [b]


@pytest.mark.parametrize("message_bytes,serialize", [(128 << 10, "inflight"), (16 << 20, "inflight"),
                                                     (128 << 10, "device")])
def test_injected_objects_are_stored_intact_whatever_the_message_size(ray_colony, message_bytes, serialize):
    c = ray_colony
    t = pa.Table.from_batches([_batch(400_000, 9)])               # 6.4 MB: Flight, several messages
    was = c.transfers.message_bytes
    c.transfers.message_bytes = message_bytes
    try:
        rep = c.inject(t, device="nic2", pool="inject", key_prefix=f"msg{message_bytes}{serialize}/",
                       batch_rows=200_000, serialize=serialize, transport="flight")
    finally:
        c.transfers.message_bytes = was
    assert rep.transports == {"flight": 2} and len(rep.entries) == 2
    got = pa.concat_tables([c.get("inject", e.key)[0] for e in sorted(rep.entries, key=lambda e: e.key)])
    assert got.equals(t)
    for e in rep.entries:
        c.drop("inject", e.key)
