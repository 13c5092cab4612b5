"""A grouping keeps NULL as a group of its own: a single nullable key over one table has its
values plus NULL (unless a predicate on it dropped NULLs, or kept only them). Left out,
`group by ok` over a nullable boolean counted 2 groups for 3."""

import numpy as np
import pyarrow as pa
import pytest

from colony.query import estimate, to_substrait
from colony.query import plan as qplan
from colony.query.stats import TableStats

N = 20_000


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(3)
    t = pa.table({"ok": pa.array(rng.random(N) < 0.9, mask=rng.random(N) < 0.02),
                  "tag": pa.array(rng.choice(["a", "b", "c", "d"], N), mask=rng.random(N) < 0.3),
                  "v": rng.normal(0, 1, N)})
    return t, {"t": TableStats.build([t])}


@pytest.mark.parametrize("sql", [
    "select ok, count(*) from t group by ok",
    "select distinct tag from t",
    "select tag, count(*) from t where v > 1.5 group by tag",
    "select tag, count(*) from t where tag <> 'a' group by tag",
    "select tag, count(*) from t where tag is null group by tag",
])
def test_a_nullable_key_groups_its_nulls(table, sql):
    t, st = table
    e = estimate(to_substrait(sql, {"t": t.schema}), st)
    actual = qplan.run_sql_locally(sql, {"t": [t]}).num_rows
    assert e.supported and e.rows == pytest.approx(actual, abs=0.05), (e.rows, actual)
