"""Distinct values that joins and integer division leave: a join keeps only the key values that
match, a composite key does not make a fact table unique, and integer division truncates."""

import pytest

from colony.data.tpch import tables as tpch_tables
from colony.query import estimate, to_substrait
from colony.query import plan as qplan
from colony.query.estimate import levels
from colony.query.stats import TableStats


@pytest.fixture(scope="module")
def tpch():
    t = tpch_tables(0.01, seed=1)
    return t, {k: TableStats.build([v]) for k, v in t.items()}


def _q_error(sql: str, t: dict, st: dict) -> float:
    e = estimate(to_substrait(sql, {k: v.schema for k, v in t.items()}), st)
    actual = qplan.run_sql_locally(sql, {k: [v] for k, v in t.items()}).num_rows
    q = max(e.rows, 1.0) / max(actual, 1)
    return max(q, 1.0 / q)


def test_integer_division_key_has_the_groups_its_truncation_makes(tpch):
    t, st = tpch
    # a real division of the prices has ~15,000 values; truncated, five
    assert _q_error("select cast(o_totalprice as bigint) / 100000 as b, count(*) from orders group by 1", t, st) <= 1.5
    assert _q_error("select o_custkey / 100, count(*) from orders group by 1", t, st) <= 1.5
    # and a comparison with it keeps a block of keys, not the one key 300 a division would
    assert _q_error("select * from orders where o_custkey / 100 = 3", t, st) <= 1.5


def test_a_join_keeps_only_the_key_values_that_match(tpch):
    t, st = tpch
    # one nation's suppliers: a few supplier keys of lineitem survive, not all 100
    sql = ("select l_suppkey, sum(l_quantity) from lineitem join supplier on l_suppkey = s_suppkey "
           "where s_nationkey = 7 group by l_suppkey")
    assert _q_error(sql, t, st) <= 2.0


def test_a_composite_key_does_not_make_a_fact_table_unique(tpch):
    t, st = tpch
    # lineitem's (part, supplier) pairs repeat: each partsupp row matches several lineitems
    sql = ("select l_orderkey, ps_supplycost from part, lineitem, partsupp where ps_suppkey = l_suppkey "
           "and ps_partkey = l_partkey and p_partkey = l_partkey and p_name like '%green%'")
    joins = [lv for lv in levels(to_substrait(sql, {k: v.schema for k, v in t.items()}), st) if lv["op"] == "join"]
    ctx = qplan.execution_context(2)
    for n, v in t.items():
        qplan.register(ctx, n, [[v]])
    last = joins[-1]
    actual = qplan.execute(ctx, last["plan"]).num_rows
    assert actual > 1000
    assert last["est_rows"] == pytest.approx(actual, rel=0.5)


def test_a_predicate_on_one_tables_correlated_columns_is_read_off_its_row_sample():
    """Independent draws per column lose how columns move together and which exact values
    they take; the table's row sample keeps both. A rare outcome still goes to the draws."""
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(3)
    n = 200_000
    dep = rng.normal(10, 40, n).round()
    t = pa.table({"dep": dep, "arr": dep + rng.normal(0, 10, n).round(),      # arrival follows departure
                  "hhmm": rng.integers(5, 23, n) * 100 + rng.choice([0, 0, 0, 15, 30, 45], n)})
    tables, st = {"f": t}, {"f": TableStats.build([t])}
    for sql in ("select * from f where arr - dep < -10",     # ~16 %; independent draws: ~40 %
                "select * from f where hhmm % 100 = 0"):      # half on the hour, from the sample
        assert _q_error(sql, tables, st) <= 1.15, sql
    # an outcome no sampled row meets goes to the draws (independent: a known loss here)
    e = estimate(to_substrait("select * from f where arr - dep < -45", {"f": t.schema}), st)
    assert e.rows > 10_000
