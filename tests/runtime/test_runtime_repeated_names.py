"""A result whose output names repeat (`select a.id, b.id ... join`) on the session's Ray
colony: Ray's Arrow serializer looked the columns up by name and failed the host's answer
(push-back and split), and DataFusion's consumer refused the split's host part. Every
placement answers, under the query's own names."""

from __future__ import annotations

import pytest

from colony.data import uniform
from colony.drivers.query import QueryClient
from colony.query import plan as qplan
from colony.query.plan import TableSpec

pytestmark = pytest.mark.ray


def test_repeated_output_names_answer_under_every_placement(ray_colony):
    c = ray_colony
    c.place("query", ["nic0", "host0"])
    t = uniform(20_000, seed=6)
    key = next(k for k in (f"dup/{i}" for i in range(64)) if c.owner("default", k) == "nic0")
    c.put("default", key, t)
    try:
        client = QueryClient(c, "host0", tables={"particles": TableSpec("particles", "default", key)},
                             devices=["nic0"])
        sql = "select a.id, b.id from particles a join particles b on a.id = b.id + 1 where a.id < 300"
        want = sorted(zip(*[col.to_pylist() for col in qplan.run_sql_locally(sql, {"particles": [t]}).columns]))
        assert want
        for placement in ("down", "back", "split"):
            r = client.query(sql, placement)
            assert r.placement == placement
            assert r.table.column_names == ["id", "id"], placement
            assert sorted(zip(*[col.to_pylist() for col in r.table.columns])) == want, placement
    finally:
        c.drop("default", key)
