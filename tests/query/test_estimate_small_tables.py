"""Small tables keep their rows (ColumnStats.values): range and band joins against a windows or
dimension table are estimated from the table's real (start, stop) / (lo, hi) pairs, and
predicates sharing a column are drawn together, not multiplied as if independent."""

import numpy as np
import pyarrow as pa
import pytest

from colony.query import estimate, to_substrait
from colony.query import plan as qplan
from colony.query.stats import SMALL_ROWS, ColumnStats, TableStats

N = 60_000
T0 = 1_700_000_000_000          # ms


@pytest.fixture(scope="module")
def schema():
    rng = np.random.default_rng(11)
    ts = T0 + rng.integers(0, 30 * 3_600_000, N)
    readings = pa.table({"ts": pa.array(ts, pa.int64()).cast(pa.timestamp("ms")),
                         "sensor": pa.array(rng.integers(0, 200, N), pa.int32()),
                         "temp": pa.array(rng.normal(20.0, 5.0, N))})
    starts = T0 + np.arange(30) * 3_600_000          # 30 one-hour windows, end to end
    windows = pa.table({"w": pa.array(np.arange(30), pa.int32()),
                        "start": pa.array(starts, pa.int64()).cast(pa.timestamp("ms")),
                        "stop": pa.array(starts + 3_600_000, pa.int64()).cast(pa.timestamp("ms"))})
    lo = rng.uniform(5.0, 30.0, 200)
    sensors = pa.table({"sensor": pa.array(np.arange(200), pa.int32()), "lo": lo,
                        "hi": lo + rng.uniform(1.0, 4.0, 200)})      # narrow bands: lo and hi move together
    tables = {"readings": readings, "windows": windows, "sensors": sensors}
    return tables, {k: TableStats.build([v]) for k, v in tables.items()}


def _rows(sql, tables, stats):
    e = estimate(to_substrait(sql, {k: v.schema for k, v in tables.items()}), stats)
    actual = qplan.run_sql_locally(sql, {k: [v] for k, v in tables.items()}).column(0)[0].as_py()
    return e, actual


def test_a_small_object_keeps_its_number_columns_row_aligned_with_nulls_as_nan():
    t = pa.table({"a": pa.array([1, None, 3], pa.int64()), "b": pa.array([0.5, 1.5, None]),
                  "d": pa.array([0, 1, 2], pa.int32()).cast(pa.date32()), "s": ["x", "y", "z"]})
    st = TableStats.build([t])
    assert np.array_equal(st.columns["a"].values, [1.0, np.nan, 3.0], equal_nan=True)
    assert np.array_equal(st.columns["b"].values, [0.5, 1.5, np.nan], equal_nan=True)
    assert st.columns["d"].values.tolist() == [0.0, 1.0, 2.0]           # dates in days
    assert st.columns["s"].values is None                                 # strings: their own sample
    back = TableStats.from_table(st.to_table())
    assert np.array_equal(back.columns["a"].values, st.columns["a"].values, equal_nan=True)
    big = ColumnStats.build(pa.array(np.arange(SMALL_ROWS + 1)))
    assert big.values is None
    big_with_nulls = ColumnStats.build(pa.array([None] + list(range(SMALL_ROWS)), pa.int64()))
    assert big_with_nulls.values is None and big_with_nulls.nulls == 1


def test_a_merge_keeps_values_only_while_every_object_has_them_aligned():
    p1 = TableStats.build([pa.table({"a": [1, 2], "b": [10, 20]})])
    p2 = TableStats.build([pa.table({"a": [3], "b": [30]})])
    m = TableStats.merge([p1, p2])
    assert m.columns["a"].values.tolist() == [1, 2, 3] and m.columns["b"].values.tolist() == [10, 20, 30]
    p3 = TableStats.build([pa.table({"a": [4]})])                          # an object without b
    m = TableStats.merge([p1, p3, p2])
    assert m.columns["a"].values.tolist() == [1, 2, 4, 3]
    assert m.columns["b"].values is None
    big = TableStats.build([pa.table({"a": np.arange(SMALL_ROWS)})])
    assert TableStats.merge([big, TableStats.build([pa.table({"a": [1]})])]).columns["a"].values is None


def test_a_range_join_on_a_windows_table_is_estimated_from_its_windows(schema):
    tables, stats = schema
    sql = "select count(*) from readings r join windows w on r.ts >= w.start and r.ts < w.stop"
    e, actual = _rows(sql, tables, stats)
    assert actual == N                       # every reading falls in exactly one window
    # drawn as independent halves the pair kept ~27 % of the 30 x N candidate pairs: 8x
    assert e.ops["join_out"] == pytest.approx(actual, rel=0.1)
    # no equality to hash on: a nested-loop join over every pair (its cost, calibration's T33)
    assert e.ops["join_nl"] == N * 30
    # no hash table either: none of a hash join's probe terms beside the pairs
    assert e.ops["join_lg"] == e.ops["join_mid"] == e.ops["join_big"] == 0


def test_a_band_join_keeps_each_sensors_lo_and_hi_together(schema):
    tables, stats = schema
    sql = ("select count(*) from readings r join sensors s on r.sensor = s.sensor "
           "and r.temp between s.lo and s.hi")
    e, actual = _rows(sql, tables, stats)
    assert e.ops["join_out"] == pytest.approx(actual, rel=0.15)
    assert e.ops["join_nl"] == 0                 # hashed on the sensor key
    assert e.ops["join_lg"] > 0


def test_predicates_sharing_a_column_are_drawn_together():
    """x between two other columns of one large table (no kept values): P(y < x < z) is 1/6
    for independent uniforms; multiplying P(x > y) and P(x < z) said 1/4."""
    rng = np.random.default_rng(3)
    n = 200_000
    t = pa.table({"x": rng.random(n), "y": rng.random(n), "z": rng.random(n)})
    stats = {"t": TableStats.build([t])}
    e, actual = _rows("select count(*) from t where x > y and x < z", {"t": t}, stats)
    assert actual == pytest.approx(n / 6, rel=0.02)
    filt = [r for op, r in e.node_rows if op == "filter"]
    assert filt and filt[0] == pytest.approx(actual, rel=0.05)
