"""The statistics know the order rows are stored in, and the estimator counts what that
order changes: a range of a column stored sorted keeps one stretch of rows (no scattered
copy), and a top-k against the stored order takes every row into its heap (DataFusion, 1M
rows by id stored rising: ``order by id desc limit 10`` 100 ms, 2 ms over a shuffled id)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from colony.data import uniform
from colony.query import plan as qplan
from colony.query.estimate import estimate
from colony.query.stats import ColumnStats, TableStats, stored_order

N = 200_000


def _table():
    t = uniform(N, seed=5)
    rid = np.asarray(t.column("id"))[np.random.default_rng(2).permutation(N)]   # id, shuffled
    return t.append_column("rid", pa.array(rid))


@pytest.fixture(scope="module")
def particles():
    t = _table()
    parts = [t.slice(0, N // 2), t.slice(N // 2)]
    return t, {"p": TableStats.merge([TableStats.build([x]) for x in parts])}


def _ops(sql, particles):
    t, st = particles
    return estimate(qplan.to_substrait(sql, {"p": t.schema}), st).ops


def test_stored_order_counts_rises_falls_and_new_extremes():
    up = np.arange(1000.0)
    assert stored_order(up) == (999, 0, 1000, 1)
    assert stored_order(up[::-1]) == (0, 999, 1, 1000)
    rnd = np.random.default_rng(0).random(100_000)
    rises, falls, highs, lows = stored_order(rnd)
    assert rises + falls == 99_999 and abs(rises - falls) < 1500
    # new highs in random order: the harmonic number, ln n + 0.58 = 12.1 (sd ~3.3)
    assert 3 <= highs <= 30 and 3 <= lows <= 30
    assert stored_order(np.array([]))[2] == 0 and stored_order(np.array([4.0])) == (0, 0, 1, 1)


def test_disorder_is_zero_for_sorted_or_blocked_columns_and_one_for_shuffled(particles):
    cols = particles[1]["p"].columns
    assert cols["id"].disorder == 0.0 and cols["rid"].disorder > 0.95 and cols["x"].disorder > 0.95
    # objects read one after another: new highs add up when each starts above the last
    assert cols["id"].new_extremes(highs=True) == N and cols["id"].new_extremes(highs=False) == 1
    assert cols["rid"].new_extremes(highs=True) < 60
    # twelve values stored in blocks, in no rising order (months as strings sort: 1, 10, 11,
    # 12, 2, ...): 11 changes in 120k rows, so a range of them keeps a few stretches
    months = np.repeat(np.array([1, 10, 11, 12, 2, 3, 4, 5, 6, 7, 8, 9]), 10_000)
    assert ColumnStats.build(pa.array(months)).disorder < 1e-3
    # the same values shuffled change at ~11/12 of the rows
    shuffled = np.random.default_rng(1).permutation(months)
    assert ColumnStats.build(pa.array(shuffled)).disorder > 0.95
    # strings have no stored order here: unknown counts as random
    assert ColumnStats.build(pa.array(["b", "a", "c"])).disorder == 1.0


def test_merge_follows_the_objects_order():
    lo, hi = pa.array(np.arange(0, 5000)), pa.array(np.arange(5000, 10_000))
    a, b = ColumnStats.build(lo), ColumnStats.build(hi)
    assert ColumnStats.merge_all([a, b]).new_extremes(True) == 10_000
    # the higher object first: the lower one brings no new high, and its new lows count
    back = ColumnStats.merge_all([b, a])
    assert back.new_extremes(True) == 5000 and back.new_extremes(False) == 2


def test_order_survives_persistence_and_old_statistics_read_as_random():
    t = _table()
    st = TableStats.build([t])
    back = TableStats.from_table(st.to_table())
    assert back.columns["id"].order == st.columns["id"].order and back.columns["id"].disorder == 0.0
    row = st.columns["id"].to_row()
    del row["order"]                               # persisted before the stored order was kept
    old = ColumnStats.from_row(row)
    assert old.order is None and old.disorder == 1.0 and old.new_extremes(True) is None


def test_a_range_of_a_sorted_column_keeps_stretches_not_scattered_rows(particles):
    cols = "id, x, y, z, vx, vy, vz"
    srt = _ops(f"select {cols} from p where id < {N // 2}", particles)
    shf = _ops(f"select {cols} from p where rid < {N // 2}", particles)
    # (the shuffled side's batch carries its condition's column too: 8 columns)
    assert srt["take_runs"] == 0 and shf["take_runs"] == pytest.approx(8 * N / 4, rel=0.1)
    # beside a condition on a shuffled column, only that condition's rows scatter: n f (1 - 0.5)
    both = _ops(f"select {cols} from p where id < {N // 2} and x < 0.5", particles)
    assert both["take_runs"] == pytest.approx(7 * N * 0.25 * 0.5, rel=0.15)
    # a condition that does not keep a range of the column scatters its rows however it is stored
    mod = _ops(f"select {cols} from p where id % 7 = 0", particles)
    assert mod["take_runs"] > 0.5 * 7 * N / 7
    # literal first is the same range
    assert _ops(f"select {cols} from p where {N // 2} > id", particles)["take_runs"] == 0


def test_top_k_against_the_stored_order_takes_every_row_into_its_heap(particles):
    k = 100
    against = _ops(f"select id, x from p order by id desc limit {k}", particles)
    along = _ops(f"select id, x from p order by id limit {k}", particles)
    rand = _ops(f"select id, x from p order by rid desc limit {k}", particles)
    rand_k = k * (1 + math.log(N / k))                  # a random order's heap entries
    # each entry: a sift of the heap, log2(8k), and ~2 ns a byte of the row it carries
    # (DataFusion: select * 201 ms, id alone 92), counted as 6.5 bytes a sift
    assert against["topk_seq"] == pytest.approx((N - rand_k) * (math.log2(8 * k) + 16 / 6.5), rel=0.01)
    wide = _ops(f"select * from p order by id desc limit {k}", particles)          # 10 columns
    assert wide["topk_seq"] == pytest.approx((N - rand_k) * (math.log2(8 * k) + 80 / 6.5), rel=0.01)
    assert rand["topk_seq"] == 0 and along["topk_seq"] == 0
    # with the order, only the first batch fills the heap; in random order every batch reaches it
    assert rand["topk"] == pytest.approx(k * N / 8192) and along["topk"] < rand["topk"] / 5
    # a filter below keeps the order: still every kept row
    kept = _ops(f"select id, x from p where y < 0.3 order by id desc limit {k}", particles)
    assert kept["topk_seq"] == pytest.approx((0.3 * N - k * (1 + math.log(0.3 * N / k)))
                                             * (math.log2(8 * k) + 16 / 6.5), rel=0.05)
    # an aggregate between the read and the top-k loses the order: random order assumed
    agg = _ops(f"select id, count(*) from p group by id order by id desc limit {k}", particles)
    assert agg["topk_seq"] == 0


def test_the_stored_order_query_set_reads_tpch_s_stored_keys():
    """``shapes/ordered_tpch.sql`` over colony.data.tpch (lineitem and orders stored by order
    key, part and partsupp by part key): every query modelled; the latest-N families count
    entries against the order, the first-N and key ranges none, a modulo of the key scatters."""
    from importlib import resources

    from colony.bench.query_families import read_families
    from colony.data import tpch
    tables = tpch.tables(0.01, seed=1)
    st = {n: TableStats.build([t]) for n, t in tables.items()}
    schemas = {n: t.schema for n, t in tables.items()}
    path = resources.files("colony.bench") / "queries" / "shapes" / "ordered_tpch.sql"
    ops = {}
    for q in read_families(str(path)):
        e = estimate(qplan.to_substrait(q["sql"], schemas), st)
        assert e.supported, q["sql"]
        ops[q["family"]] = e.ops
    assert all(ops[f]["topk_seq"] > 0 for f in ("O1", "O2", "O3", "O10", "O12", "O16"))
    assert ops["O4"]["topk_seq"] == 0
    assert ops["O5"]["take_runs"] == 0 and ops["O8"]["take_runs"] == 0 and ops["O15"]["take_runs"] > 0
