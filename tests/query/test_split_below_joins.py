"""Split placement below joins: the device runs each table's filter/projection subtree,
the host runs the joins over the shipped results; answers equal local SQL."""

from importlib import resources

import pytest

from colony.data.tpch import tables as tpch_tables
from colony.query import plan as qplan
from colony.drivers.query import QueryClient, calibrate_colony
from colony.query.estimate import estimate, plan_json, split_points
from colony.query.plan import TableSpec
from colony.query.stats import TableStats
from colony.drivers.workload import read_queries
from colony.config.builders import devices as devices_config
from colony.runtime.local import LocalColony

TPCH_SQL = resources.files("colony.bench") / "queries" / "tpch" / "queries.sql"

QUERIES = read_queries(str(TPCH_SQL))


@pytest.fixture(scope="module")
def tpch_colony():
    t = tpch_tables(0.005, seed=2)
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": list(t)}}))
    for name, tab in t.items():
        lc.store("nic0").put(name, "obj0", tab)
    lc.set_link("nic0", 4.0)
    link = lc
    calibrate_colony(link, "host", n_runs=16, max_rows=40_000)
    client = QueryClient(link, "host", {n: TableSpec(n, n, "*") for n in t})
    return client, t


def test_split_points_cut_every_table_below_the_joins():
    t = tpch_tables(0.002, seed=2)
    schemas = {k: v.schema for k, v in t.items()}
    pj = plan_json(qplan.to_substrait(QUERIES[2], schemas))          # q3: customer x orders x lineitem
    cuts = split_points(pj["relations"][0]["root"]["input"])
    assert len(cuts) == 3 and all("join" in path for path, _ in cuts)
    st = {k: TableStats.build([v]) for k, v in t.items()}
    e = estimate(qplan.to_substrait(QUERIES[2], schemas), st)
    assert len(e.splits) == 3 and e.split_rows == pytest.approx(sum(s["rows"] for s in e.splits))
    assert e.split_rows < e.input_rows / 2                  # filters and column pruning run on the device
    # a read inside a subquery expression cannot be cut out: no split
    pj = plan_json(qplan.to_substrait(QUERIES[21], schemas))
    assert split_points(pj["relations"][0]["root"]["input"]) is None


@pytest.mark.parametrize("qi", [2, 4, 9, 11, 13, 18])      # q3 q5 q10 q12 q14 q19
def test_split_join_answers_equal_local_sql(tpch_colony, qi):
    client, t = tpch_colony
    sql = QUERIES[qi]
    want = qplan.run_sql_locally(sql, {k: [v] for k, v in t.items()})
    for placement in ("split", "down", "back", "auto"):
        r = client.query(sql, placement)
        if placement == "split":
            assert r.placement == "split"
        assert r.table.num_rows == want.num_rows
        got = sorted(map(str, r.table.to_pylist()))
        assert got == sorted(map(str, want.rename_columns(r.table.column_names).to_pylist())), placement


def test_a_self_join_whose_output_repeats_a_name_runs_under_every_placement(tpch_colony):
    """`select o1.o_orderkey, o2.o_orderkey ... join`: the split's host part reads two partial
    results and its output names repeat; DataFusion's consumer refused it ("duplicate
    unqualified field name"). It runs with unique names and answers under the original ones."""
    client, t = tpch_colony
    sql = ("select o1.o_orderkey, o2.o_orderkey from orders o1 join orders o2 "
           "on o1.o_orderkey = o2.o_orderkey + 1 where o1.o_orderkey < 200")
    want = qplan.run_sql_locally(sql, {"orders": [t["orders"]]})
    for placement in ("split", "down", "back"):
        r = client.query(sql, placement)
        assert r.placement == placement
        assert r.table.column_names == ["o_orderkey", "o_orderkey"]
        assert sorted(map(tuple, zip(*[c.to_pylist() for c in r.table.columns]))) == \
            sorted(map(tuple, zip(*[c.to_pylist() for c in want.columns])))
