"""Any schema: sketches for every Arrow primitive type, literals of each type, joins on a
TPC-H-shaped 8-table schema with q-errors measured at every plan level."""

from importlib import resources

import decimal

import numpy as np
import pyarrow as pa
import pytest

from colony.data.tpch import tables as tpch_tables
from colony.query import estimate, to_substrait
from colony.query import plan as qplan
from colony.query.estimate import levels
from colony.query.stats import ColumnStats, TableStats
from colony.drivers.workload import read_queries

TPCH_SQL = resources.files("colony.bench") / "queries" / "tpch" / "queries.sql"

N = 40_000


def _estimated_and_actual(sql: str, tables: dict, stats: dict):
    """The estimate of ``sql`` and the rows DataFusion returns for it."""
    e = estimate(to_substrait(sql, {k: v.schema for k, v in tables.items()}), stats)
    return e, qplan.run_sql_locally(sql, {k: [v] for k, v in tables.items()}).num_rows


@pytest.fixture(scope="module")
def typed():
    rng = np.random.default_rng(5)
    days = rng.integers(8000, 12000, N)
    t = pa.table({
        "i8": pa.array(rng.integers(-100, 100, N), pa.int8()),
        "u32": pa.array(rng.integers(0, 1 << 20, N), pa.uint32()),
        "f32": pa.array(rng.random(N), pa.float32()),
        "dec": pa.array([decimal.Decimal(int(v)) / 100 for v in rng.integers(0, 100_000, N)], pa.decimal128(12, 2)),
        "d32": pa.array(days, pa.int32()).cast(pa.date32()),
        "d64": pa.array(days.astype("int64") * 86_400_000, pa.int64()).cast(pa.date64()),
        "ts": pa.array(rng.integers(0, 10**9, N) * 1000, pa.int64()).cast(pa.timestamp("ms")),
        "s": pa.array(rng.choice(["alpha", "beta", "gamma", "delta", "epsilon"], N, p=[.5, .2, .15, .1, .05])),
        "ls": pa.array([f"k{v:06d}" for v in rng.integers(0, 20_000, N)], pa.large_string()),
        "b": pa.array(rng.random(N) < 0.3),
    })
    return t, TableStats.build([t])


def test_every_primitive_type_gets_a_sketch_that_survives_persistence(typed):
    _, st = typed
    for name in ("i8", "u32", "f32", "dec", "d32", "d64", "ts", "b"):
        assert st.columns[name].kll is not None, name
    for name in ("s", "ls"):
        assert st.columns[name].items is not None and st.columns[name].kll is None
    back = TableStats.from_table(st.to_table())
    assert back.columns["dec"].hi == pytest.approx(st.columns["dec"].hi)
    assert back.columns["s"].point("alpha") == pytest.approx(0.5, abs=0.05)
    assert back.columns["ls"].ndv == pytest.approx(17_300, rel=0.1)      # ~20k keys drawn 40k times
    # number lines: decimals by value, dates in days, timestamps in microseconds
    assert st.columns["dec"].lo >= 0 and st.columns["dec"].hi <= 1000
    assert st.columns["d32"].cdf(10_000) == pytest.approx(0.5, abs=0.03)
    assert st.columns["d64"].cdf(10_000) == pytest.approx(0.5, abs=0.03)
    assert 0.99e15 < st.columns["ts"].hi <= 1e15         # ms values up to 1e12, read as microseconds


@pytest.mark.parametrize("where", [
    "dec < 250.00", "dec between 100.5 and 300.25", "d32 < date '1996-01-01'",
    "ts < timestamp '1985-01-01 00:00:00'", "s = 'beta'", "s in ('gamma', 'delta')",
    "s <> 'alpha'", "s like 'eps%'", "ls like '%99%'", "ls = 'k000123'", "b = true", "i8 < -50", "u32 >= 500000",
    "f32 < 0.25 and s = 'alpha'", "substring(s, 1, 2) in ('al', 'ga')",
])
def test_literals_of_each_type_are_read(typed, where):
    t, st = typed
    e, a = _estimated_and_actual(f"select * from t where {where}", {"t": t}, {"t": st})
    assert e.supported and not e.bounds, e.bounds
    q = max(e.rows, 1) / max(a, 1)
    # a LIKE on a high-cardinality string column is read off the sketch's random sample
    # (~3 % of 40k rows here; the library's compaction is random, with no seed to set): over
    # 1,000 sketch builds it ranged 0.64-1.45x (at k=400, 0.44-1.8x, and CI once drew 0.48);
    # the others stay within 1.1x
    bound = 1.8 if where.startswith("ls like") else 1.5
    assert 1 / bound <= q <= bound, (e.rows, a)


@pytest.fixture(scope="module")
def tpch():
    t = tpch_tables(0.01, seed=1)
    st = {k: TableStats.build([v]) for k, v in t.items()}
    ctx = qplan.execution_context(2)
    for n, v in t.items():
        qplan.register(ctx, n, [[v]])
    return t, st, ctx, read_queries(str(TPCH_SQL))


def test_tpch_shaped_queries_are_modelled_with_q_error_at_most_2_at_every_plan_level(tpch):
    t, st, ctx, queries = tpch
    schemas = {k: v.schema for k, v in t.items()}
    assert len(queries) == 22
    supported, per_op = 0, {}
    for sql in queries:
        pb = to_substrait(sql, schemas)
        e = estimate(pb, st)
        supported += e.supported
        for lv in levels(pb, st):
            a = qplan.execute(ctx, lv["plan"]).num_rows
            q = max(lv["est_rows"], 1) / max(a, 1)
            per_op.setdefault(lv["op"], []).append(max(q, 1 / q))
    assert supported >= 0.9 * len(queries)
    assert {"read", "filter", "project", "join", "aggregate", "sort", "fetch"} <= set(per_op)
    for op, qs in per_op.items():
        assert np.median(qs) <= 2.0, (op, np.median(qs))
    assert np.percentile(sum(per_op.values(), []), 90) <= 4.0


def test_join_estimates_report_the_bounds_they_use(tpch):
    t, st, _, queries = tpch
    schemas = {k: v.schema for k, v in t.items()}
    e9 = estimate(to_substrait(queries[8], schemas), st)          # lineitem x partsupp on two keys
    assert any("composite join key" in b for b in e9.bounds) and "bounded" in e9.reason
    e3 = estimate(to_substrait(queries[2], schemas), st)          # three-way FK join, no bound needed
    assert e3.supported and not e3.bounds
    # semi and anti joins (exists / not exists) are estimated, not refused
    for i in (3, 20, 21):
        pj = estimate(to_substrait(queries[i], schemas), st)
        assert pj.supported and pj.rows is not None


def test_equi_join_from_key_sketches(tpch):
    t, st, _, _ = tpch
    e, a = _estimated_and_actual("select * from orders join customer on o_custkey = c_custkey "
                                 "where c_mktsegment = 'BUILDING' and o_orderdate < date '1995-03-15'", t, st)
    assert abs(e.rows - a) / a < 0.15
    # customers without orders: the anti join counts the third that never ordered
    e, a = _estimated_and_actual("select * from customer where c_custkey not in (select o_custkey from orders)", t, st)
    assert abs(e.rows - a) / a < 0.15


def test_string_sample_columns_keep_kind():
    cs = ColumnStats.build(pa.array(["a", "b", None, "a"]))
    assert cs.nulls == 1 and cs.point("a") == pytest.approx(2 / 3)
    assert cs.point("zz") == 0.0          # every value counted exactly: one it lacks has no rows (not 1/NDV)


@pytest.mark.parametrize("field", ["year", "quarter", "month", "day", "doy", "dow", "hour", "minute"])
def test_date_parts_of_dates_and_timestamps_are_exactly_arrows(field):
    """Dates are days and timestamps microseconds on the statistics' number line: a field of
    a timestamp read as days was a year beyond 10^9."""
    import pyarrow.compute as pc

    from colony.query.estimate import _date_part, _date_trunc
    us = np.random.default_rng(2).integers(-2 * 10**15, 4 * 10**15, 3000)
    ts = pa.array(us, pa.timestamp("us"))
    arrow = {"year": pc.year, "quarter": pc.quarter, "month": pc.month, "day": pc.day, "doy": pc.day_of_year,
             "hour": pc.hour, "minute": pc.minute,
             "dow": lambda a: pc.day_of_week(a, count_from_zero=True, week_start=7)}[field]
    assert np.array_equal(_date_part(field, us.astype(float), "us"), np.asarray(arrow(ts)))
    days = us // 86_400_000_000
    if field not in ("hour", "minute"):
        assert np.array_equal(_date_part(field, days.astype(float), None),
                              np.asarray(arrow(pa.array(days.astype(np.int32), pa.date32()))))
    if field in ("year", "month", "day", "hour", "minute"):
        want = pc.floor_temporal(ts, unit=field, week_starts_monday=True).cast(pa.int64()).to_numpy()
        assert np.array_equal(_date_trunc(field, us.astype(float), "us").astype(np.int64), want)


@pytest.mark.parametrize("key, groups", [
    ("extract(hour from ts)", 24), ("extract(month from ts)", 12), ("date_part('dow', ts)", 7),
    ("date_trunc('month', ts)", 381), ("extract(year from d32)", 12)])
def test_a_date_part_group_key_has_as_many_groups_as_the_field_has_values(typed, key, groups):
    t, st = typed
    e, a = _estimated_and_actual(f"select {key} as k, count(*) from t group by {key}", {"t": t}, {"t": st})
    assert a == groups
    assert e.supported and 0.9 <= e.rows / a <= 1.1, (e.rows, a)


def test_a_table_joined_on_its_unique_key_adds_no_groups(tpch):
    """GROUP BY o_custkey, c_name over orders joined to customer on its key: one name per
    customer key, so as many groups as order customers (not customers x names)."""
    t, st, _, _ = tpch
    e, a = _estimated_and_actual("select o_custkey, c_name, c_mktsegment, count(*) from orders join customer "
                                 "on o_custkey = c_custkey where o_totalprice > 100000 "
                                 "group by o_custkey, c_name, c_mktsegment", t, st)
    assert 1 / 1.3 <= e.rows / a <= 1.3, (e.rows, a)


def test_date_and_time_functions_are_counted_apart_and_zoned_ones_apart_again(typed):
    """A date field is a calendar computation per value (~10-19 ns here), a zoned timestamp's
    field goes through its time zone (~33 ns), truncating a zoned one goes through it out and
    back (~135-141 ns); an add is ~1 ns: four classes, four prices."""
    t, _ = typed
    zoned = t.append_column("tz", t.column("ts").cast(pa.timestamp("ms", "UTC")))
    zst = {"t": TableStats.build([zoned])}

    def ops(expr):
        return estimate(to_substrait(f"select sum({expr}) from t", {"t": zoned.schema}), zst).ops
    for expr in ("extract(month from d32)", "extract(hour from ts)", "date_part('dow', ts)",
                 "extract(year from date_trunc('month', ts))"):
        o = ops(expr)
        assert o["temporal"] >= N and o["temporal_tz"] == o["trunc_tz"] == 0 and o["func"] <= N, expr
    o = ops("extract(hour from tz)")
    assert o["temporal_tz"] == pytest.approx(N) and o["temporal"] == o["trunc_tz"] == 0
    # a cast into a zone goes through it as a zoned field does (~40 ns a value); so does one
    # out of it to a date (~36), and a timestamp's date is a calendar computation (~21); a date
    # made a timestamp, or a zone dropped, is a multiply or a relabel (~2): any cast's price
    o = ops("extract(day from arrow_cast(d32, 'Timestamp(Millisecond, Some(\"UTC\"))'))")
    assert o["temporal_tz"] == pytest.approx(2 * N) and o["temporal"] == 0
    assert ops("char_length(cast(cast(tz as date) as varchar))")["temporal_tz"] == pytest.approx(N)
    assert ops("char_length(cast(cast(ts as date) as varchar))")["temporal"] == pytest.approx(N)
    for expr in ("extract(day from cast(d32 as timestamp))",
                 "extract(day from arrow_cast(tz, 'Timestamp(Millisecond, None)'))"):
        o = ops(expr)
        assert o["temporal"] == pytest.approx(N) and o["temporal_tz"] == 0, expr
    o = ops("extract(year from date_trunc('month', tz))")       # a truncation, then a field, both zoned
    assert o["trunc_tz"] == pytest.approx(N) and o["temporal_tz"] == pytest.approx(N) and o["temporal"] == 0
    # date_bin bins the instant in UTC by arithmetic, zoned or not (~5-7 ns a value where
    # date_trunc on a zoned column takes ~106-127): not a zoned truncation
    o = ops("extract(epoch from date_bin(interval '15 minutes', tz))")
    assert o["temporal"] >= N and o["trunc_tz"] == 0, o
    o = ops("extract(hour from date_bin(interval '15 minutes', tz))")   # a binned zoned time is still zoned
    assert o["temporal"] == pytest.approx(N) and o["temporal_tz"] == pytest.approx(N) and o["trunc_tz"] == 0, o
    # a month stride walks the calendar (~52 ns)
    o = ops("extract(epoch from date_bin(interval '1 month', ts, timestamp '2000-01-01'))")
    assert o["temporal_tz"] == pytest.approx(N) and o["trunc_tz"] == 0, o
    assert ops("u32 + 1")["temporal"] == 0


def test_string_work_is_counted_by_what_is_done_with_the_strings(typed):
    """Reading a string column costs little by itself; comparing, hashing and copying its
    values does, each its own price (DataFusion, one thread, ns a row: a comparison with a
    literal 2.4-6.4 against a number's 1.0, a string key grouped 8-20 against an integer's ~4,
    a string cell kept by a filter ~3.6 against ~1.5): `cmp_str`, `hash_str`, `take_str`."""
    t, st = typed
    sch = {"t": t.schema}

    def ops(sql):
        return estimate(to_substrait(sql, sch), {"t": st}).ops
    o = ops("select count(*) from t where s = 'beta'")
    assert o["cmp_str"] == pytest.approx(N) and o["cmp"] == o["str"] == 0
    o = ops("select count(*) from t where u32 = 7")
    assert o["cmp"] == pytest.approx(N) and o["cmp_str"] == 0
    o = ops("select count(*) from t where s in ('beta', 'gamma')")     # planned as two equalities
    assert o["cmp_str"] == pytest.approx(2 * N) and o["func"] == o["cmp"] == 0
    # each string key hashed once a row; an integer key is not string work
    assert ops("select s, ls, count(*) from t group by s, ls")["hash_str"] == pytest.approx(2 * N)
    assert ops("select u32, count(*) from t group by u32")["hash_str"] == 0
    o = ops("select substr(s, 1, 2), count(*) from t group by substr(s, 1, 2)")     # the function, then its key
    assert o["str"] == pytest.approx(N) and o["hash_str"] == pytest.approx(N)
    assert ops("select count(distinct ls) from t")["hash_str"] >= N
    # a join on a string key hashes it on both sides; on an integer key it does not
    two = {"a": t, "b": t.slice(0, 1000)}
    tst = {"a": st, "b": TableStats.build([t.slice(0, 1000)])}
    o = estimate(to_substrait("select count(*) from a join b on a.ls = b.ls", {k: v.schema for k, v in two.items()}), tst).ops
    assert o["hash_str"] == pytest.approx(N + 1000) and o["cmp_str"] == o["cmp"] == 0
    o = estimate(to_substrait("select count(*) from a join b on a.u32 = b.u32", {k: v.schema for k, v in two.items()}), tst).ops
    assert o["hash_str"] == 0
    # a filter keeping all rows copies three columns: one string, two numbers
    o = ops("select s, u32, f32 from t where f32 >= 0")
    assert o["take_str"] == pytest.approx(N, rel=0.05) and o["take"] == pytest.approx(2 * N, rel=0.05)
    assert ops("select u32, f32 from t where f32 >= 0")["take_str"] == 0


def test_string_functions_are_priced_by_class_and_string_aggregates_by_their_work(typed):
    """`str_fast` (a length, a case change, a prefix or suffix match: ~1-13 ns a row) apart
    from `str` (a substring, a search, a trim: ~6-38), and the comparisons (min, max) or hashes
    (approx_distinct) an aggregate of a string does: `cmp_str`, `hash_str`."""
    t, st = typed
    sch = {"t": t.schema}

    def ops(sql):
        return estimate(to_substrait(sql, sch), {"t": st}).ops
    for fast in ("s like 'al%'", "s like '%ta'", "starts_with(s, 'al')", "ends_with(s, 'a')",
                 "char_length(s) > 4", "upper(s) = 'BETA'", "s ilike 'AL%'"):
        o = ops(f"select count(*) from t where {fast}")
        assert o["str_fast"] == pytest.approx(N) and o["str"] == 0, fast
    for slow in ("s like '%et%'", "s like 'a%a'", "s like 'b_ta'", "substr(s, 2, 2) = 'et'", "strpos(s, 'e') > 1",
                 "trim(s) = 'beta'", "left(s, 2) = 'be'", "replace(s, 'a', 'b') = 'bbb'"):
        o = ops(f"select count(*) from t where {slow}")
        assert o["str"] == pytest.approx(N) and o["str_fast"] == 0, slow
    # the dear ones count several units of `str` (ns a row, one thread: md5 ~150, sha256 ~66,
    # a regexp rewrite ~34-115, against a substring's ~17); a search stays one
    for expr, units in (("md5(s)", 9), ("sha256(s)", 4), ("regexp_replace(s, 'a+', 'b')", 4),
                        ("regexp_like(s, 'a.b')", 1), ("levenshtein(s, 'beta')", 6)):
        assert ops(f"select count(*) from t where {expr} is not null")["str"] == pytest.approx(units * N), expr
    # a number written out as a string builds one a row (~9-31 ns), a string parsed into a
    # number reads one (~12): string work, not a cast's ~1-2; as a key, a string hashed
    o = ops("select cast(u32 as varchar) as k, count(*) from t group by 1")
    assert o["str"] == pytest.approx(N) and o["hash_str"] == pytest.approx(N) and o["func"] == 0, o
    assert ops("select count(distinct cast(ts as varchar)) from t")["str"] == pytest.approx(3 * N)
    o = ops("select sum(cast(s as bigint)) from t")
    assert o["str"] == pytest.approx(N) and o["func"] == 0, o
    assert ops("select sum(u32 + cast(f32 as int)) from t")["str"] == 0
    o = ops("select min(s), max(ls), approx_distinct(s) from t")
    assert o["cmp_str"] == pytest.approx(2 * N) and o["hash_str"] == pytest.approx(N)
    o = ops("select min(u32), max(f32), approx_distinct(u32) from t")       # numbers: no string work
    assert o["cmp_str"] == o["hash_str"] == 0
    o = ops("select s, max(ls) from t group by s")
    assert o["cmp_str"] == pytest.approx(N) and o["hash_str"] == pytest.approx(N)


def test_a_dictionary_encoded_string_column_plans_runs_and_is_sketched_as_strings():
    """A categorical (dictionary-encoded) column compared with a literal: DataFusion's
    Substrait producer refused the plan ("Unsupported literal: Dictionary"); the column is
    planned as its value type, runs on the encoded data, and is sketched as strings."""
    rng = np.random.default_rng(2)
    cities = np.array(["Berlin", "Lima", "Lyon", "Oslo", "Perth"])
    t = pa.table({"city": pa.array(cities[rng.integers(0, 5, N)]).dictionary_encode(),
                  "v": pa.array(rng.random(N))})
    sql = "select city, count(*) from t where city like 'L%' group by city"
    e, rows = _estimated_and_actual(sql, {"t": t}, {"t": TableStats.build([t])})
    assert rows == 2 and e.rows == pytest.approx(2)
    got = qplan.run_sql_locally("select count(*) as n from t where city = 'Lima'", {"t": [t]})
    assert got["n"][0].as_py() == t["city"].to_pylist().count("Lima")
    cs = TableStats.build([t]).columns["city"]
    assert cs.items is not None and cs.point("Lima") == pytest.approx(0.2, abs=0.03)


@pytest.mark.parametrize("where, lo, hi", [
    ("tag like 't00%'", 0.5, 2.0),          # the frequent values: the old share priced 14x the groups
    # ten of the most frequent: 16x before. The rare values' share is read off the string KLL's
    # compacted (randomized, unseeded) items: in ~1 of 40-130 builds the one rare value below
    # 't0010' (t0000, a few rows) is among them and the estimate is 3.2x (31.8 for 10), else 0.9x
    ("tag < 't0010'", 0.5, 4.0),
    ("tag > 't2'", 0.25, 2.0),              # mostly rare values: 5x under before, 3x now
])
def test_groups_of_a_skewed_string_key_filtered_on_itself_count_its_frequent_values_apart(where, lo, hi):
    """Zipf-distributed tags: a row-weighted sample holds mostly the frequent values, so the
    share of values a predicate on the key keeps is counted on the frequent values (exactly,
    from their sketch) and on the rest apart."""
    rng = np.random.default_rng(7)
    n = 200_000
    t = pa.table({"tag": pa.array([f"t{v:04d}" for v in rng.zipf(1.5, n) % 5000], pa.large_string()),
                  "score": pa.array(rng.random(n))})
    st = TableStats.build([t.slice(i, 50_000) for i in range(0, n, 50_000)])
    e, rows = _estimated_and_actual(f"select tag, avg(score) from t where {where} group by tag", {"t": t}, {"t": st})
    assert lo <= e.rows / rows <= hi, (e.rows, rows)


@pytest.fixture(scope="module")
def readings():
    """Sensor readings over 30 days: timestamps in milliseconds, 200 sensors."""
    rng = np.random.default_rng(11)
    n = 100_000
    t0 = np.datetime64("2025-03-01T00:00:00", "ms")
    ts = t0 + np.sort(rng.integers(0, 30 * 86_400_000, n)).astype("timedelta64[ms]")
    t = pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "sensor": pa.array(rng.integers(0, 200, n), pa.int16()),
                  "temp": pa.array(rng.normal(20, 2, n))})
    return t, TableStats.build([t.slice(i, 25_000) for i in range(0, n, 25_000)])


@pytest.mark.parametrize("sql", [
    "select cast(ts as date) as d, count(*) from r group by d",          # 13,000x the days before
    "select date_bin(interval '1 hour', ts) as h, avg(temp) from r group by h",      # 545x before
    "select date_bin(interval '6 hours', ts, timestamp '2025-01-01 03:00:00') as h, count(*) from r group by h",
    "select count(*) from r where cast(ts as date) = date '2025-03-05'",
    "select count(*) from r where cast(ts as date) between date '2025-03-05' and date '2025-03-09'",
])
def test_time_keys_and_casts_between_dates_and_timestamps_are_read_on_the_right_number_line(readings, sql):
    t, st = readings
    e, rows = _estimated_and_actual(sql, {"r": t}, {"r": st})
    assert e.supported and e.rows == pytest.approx(rows, rel=0.15), (e.rows, rows)
    if "count(*) from r where" in sql:          # the filter's own rows, against the count
        got = qplan.run_sql_locally(sql, {"r": [t]}).column(0)[0].as_py()
        filt = [lv["est_rows"] for lv in levels(to_substrait(sql, {"r": t.schema}), {"r": st})
                if lv["op"] == "filter"]
        assert filt and filt[0] == pytest.approx(got, rel=0.15), (filt, got)


@pytest.mark.parametrize("cond, per_sensor", [("rk <= 3", 3), ("rk < 3", 2), ("rk = 1", 1)])
def test_top_n_per_group_keeps_n_rows_of_each_partition(readings, cond, per_sensor):
    t, st = readings
    sql = (f"select sensor, ts, temp from (select sensor, ts, temp, row_number() over (partition by sensor "
           f"order by temp desc) as rk from r) where {cond}")
    e, rows = _estimated_and_actual(sql, {"r": t}, {"r": st})
    assert rows == 200 * per_sensor
    assert e.rows == pytest.approx(rows, rel=0.1)
    e_rest, rest = _estimated_and_actual(sql.replace(cond, "rk > 3"), {"r": t}, {"r": st})
    assert e_rest.rows == pytest.approx(rest, rel=0.05)


@pytest.fixture(scope="module")
def nested():
    """Nested columns (a list of structs, a struct holding a struct, a map) before and among
    primitive ones, and pandas' nanosecond timestamps with sub-microsecond digits."""
    rng = np.random.default_rng(0)
    n = 10_000
    t = pa.table({
        "id": pa.array(np.arange(n)),
        "tags": pa.array([[{"a": 1, "b": 2}]] * n),
        "loc": pa.array([{"lat": 1.0, "lon": {"x": 2.0, "y": 1}}] * n),
        "m": pa.array([[("k", {"q": 1})]] * n, pa.map_(pa.string(), pa.struct([("q", pa.int64())]))),
        "u64": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64)),
        "ts_ns": pa.array(rng.integers(0, 10**18, n), pa.timestamp("ns", tz="Europe/Paris")),
        "fsb": pa.array([b"ab"] * n, pa.binary(2)),
    })
    return t, TableStats.build([t])


def test_nested_columns_get_no_sketches_and_the_rest_of_the_table_keeps_its_own(nested):
    t, st = nested
    assert set(st.columns) == {"id", "u64", "ts_ns", "fsb"}       # a list column failed the whole table
    back = TableStats.from_table(st.to_table())
    assert set(back.columns) == set(st.columns)


@pytest.mark.parametrize("sql", [
    "select ts_ns from t where ts_ns > timestamp '2000-01-01T00:00:00Z'",      # 0 rows priced before
    "select id from t where u64 < 461168601842738790",
    "select id, tags from t where id < 1000",
])
def test_columns_after_a_struct_read_their_own_statistics(nested, sql):
    """A NamedStruct names a struct's fields too: the columns after one were read off the
    wrong statistics."""
    t, st = nested
    e, rows = _estimated_and_actual(sql, {"t": t}, {"t": st})
    assert e.supported and e.rows == pytest.approx(rows, rel=0.25), (e.rows, rows)


def test_a_literal_of_a_kind_not_read_is_not_a_null(nested):
    t, st = nested
    e, rows = _estimated_and_actual("select id from t where fsb = x'6162'", {"t": t}, {"t": st})
    assert rows == t.num_rows and e.rows > 0.2 * rows          # 0 rows before: read as `= NULL`
    assert any("1/3" in b for b in e.bounds)


def test_a_plan_the_planner_proved_empty_is_modelled_as_no_rows(nested):
    t, st = nested
    e, rows = _estimated_and_actual("select id from t where id = NULL", {"t": t}, {"t": st})
    assert rows == 0 and e.supported and e.rows == 0


def test_an_unsupported_plan_whose_message_names_fields_is_not_an_unknown_column(nested):
    from colony.errors import SqlError, UnknownColumn
    t, _ = nested
    with pytest.raises(SqlError) as err:
        to_substrait("select unnest(tags) from t", {"t": t.schema})
    assert not isinstance(err.value, UnknownColumn)
    with pytest.raises(UnknownColumn):
        to_substrait("select nope from t", {"t": t.schema})


def test_every_function_shape_over_tpch_is_modelled_and_its_dear_functions_priced(tpch):
    """The sixty-fifth stop's TPC-H function shapes (shapes/functions_tpch.sql): each is
    modelled with a row count, runs, and the dear string functions count their units of
    `str` (md5 9, sha256 4, a regexp count 4 a row)."""
    from colony.bench.query_families import read_families
    t, st, ctx, _ = tpch
    sch = {k: v.schema for k, v in t.items()}
    shapes = {q["family"]: q["sql"] for q in read_families(str(TPCH_SQL.parent.parent / "shapes" /
                                                                  "functions_tpch.sql"))}
    assert len(shapes) == 14
    for fam, sql in shapes.items():
        e = estimate(to_substrait(sql, sch), st)
        assert e.supported and e.rows is not None, (fam, e.reason)
        ctx.sql(sql).collect()                    # and DataFusion runs it (raises if not)
    for fam, units in (("V1", 9), ("V7", 4)):        # one hash per row kept (a projection)
        e = estimate(to_substrait(shapes[fam], sch), st)
        assert e.ops["str"] == pytest.approx(units * e.rows), fam
    e = estimate(to_substrait(shapes["V11"], sch), st)    # a regexp count per lineitem row, as a key
    assert e.ops["str"] == pytest.approx(4 * t["lineitem"].num_rows)
