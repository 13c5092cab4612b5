"""Calibration times the path queries take (the worker process), the op vector separates
operators whose costs differ by an order of magnitude, and linear learners shrug off
disturbed runs."""

import numpy as np
import pytest

from colony.cost.calibrate import TEMPLATES, calibrate
from colony.cost.models import NNLSExec, OpsExec, _x
from colony.data import PARTICLE_SCHEMA, uniform
from colony.query import plan as qplan
from colony.query.estimate import OPS, TABLE_MID, estimate
from colony.query.stats import TableStats
from colony.query.worker import WorkerPool


def test_calibration_runs_through_the_runner_it_is_given():
    pool = WorkerPool(keep=1, prestart=False)
    calls = []

    def runner(plan_bytes, objects, threads):
        calls.append(threads)
        return pool.run(plan_bytes, objects, threads=threads, memory_limit=1 << 30, max_result_bytes=1 << 30,
                        timeout_s=60, cache=True)
    try:
        models, runs = calibrate("nicX", 1, n_runs=10, min_rows=2_000, max_rows=6_000, runner=runner)
    finally:
        pool.close()
    # one warm-up run plus three timed ones per calibration run (and the engine warm-up)
    assert len(calls) >= 4 * len(runs) and set(calls) == {1}
    assert all(r["ser_s"] == 0.0 and r["exec_s"] > 0 and r["bytes"] > 0 for r in runs)
    assert models.predict_ser(1e6) == pytest.approx(0.0, abs=1e-6)   # serialization is inside execution now
    assert models.predict_exec(runs[0]["ops"]) > 0


def _ops(sql, rows=50_000):
    t = uniform(rows, seed=3)
    st = TableStats.build([t], nbytes=1_234_567)
    return estimate(qplan.to_substrait(sql, {"particles": PARTICLE_SCHEMA}), {"particles": st})


def test_op_vector_separates_cheap_and_costly_functions_and_top_k():
    e = _ops("select count(*) from particles where exp(x) > 1.5 and ln(y + 1) < 0.3")
    assert e.ops["math"] > 0 and e.ops["power"] == 0
    e = _ops("select count(*) from particles where power(vx, 2) > 100")
    assert e.ops["power"] > 0 and e.ops["math"] == 0
    e = _ops("select count(*) from particles where x / 7 > 0.01")
    assert e.ops["div"] > 0 and e.ops["arith"] == 0
    # a uint64 with an integer literal runs in Decimal128(20, 0) in DataFusion (the plan's
    # output type says so): decimal arithmetic, counted apart from float and integer ops
    e = _ops("select count(*) from particles where particle_id % 7 = 3")
    assert e.ops["arith_dec"] == e.ops["rows"] and e.ops["div"] == 0 and e.ops["arith"] == 0
    e = _ops("select count(*) from particles where (particle_id & 7) = 3")
    assert e.ops["arith"] > 0 and e.ops["div"] == 0
    top = _ops("select id from particles order by x limit 10")
    full = _ops("select id from particles order by x")
    assert top.ops["topk"] > 0 and top.ops["sort"] == 0
    assert full.ops["sort"] > 0 and full.ops["topk"] == 0
    assert top.ops["topk"] < full.ops["sort"]           # heap entries < n log n
    # k's worth of work for every 8192-row batch reaching the heap, so a 1000-row heap costs
    # 100x a 10-row one over the same input (DataFusion over 1M rows: 23 against 0.2 ms more
    # than a top-1), not log2 1002 / log2 12 = 2.8x, and the same heap over 20x the rows 20x
    n = top.ops["rows"]
    assert top.ops["topk"] == pytest.approx(10 * n / 8192)
    big = _ops("select id from particles order by x limit 1000")
    assert big.ops["topk"] / top.ops["topk"] == pytest.approx(100)
    assert top.ops["topk"] > 0 and _ops("select id from particles order by x limit 1").ops["topk"] > 0
    all_rows, few_rows = (_ops(f"select id from particles where x < {p} order by vx limit 1000", rows=1_000_000)
                          for p in (2, 0.05))
    assert all_rows.ops["topk"] / few_rows.ops["topk"] == pytest.approx(20, rel=0.15)
    # every row reaching the top-k has its keys encoded and compared: rows in (`topk_in`),
    # whatever k is, and more rows kept by the filter below it mean more of that work; a
    # second key is counted apart (`topk_keys`): DataFusion compares it only at ties
    assert top.ops["topk_in"] == pytest.approx(n) == big.ops["topk_in"] and full.ops["topk_in"] == 0
    two = _ops("select id from particles order by x desc, id limit 10")
    assert two.ops["topk_in"] == pytest.approx(n) and two.ops["topk_keys"] == pytest.approx(n)
    assert top.ops["topk_keys"] == 0
    few, most = (_ops(f"select * from particles where x < {p} order by vx limit 500") for p in (0.1, 0.99))
    assert most.ops["topk_in"] / few.ops["topk_in"] == pytest.approx(9.9, rel=0.1)


def test_case_counts_the_rows_each_branch_sees_off_the_literal_fast_path():
    """DataFusion evaluates a general CASE's WHENs one after another on the rows no earlier
    WHEN took (1M rows: 17, 24, 30 ms for one to three WHENs each taking half the rows); one
    WHEN between two literals is its fast path (~3 ns a row), counted as any function."""
    one = _ops("select sum(case when vx > 0 then vy else vz end) from particles")
    three = _ops("select sum(case when vx > 0 then 1 when vy > 0 then 2 when vz > 0 then 3 else 0 end) "
                 "from particles")
    fast = _ops("select sum(case when vx > 0 then 1 else 0 end) from particles")
    n = one.ops["rows"]
    assert one.ops["case"] == pytest.approx(n)
    assert three.ops["case"] == pytest.approx(1.75 * n, rel=0.05)       # n + n/2 + n/4
    assert fast.ops["case"] == 0 and fast.ops["func"] == pytest.approx(n)
    # the later WHENs' conditions run on the rows left too
    assert three.ops["cmp"] == pytest.approx(1.75 * n, rel=0.05)
    rare = _ops("select sum(case when vx > 80 then 1 when vy > 80 then 2 else 0 end) from particles")
    assert rare.ops["case"] == pytest.approx(1.9 * n, rel=0.05)        # n + 0.9 n


def test_op_vector_has_result_bytes_and_stored_bytes():
    e = _ops("select id, x from particles where x < 0.5")
    assert e.ops["out_bytes"] == pytest.approx(e.rows * e.out_width)
    assert e.ops["in_bytes"] == 1_234_567
    assert set(OPS) >= {"out_bytes", "in_bytes", "div", "math", "topk"}


def test_calibration_templates_cover_the_new_operator_families():
    seen = set()
    t = uniform(5_000, seed=1)
    st = {"particles": TableStats.build([t])}
    from colony.cost.calibrate import instantiate
    rng = np.random.Generator(np.random.SFC64(0))
    for tid in TEMPLATES:
        ops = estimate(qplan.to_substrait(instantiate(tid, rng), {"particles": t.schema}), st).ops
        seen |= {k for k, v in ops.items() if v > 0}
    assert {"div", "math", "topk", "topk_seq", "sort", "power", "out_bytes"} <= seen


def test_lineitem_templates_cover_both_string_classes_and_string_aggregates():
    """L14 draws string functions of both classes, L15 aggregates of strings: each feature
    appears in some of their runs and not in all (what lets the fit tell them apart)."""
    from colony.cost.calibrate import instantiate
    from colony.data.tpch import tables
    tt = tables(0.002, seed=2)
    tabs = {n: tt[n] for n in ("lineitem", "orders")}
    st = {n: TableStats.build([v]) for n, v in tabs.items()}
    sch = {n: v.schema for n, v in tabs.items()}
    rng = np.random.Generator(np.random.SFC64(0))
    runs = [estimate(qplan.to_substrait(instantiate(tid, rng), sch), st).ops for tid in ["L14"] * 40 + ["L15"] * 12]
    for f in ("str", "str_fast", "cmp_str", "hash_str"):
        n = sum(o[f] > 0 for o in runs)
        assert 0 < n < len(runs), f


def test_dimension_joins_build_small_tables_that_other_templates_do_not():
    """L16 joins lineitem to a dimension of tens to thousands of rows: some of its runs build
    a table below the first knot (no `join_mid`), some above it, and their probes and outputs
    grow with lineitem (the star-schema lookup the other join templates leave out)."""
    from colony.cost.calibrate import instantiate
    from colony.data.tpch import tables
    tt = tables(0.05, seed=2)
    tabs = {n: tt[n] for n in ("lineitem", "orders", "supplier", "part")}
    st = {n: TableStats.build([v]) for n, v in tabs.items()}
    sch = {n: v.schema for n, v in tabs.items()}
    rng = np.random.Generator(np.random.SFC64(0))
    runs = [estimate(qplan.to_substrait(instantiate("L16", rng), sch), st).ops for _ in range(24)]
    small = [o for o in runs if o["join_mid"] == 0]
    assert small and len(small) < len(runs)
    assert all(min(o["join_build"], o["join_probe"]) < TABLE_MID for o in small)
    assert any(o["join_probe"] > 50 * o["join_build"] and o["join_out"] > 0.3 * o["join_probe"] for o in small)
    assert any(o["join_big"] > 0 for o in runs)                # orders at 75k rows: past the second knot


@pytest.mark.parametrize("learner", [OpsExec, NNLSExec])
def test_linear_learners_ignore_disturbed_runs(learner):
    rng = np.random.default_rng(0)
    runs = []
    for _ in range(120):
        ops = dict.fromkeys(OPS, 0.0)
        rows = rng.uniform(1e4, 1e6)
        ops.update(rows=rows, cmp=rows * rng.integers(1, 4), take=rows * rng.uniform(0, 5))
        t = 5e-4 + 2e-9 * ops["cmp"] + 4e-9 * ops["take"] + 1e-9 * rows
        runs.append((ops, t))
    X = np.stack([_x(o) for o, _ in runs])
    y = np.array([t for _, t in runs]) * rng.uniform(0.98, 1.02, len(runs))
    y[::10] *= 4.0                                        # one run in ten slowed by another job
    T = np.ones(len(y))
    clean = ~np.isin(np.arange(len(y)), np.arange(0, len(y), 10))
    ape_robust = np.median(np.abs(learner.fit(X, T, y).predict(X, T) / y - 1)[clean])
    ape_plain = np.median(np.abs(learner.fit(X, T, y, robust=False).predict(X, T) / y - 1)[clean])
    assert ape_robust < 0.03 and ape_robust <= ape_plain


def test_decimal_arithmetic_is_counted_apart_from_float_arithmetic():
    """DataFusion over 300k TPC-H lineitem rows: sum(price * (1 - disc) * (1 + tax)) took
    13.7 ms in decimals and 2.2 ms in floats, so the op vector tells them apart."""
    from colony.data.tpch import tables
    from colony.query import estimate, to_substrait
    from colony.query.stats import TableStats
    t = tables(0.001)["lineitem"]
    st = {"lineitem": TableStats.build([t])}

    def ops(sql):
        return estimate(to_substrait(sql, {"lineitem": t.schema}), st).ops
    dec = ops("select sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) from lineitem")
    assert dec["arith_dec"] == pytest.approx(4 * t.num_rows) and dec["arith"] == 0
    flt = ops("select sum(l_extendedprice * 0.5) from lineitem")     # a float literal: float arithmetic
    assert flt["arith"] == pytest.approx(t.num_rows) and flt["arith_dec"] == 0


def test_plan_size_is_counted_per_relation_and_calibrated_over_the_range_of_tpch():
    """Planning took ~0.17 ms a relation (DataFusion, one core): TPC-H's smallest queries spent
    most of their 4.5-8 ms on it. The op vector counts relations, a split's two plans count
    theirs (the upper one reads each shipped part), and L12 spans 10-30 of them."""
    from colony.cost.calibrate import instantiate
    from colony.data.tpch import tables
    from colony.query import to_substrait
    t = tables(0.001)
    st = {k: TableStats.build([v]) for k, v in t.items()}
    schemas = {k: v.schema for k, v in t.items()}

    def est(sql):
        return estimate(to_substrait(sql, schemas), st)
    assert est("select l_orderkey from lineitem where l_quantity < 5").ops["plan_rels"] == 3
    joined = est("select o_orderpriority, count(*) from orders join lineitem on o_orderkey = l_orderkey "
                 "where l_quantity < 5 group by o_orderpriority")
    assert joined.ops["plan_rels"] >= 6
    assert joined.splits
    assert joined.split_ops["plan_rels"] + joined.upper_ops["plan_rels"] == \
        joined.ops["plan_rels"] + len(joined.splits)
    rng = np.random.Generator(np.random.SFC64(0))
    sizes = {est(instantiate("L12", rng)).ops["plan_rels"] for _ in range(40)}
    assert min(sizes) <= 12 and max(sizes) >= 28
