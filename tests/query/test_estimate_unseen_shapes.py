"""Shapes that no calibration template ran, found by the nineteenth stop's shape sets
(src/colony/bench/queries/shapes): a CASE key has its results' distinct values, not its
inputs'; a window function sorts its rows by its keys and keeps state per partition
(counted, and calibrated by templates T24-T26); a limit over a scan stops the scan early and
counts once; decimal arithmetic keeps its columns. Each was off by 3-20x or more before."""

import math

import pytest

from colony.data import PARTICLE_SCHEMA, uniform
from colony.query import estimate, to_substrait
from colony.query import plan as qplan
from colony.query.estimate import BATCH_ROWS
from colony.query.stats import TableStats

N = 120_000


@pytest.fixture(scope="module")
def data():
    t = uniform(N, seed=5)
    return t, TableStats.build([t])


def _est(sql, st):
    return estimate(to_substrait(sql, {"particles": PARTICLE_SCHEMA}), {"particles": st})


def _rows(sql, t):
    return qplan.run_sql_locally(sql, {"particles": [t]}).num_rows


@pytest.mark.parametrize("sql", [
    "select case when x < 0.355 then 1 else 2 end as k, count(*) as n, avg(vy) from particles group by k",
    "select case when x < 0.3 then 'a' when y > 0.5 then 'b' else 'c' end as k, count(*) from particles group by k",
    "select case when x < 0.3 then 1 end as k, count(*) from particles group by k",     # no ELSE: NULL
    "select case particle_id % 3 when 0 then 'zero' when 1 then 'one' else 'many' end as k, count(*) "
    "from particles group by k",
])
def test_a_case_key_has_its_results_distinct_values(data, sql):
    t, st = data
    e = _est(sql, st)
    assert e.supported and e.rows == pytest.approx(_rows(sql, t), abs=0.5)
    assert e.ops["groups"] < 4                  # was ~N: a 2-group aggregation priced as N groups


def test_a_predicate_on_a_case_is_evaluated_not_defaulted(data):
    t, st = data
    sql = "select * from particles where case when x < 0.5 then y else z end < 0.25"
    assert _est(sql, st).rows == pytest.approx(_rows(sql, t), rel=0.1)


def test_a_window_function_sorts_by_its_keys_and_keeps_state_per_partition(data):
    t, st = data
    plain = _est("select id, x from particles where y < 0.3", st)
    one = _est("select id, x, row_number() over (partition by particle_id order by x) as r "
               "from particles where y < 0.3", st)
    two = _est("select id, row_number() over (partition by particle_id order by x) as r, "
               "rank() over (partition by particle_id order by x) as q, "
               "sum(vx) over (order by id) as s from particles where y < 0.3", st)
    n, nlogn = plain.rows, plain.rows * math.log2(plain.rows)
    assert plain.ops["sort"] == plain.ops["window"] == plain.ops["window_parts"] == 0
    assert one.ops["sort"] == pytest.approx(2 * nlogn, rel=0.02)                # two keys
    assert one.ops["window"] == pytest.approx(n, rel=0.02)
    parts = qplan.run_sql_locally("select count(distinct particle_id) as d from particles where y < 0.3",
                                  {"particles": [t]}).column("d")[0].as_py()
    assert one.ops["window_parts"] == pytest.approx(parts, rel=0.15)
    # one sort per distinct key list (rank shares row_number's), every function over every row
    assert two.ops["sort"] == pytest.approx(3 * nlogn, rel=0.02)
    assert two.ops["window"] == pytest.approx(3 * n, rel=0.02)
    # state per partition and function: row_number() and rank() keep two per particle
    assert two.ops["window_parts"] == pytest.approx(2 * one.ops["window_parts"], rel=1e-9)
    assert _est("select id, sum(vx) over () as s from particles", st).ops["sort"] == 0   # no keys: no sort


def test_a_sort_is_priced_per_key(data):
    _, st = data
    one = _est("select id, x from particles where z < 0.6 order by x", st)
    two = _est("select id, x from particles where z < 0.6 order by particle_id, x", st)
    assert two.ops["sort"] == pytest.approx(2 * one.ops["sort"])


def test_a_limit_over_a_scan_prices_the_batches_it_reads(data):
    t, st = data
    full = _est("select * from particles where vx > 50", st)
    lim = _est("select * from particles where vx > 50 limit 100", st)
    sel = full.rows / N
    batches = -(-100 / sel // BATCH_ROWS)
    assert lim.ops["scan"] == pytest.approx(full.ops["scan"] * batches * BATCH_ROWS / N, rel=0.01)
    assert lim.ops["filter"] < full.ops["filter"] / 5
    # a blocking operator under the limit reads everything: no early stop
    agg = _est("select particle_id, count(*) from particles group by particle_id limit 10", st)
    agg_full = _est("select particle_id, count(*) from particles group by particle_id", st)
    assert agg.ops["scan"] == agg_full.ops["scan"]
    # a limit larger than what the scan holds reads it all
    assert _est("select * from particles where vx > 50 limit 1000000", st).ops["scan"] == full.ops["scan"]


@pytest.mark.parametrize("sql,rel", [
    ("select particle_id % 5 as g, count(*) from particles where z < 0.3 group by g", 0.12),
    ("select particle_id / 7 as g, count(*), sum(vx) from particles where x < 0.5 group by g", 0.12),
    # drawn from the column's KLL sketch, whose compactions are random (datasketches seeds them
    # itself): over 40 builds of these statistics -7.3..+10.3 %, and +12.3 % once in a suite
    ("select id from particles where particle_id % 10 = 3", 0.2),
    ("select id from particles where particle_id / 1000 < 20", 0.12),
])
def test_decimal_arithmetic_keeps_its_columns(data, sql, rel):
    # uint64 arithmetic is planned in decimals; the tag that prices it apart hid its columns,
    # so such a key had no distinct count (a 5-group aggregation priced as 90k groups) and
    # such a predicate the 1/3 default (3.3x here); samples of an integer column are whole numbers
    t, st = data
    assert _est(sql, st).rows == pytest.approx(_rows(sql, t), rel=rel)


def test_a_limit_counts_once_not_per_row(data):
    # per row, the calibration's top-k templates gave the limit the heap's cost (2-10 us a
    # row) and a streaming limit of 94k rows was priced 0.26 s where it took 14 ms
    _, st = data
    small = _est("select * from particles where vx > -50 limit 10", st)
    large = _est("select * from particles where vx > -50 limit 90000", st)
    topk = _est("select * from particles where vx > -50 order by x limit 500", st)
    assert small.ops["limit"] == large.ops["limit"] == topk.ops["limit"] == 1.0
    assert _est("select * from particles where vx > -50", st).ops["limit"] == 0


@pytest.mark.parametrize("sql, per_row", [
    # the optimizer computes price * (1 - disc) once (`__common_expr_1`) for both sums
    ("select sum(vx * (1 - vy)) as a, sum(vx * (1 - vy) * (1 + vz)) as b from particles", 4),
    # a subquery's computed column read twice above it
    ("select avg(e), max(e) from (select vx * vx + vz * vz as e from particles) t", 3),
    # an aggregate's key, read by the projection above it: the aggregate emitted its values
    ("select floor(x * 1000) as b, count(*) from particles group by b order by b", 1),
])
def test_a_column_a_projection_computed_is_not_counted_again_where_it_is_read(data, sql, per_row):
    _, st = data
    # the engine evaluates a projection's expressions once and reads them above as columns
    # (TPC-H q1 was counted at 8 decimal operations a row where the engine does 4)
    assert _est(sql, st).ops["arith"] == pytest.approx(per_row * N)


@pytest.mark.parametrize("sql, within", [
    ("select trunc(x * 10) as b, count(*) from particles group by b", 0.01),          # 30,000x before
    ("select signum(vx) as s, count(*) from particles group by s", 0.01),
    ("select floor(x * 16) + 16 * floor(y * 16) as cell, count(*) from particles group by cell", 0.01),
    ("select floor(x * 16) + 16 * floor(y * 16) as cell, count(*) from particles group by cell "
     "having count(*) > 480", 0.25),                                                 # 0 rows before
    ("select particle_id % 7 as a, particle_id % 3 as b, count(*) from particles group by cube(a, b)", 0.01),
    ("select particle_id % 7 as a, avg(x) from particles where y < 0.5 group by rollup(a) having count(*) > 10",
     0.01),
    ("select particle_id % 7 as a, particle_id % 3 as b, count(*) from particles "
     "group by grouping sets ((a), (b), ())", 0.01),
    ("select id from particles where sin(x * 3.14) > 0.5", 0.05),
    ("select id from particles where atan2(y, x) between 0.2 and 0.6", 0.05),
    ("select id from particles where greatest(x, y, z) < 0.5", 0.05),
])
def test_math_keys_functions_of_several_columns_and_grouping_sets(data, sql, within):
    """DataFusion's other math functions evaluate on sampled values; a function of several
    columns takes at most its arguments' combinations of values; ROLLUP, CUBE and grouping
    sets have each set's groups (they were unsupported)."""
    t, st = data
    e, rows = _est(sql, st), _rows(sql, t)
    assert e.supported and e.rows == pytest.approx(rows, rel=within), (e.rows, rows)
