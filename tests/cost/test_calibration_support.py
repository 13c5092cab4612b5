"""The calibration's reserve: its last runs go to the features positive in too few runs."""

import numpy as np

from colony.cost.calibrate import MIN_SUPPORT, support, thin_feature
from colony.cost.models import family
from colony.query.estimate import OPS

BASE = {f: 0.0 for f in OPS} | {"rows": 1e5, "scan": 1e5, "filter": 1e5}
POOLS = {"particles": list(range(10)), "tpch": list(range(3))}


def _run(template, **ops):
    return {"template": template, "ops": BASE | ops}


def _full(**extra):
    """Runs in which every feature but the named ones has MIN_SUPPORT runs."""
    runs = [_run("T0", **{f: 1.0 for f in OPS if f not in extra}) for _ in range(MIN_SUPPORT)]
    return runs, [0] * len(runs)


def test_the_least_seen_feature_reruns_a_template_that_produced_it_on_a_table_as_large():
    runs, tables = _full(tdigest=0, tdigest_calls=0, join_big=0)
    runs += [_run("T34", tdigest=1.0, tdigest_calls=1.0), _run("T34", tdigest=1.0, tdigest_calls=1.0),
             _run("L4", join_big=5.0)]
    tables += [2, 5, 1]
    rng = np.random.default_rng(0)
    picks = [thin_feature(runs, tables, POOLS, {}, rng) for _ in range(40)]
    # join_big (one run) before tdigest (two), always on the template and pool that produced it,
    # and never on a smaller table than that run's
    assert {p[:2] for p in picks} == {("join_big", "L4")}
    assert {p[2] for p in picks} == {1, 2}


def test_a_feature_no_run_produced_takes_the_run_with_most_of_its_operators_terms_on_a_large_table():
    agg = family("agg_big")
    assert "agg_big" in agg and "agg_mid" in agg
    runs, tables = _full(**{f: 0 for f in agg})
    for _ in range(MIN_SUPPORT):         # a group-by of few groups, and one past TABLE_MID
        runs += [_run("T11", hash_agg=1.0, groups=9.0),
                 _run("T17", **{f: 1e5 for f in agg if f != "agg_big"})]
        tables += [9, 0]
    rng = np.random.default_rng(1)
    picks = [thin_feature(runs, tables, POOLS, {}, rng) for _ in range(30)]
    assert {p[:2] for p in picks} == {("agg_big", "T17")}
    assert min(p[2] for p in picks) >= len(POOLS["particles"]) // 2


def test_tries_are_bounded_and_nothing_is_picked_when_every_feature_has_its_support():
    runs, tables = _full(agg_big=0, distinct=0)
    runs.append(_run("T17", hash_agg=1.0, agg_mid=1.0))
    tables.append(3)
    tried: dict = {}
    rng = np.random.default_rng(2)
    picks = [thin_feature(runs, tables, POOLS, tried, rng) for _ in range(MIN_SUPPORT + 2)]
    # no run produced agg_big: MIN_SUPPORT guesses, then none (distinct has no template at all)
    assert [p and p[0] for p in picks] == ["agg_big"] * MIN_SUPPORT + [None, None]
    full, ft = _full()
    assert thin_feature(full, ft, POOLS, {}, rng) is None
    assert min(support(full).values()) == MIN_SUPPORT


def test_a_reserve_run_draws_constants_until_the_estimate_has_the_feature():
    """T17 groups by particle id under ``x < p``: on a 300k-row table (189k ids) it passes
    TABLE_BIG groups (`agg_big`) only for p above ~0.35, so a fresh draw often misses; the aimed draw
    gives a query whose estimated op vector, the one its run records, has the feature."""
    from colony.cost.calibrate import aimed, instantiate
    from colony.data import uniform
    from colony.query import plan as qplan
    from colony.query.estimate import estimate
    from colony.query.stats import TableStats
    t = uniform(300_000, seed=5)
    parts, st = [t], TableStats.build([t])

    def has(sql):
        return estimate(qplan.to_substrait(sql, {"particles": t.schema}), {"particles": st}).ops["agg_big"] > 0
    rng = np.random.default_rng(3)
    fresh = [has(instantiate("T17", rng)) for _ in range(12)]
    assert 0 < sum(fresh) < 12                       # a fresh draw may or may not reach it
    aim = [has(aimed("T17", "agg_big", parts, st, rng)) for _ in range(6)]
    assert all(aim)
    # a feature the template cannot produce: the last draw, after the bounded tries
    assert aimed("T1", "agg_big", parts, st, rng, draws=3).startswith("select * from particles")
