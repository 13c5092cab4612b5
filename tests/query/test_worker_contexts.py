"""A query worker keeps one DataFusion context per thread budget and a file per table's
objects, and registers a table there the first time a plan names it (again when its
objects change): a split's cuts each read one of the query's tables,
and importing a TPC-H lineitem object cost ~2.7 ms per run when every table was registered
for every plan. The answers must be the ones a fresh context gives, whatever order the
plans come in and whichever tables share a name prefix (``part`` / ``partsupp``)."""

import pyarrow as pa
import pytest

from colony import codec
from colony.data import tpch
from colony.query import plan as qplan
from colony.query.worker import WorkerPool

SQL = [
    "select n_name from nation where n_regionkey = 1 order by n_name",
    "select count(*) as n, sum(ps_availqty) as q from partsupp where ps_supplycost < 500",
    "select p_brand, count(*) as n from part, partsupp where p_partkey = ps_partkey and p_size < 10 "
    "group by p_brand order by p_brand",
    "select r_name, count(*) as n from nation, region where n_regionkey = r_regionkey group by r_name order by r_name",
    "select n_name from nation where n_regionkey = 1 order by n_name",
]


@pytest.fixture(scope="module")
def data():
    tt = tpch.tables(0.002, seed=5)
    objs = {k: [codec.pack([t.slice(0, t.num_rows // 2)]), codec.pack([t.slice(t.num_rows // 2)])]
            for k, t in tt.items()}
    return tt, objs


def _expected(sql: str, tt: dict) -> pa.Table:
    return qplan.run_sql_locally(sql, {k: [v] for k, v in tt.items()})


@pytest.mark.parametrize("order", [range(len(SQL)), reversed(range(len(SQL)))], ids=["forward", "reverse"])
def test_plans_over_one_cached_file_answer_as_a_fresh_context(data, order):
    tt, objs = data
    schemas = {k: v.schema for k, v in tt.items()}
    pool = WorkerPool(keep=1, prestart=False)
    try:
        for i in order:
            got = codec.unpack_one(pool.run(qplan.to_substrait(SQL[i], schemas), objs, threads=1,
                                            memory_limit=None, max_result_bytes=None, timeout_s=60,
                                            cache=True), verify=False)
            assert got.equals(_expected(SQL[i], tt).cast(got.schema)), SQL[i]
    finally:
        pool.close()


def test_an_uncached_file_still_answers(data):
    tt, objs = data
    pool = WorkerPool(keep=1, prestart=False)
    try:
        plan = qplan.to_substrait(SQL[2], {k: v.schema for k, v in tt.items()})
        for _ in range(2):
            got = codec.unpack_one(pool.run(plan, objs, threads=1, memory_limit=None, max_result_bytes=None,
                                            timeout_s=60, cache=False), verify=False)
            assert got.equals(_expected(SQL[2], tt).cast(got.schema))
    finally:
        pool.close()


def _run(pool, sql, objs, schemas, cache=True):
    return codec.unpack_one(pool.run(qplan.to_substrait(sql, schemas), objs, threads=1, memory_limit=None,
                                     max_result_bytes=None, timeout_s=60, cache=cache), verify=False)


def test_a_table_file_is_shared_by_queries_over_other_table_sets(data):
    """nation's objects are copied once, whichever other tables a query reads with it."""
    tt, objs = data
    schemas = {k: v.schema for k, v in tt.items()}
    pool = WorkerPool(keep=1, prestart=False)
    try:
        _run(pool, SQL[0], {"nation": objs["nation"]}, schemas)
        got = _run(pool, SQL[3], {"nation": objs["nation"], "region": objs["region"]}, schemas)
        assert got.equals(_expected(SQL[3], tt).cast(got.schema))
        assert len(pool._files) == 2                       # nation and region, one file each
    finally:
        pool.close()


def test_a_table_whose_objects_change_is_registered_again(data):
    """The same name with other objects (a reload) answers from the new ones, cached or not."""
    tt, objs = data
    schemas = {k: v.schema for k, v in tt.items()}
    small = tt["nation"].slice(0, 7)
    sql = "select count(*) as n from nation"
    pool = WorkerPool(keep=1, prestart=False)
    try:
        assert _run(pool, sql, {"nation": objs["nation"]}, schemas)["n"][0].as_py() == tt["nation"].num_rows
        assert _run(pool, sql, {"nation": [codec.pack([small])]}, schemas)["n"][0].as_py() == 7
        assert _run(pool, sql, {"nation": objs["nation"]}, schemas, cache=False)["n"][0].as_py() == 25
        assert _run(pool, sql, {"nation": [codec.pack([small])]}, schemas)["n"][0].as_py() == 7
    finally:
        pool.close()


def test_a_cache_smaller_than_a_query_s_tables_still_answers(data):
    """Files beyond the cache are evicted least recently used, never those of the run at hand."""
    tt, objs = data
    schemas = {k: v.schema for k, v in tt.items()}
    part = sum(b.size for b in objs["part"]) + sum(b.size for b in objs["partsupp"])
    pool = WorkerPool(keep=1, prestart=False, cache_bytes=part * 3 // 4)
    try:
        for i in (2, 1, 2, 3, 2):
            got = _run(pool, SQL[i], objs, schemas)
            assert got.equals(_expected(SQL[i], tt).cast(got.schema)), SQL[i]
        assert sum(v[3] for v in pool._files.values()) <= part * 3 // 4
    finally:
        pool.close()
