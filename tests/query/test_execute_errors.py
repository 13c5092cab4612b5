"""An execution error whose cause is the query says what to write instead: the probes'
`length(payload)` over a binary column failed on every placement with DataFusion's bare
"Encountered non UTF-8 data"."""

import pyarrow as pa
import pytest

from colony.errors import QueryError
from colony.query import plan as qplan


def _run(sql: str) -> pa.Table:
    t = pa.table({"payload": pa.array([b"\xff\x00ab", b"abc", None], pa.binary())})
    ctx = qplan.execution_context(1)
    qplan.register(ctx, "e", [[t]], t.schema)
    return qplan.execute(ctx, qplan.to_substrait(sql, {"e": t.schema}))


def test_a_string_function_over_binary_bytes_names_the_way_out():
    with pytest.raises(QueryError, match=r"non UTF-8 data.*binary column.*encode\(column, 'hex'\)"):
        _run("select length(payload) from e")


def test_the_hinted_query_runs():
    assert _run("select encode(payload, 'hex') as h from e").column("h").to_pylist() == ["ff006162", "616263", None]
