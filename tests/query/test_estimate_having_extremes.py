"""A HAVING on a group's max or min keeps the groups whose extreme passes: read as the
column's own max for every group, `having max(budget) > 1e8` kept 113 groups of 113 where
10 pass (run 130, R's movies). A group's max of m values sits at level u^(1/m)."""

import datafusion
import numpy as np
import pyarrow as pa
import pytest

from colony.query.estimate import estimate, plan_json
from colony.query.plan import to_substrait
from colony.query.stats import TableStats


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    return pa.table({"g": np.repeat(np.arange(200), 50), "v": rng.random(10_000)})


def _both(t, sql):
    est = estimate(plan_json(to_substrait(sql, {"t": t.schema})), {"t": TableStats.build([t], nbytes=t.nbytes)})
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [t.to_batches()])
    return est.rows, ctx.sql(sql).to_arrow_table().num_rows


@pytest.mark.parametrize("sql", ["select g, max(v) from t group by g having max(v) > 0.99",
                                 "select g from t group by g having min(v) < 0.005",
                                 "select g, max(v) from t group by g having max(v) < 0.95"])
def test_groups_whose_extreme_passes(table, sql):
    est, true = _both(table, sql)
    assert 0 < true < 200
    assert true / 1.5 <= est <= true * 1.5, (est, true)


def test_the_stats_quantile_inverts_the_cdf_and_reads_the_kept_extremes(table):
    cs = TableStats.build([table], nbytes=table.nbytes).columns["v"]
    v = np.sort(table.column("v").to_numpy())
    q = cs.quantile(np.array([0.0, 0.5, 0.9999, 1.0]))
    assert q[0] == v[0] and q[-1] == v[-1] and q[2] == v[9999]    # the extremes exactly
    assert abs(q[1] - v[5000]) < 0.02
