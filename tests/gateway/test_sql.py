"""Statement text handling in the gateway: the colony's own statements, parameters bound
as literals (quotes cannot break out), placeholders outside quotes/comments only."""

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from colony.errors import SqlError
from colony.gateway import sql as g
from colony.query import plan as qplan


def test_set_and_explain_prefixes():
    assert g.parse("SET colony.placement = 'down'") == g.Statement("", "down", False)
    assert g.parse("set colony.placement to back;  EXPLAIN select 1;") == g.Statement("select 1", "back", True)
    assert g.parse("  select 2 ;") == g.Statement("select 2", None, False)
    assert g.parse("explain analyze select 1").explain is False          # DataFusion's, refused later
    with pytest.raises(SqlError, match="one of"):
        g.parse("SET colony.placement = 'sideways'")
    with pytest.raises(SqlError, match="only setting"):
        g.parse("SET datafusion.execution.batch_size = 1")


def test_placeholders_skip_quotes_and_comments():
    q = "select '?', \"a?\" from t where x < ? -- ?\n and y = $2 /* ? */ and s = 'it''s ?'"
    assert [(q[a:b], i) for a, b, i in g.placeholders(q)] == [("?", None), ("$2", 1)]


def test_bound_literals_are_data_not_sql():
    t = pa.table({"s": ["a", "x' or '1'='1", "it's"], "n": [1, 2, 3]})
    sql = "select n from t where s = ?"
    for value, want in (("x' or '1'='1", [2]), ("it's", [3]), ("nothing", [])):
        got = qplan.run_sql_locally(g.bind(sql, [value]), {"t": [t]})
        assert got["n"].to_pylist() == want
    assert g.bind("select ?, ?, ?, ?, ?, ?, ?", [None, True, 3, 0.5, decimal.Decimal("1.25"),
                                                dt.date(2024, 1, 2), b"\x01"]) == \
        ("select NULL, TRUE, 3, CAST(0.5 AS DOUBLE), CAST('1.25' AS DECIMAL(38, 2)), CAST('2024-01-02' AS DATE), "
         "X'01'")
    with pytest.raises(SqlError, match="2 parameter"):
        g.bind("select ? + ?", [1])


def test_parameter_schema_types_from_compared_columns():
    s = {"t": pa.schema([("x", pa.float64()), ("name", pa.utf8())])}
    ps = g.parameter_schema("select * from t where x < ? and name = ? and ? > 1", s)
    assert ps.types == [pa.float64(), pa.utf8(), pa.null()]


def test_only_queries_pass_the_check():
    s = {"t": pa.schema([("x", pa.float64())])}
    assert g.check_query("select x * 2 as y from t", s).names == ["y"]
    for bad in ("create table u as select 1", "insert into t values (1.0)", "copy t to '/tmp/x.csv'",
                "drop table t", "set datafusion.execution.batch_size = 1"):
        with pytest.raises(SqlError, match="queries only"):
            g.check_query(bad, s)


def test_qualified_names_become_bare():
    tabs = {("default", "trades"), ("data", "Parts")}
    assert g.unqualify('SELECT * FROM "default"."default".trades t WHERE t.x < 1', tabs, "default") == \
        "SELECT * FROM trades t WHERE t.x < 1"
    assert g.unqualify("select a.x from default.trades a where 'default.trades' = a.s", tabs, "default") == \
        "select a.x from trades a where 'default.trades' = a.s"
    assert g.unqualify('select * from data."Parts", other.trades', tabs, "default") == \
        'select * from "Parts", other.trades'
