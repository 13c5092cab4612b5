"""Zone maps: per record batch bounds of each column, and what a filter copies from them.

A filter that keeps or drops a whole batch copies nothing (DataFusion passes it through or
skips it); only batches a predicate splits are taken row by row. Data in no order has every
batch split; a range over a sorted column (ids written in order) splits at most one batch
per object."""

import numpy as np
import pyarrow as pa
import pytest

from colony.data import PARTICLE_SCHEMA, uniform
from colony.query import estimate, to_substrait
from colony.query.stats import BATCH_ROWS, ColumnStats, TableStats

N = 4 * BATCH_ROWS          # two objects of two batches each


@pytest.fixture(scope="module")
def stats():
    t = uniform(N, seed=5)
    parts = [t.slice(0, N // 2), t.slice(N // 2)]
    return t, TableStats.merge([TableStats.build([p]) for p in parts])


def _est(sql, st):
    return estimate(to_substrait(sql, {"particles": PARTICLE_SCHEMA}), {"particles": st})


def test_zones_are_the_bounds_of_each_record_batch_in_stored_order(stats):
    t, st = stats
    z = st.columns["id"].zones
    assert z.shape == (4, 3)
    ids = t["id"].to_numpy()
    for i in range(4):
        chunk = ids[i * BATCH_ROWS:(i + 1) * BATCH_ROWS]
        assert tuple(z[i]) == (chunk.min(), chunk.max(), BATCH_ROWS)
    # batches follow how the objects are stored: two small tables in one object are two batches
    two = TableStats.build([t.slice(0, 1000), t.slice(1000, 500)])
    assert two.columns["x"].zones[:, 2].tolist() == [1000, 500]
    # strings have no zone map; a batch of nulls only has nan bounds
    s = TableStats.build([pa.table({"s": ["a", "b"], "n": pa.array([None, None], pa.float64())})])
    assert s.columns["s"].zones is None and np.isnan(s.columns["n"].zones[0, :2]).all()


def test_zones_survive_persistence_and_statistics_without_them_still_load(stats):
    _, st = stats
    back = TableStats.from_table(TableStats.build([uniform(1000, seed=1)]).to_table())
    assert back.columns["x"].zones.shape == (1, 3)
    row = ColumnStats.build(pa.array([1.0, 2.0])).to_row()
    row.pop("zones")                                  # persisted before zone maps existed
    old = ColumnStats.from_row(row)
    assert old.zones is None
    # merged with a part that has none: no zone map (a filter then counts every batch split)
    assert ColumnStats.merge_all([old, st.columns["x"]]).zones is None


def test_a_range_on_the_stored_order_takes_only_the_batch_it_splits(stats):
    _, st = stats
    cut = BATCH_ROWS + BATCH_ROWS // 2                # inside the second batch
    e = _est(f"select * from particles where id < {cut}", st)
    assert e.rows == pytest.approx(cut, rel=0.02)
    # the first batch is kept whole, the second split: only the half of it kept is copied
    # (a third of what an unordered column of the same selectivity copies)
    assert e.ops["take"] == pytest.approx((e.rows - BATCH_ROWS) * 9, rel=1e-9)
    assert e.ops["take"] == pytest.approx(BATCH_ROWS / 2 * 9, rel=0.05)
    assert e.ops["take_runs"] == pytest.approx(e.ops["take"] / 2, rel=0.05)   # runs within the split batch
    # on a batch boundary nothing is split: no copy at all
    assert _est(f"select * from particles where id < {2 * BATCH_ROWS}", st).ops["take"] == 0
    # the same selectivity on a column in no order: every batch split
    u = _est("select * from particles where x < 0.375", st)
    assert u.ops["take"] == pytest.approx(u.rows * 9, rel=1e-9)
    # a conjunction: batches the sorted range drops are not copied, the ones it keeps are split by x
    c = _est(f"select * from particles where id >= {2 * BATCH_ROWS} and x < 0.5", st)
    assert c.ops["take"] == pytest.approx(c.rows * 9, rel=1e-9)
    assert c.rows == pytest.approx(N / 4, rel=0.05)
    assert _est("select * from particles where id >= 0", st).ops["take"] == 0   # keeps every batch whole
