"""Calibration covers the sizes queries run at: table sizes are stratified over the log
range (independent draws left its top empty, so 1 M-row queries were extrapolated from
at most ~0.3-0.8 M rows), and the cross-validation report scores the largest runs apart."""

import numpy as np

from colony.cost.calibrate import calibration_tables
from colony.cost.models import fit_exec
from colony.query.estimate import OPS


def test_tables_cover_every_stretch_of_the_size_range_up_to_max_rows():
    # the strata are scale-free: a tenth of the benchmark's range (20k-1.2M) tests them in a
    # tenth of the time
    lo, hi = 2_000, 120_000
    for seed in (0, 1, 2):
        rng = np.random.Generator(np.random.SFC64(seed))
        pools = calibration_tables(40, lo, hi, seed, rng)
        sizes = sorted(sum(p.num_rows for p in e[0]["particles"]) for e in pools["particles"])
        assert len(sizes) == 4
        assert lo <= sizes[0] and sizes[-1] <= hi
        # one table per quarter of log(size): the largest is in the top quarter (>= ~44k here)
        edges = np.exp(np.linspace(np.log(lo), np.log(hi), 5))
        assert [int(np.searchsorted(edges, s, side="right")) - 1 for s in sizes] == [0, 1, 2, 3]
        assert sizes[-1] >= edges[3]
        # every table's statistics describe it (row count, objects)
        for parts, stats, packed in pools["particles"]:
            assert stats["particles"].rows == sum(p.num_rows for p in parts["particles"])
            assert stats["particles"].objects == len(packed["particles"]) == len(parts["particles"])


def test_cross_validation_reports_the_largest_runs_apart():
    rng = np.random.default_rng(4)
    runs = []
    for _ in range(120):
        rows = float(np.exp(rng.uniform(np.log(2e4), np.log(1.2e6))))
        ops = dict.fromkeys(OPS, 0.0)
        ops.update(rows=rows, scan=7 * rows, filter=rows, cmp=rows, take=rows * rng.uniform(0, 7))
        t = 1e-3 + 3e-9 * ops["scan"] + 5e-9 * ops["take"] + (1e-8 * rows if rows > 4e5 else 0.0)  # a bend up high
        runs.append({"ops": ops, "threads": 1, "exec_s": t * rng.uniform(0.97, 1.03)})
    _, report = fit_exec(runs)
    rows = np.array([r["ops"]["rows"] for r in runs])
    for name in ("ops", "nnls", "blend", "forest"):
        big = report[name]["large"]
        assert big["runs"] == int((rows >= 0.25 * rows.max()).sum()) > 10
        assert big["min_rows"] == 0.25 * rows.max()
        assert 0 <= big["ape_median"] <= big["ape_p90"]
    assert report["lowest"] == min(("ops", "nnls", "blend", "forest"), key=lambda k: report[k]["ape_median"])
    kept = report["kept"]
    assert report[kept]["ape_median"] - report[report["lowest"]]["ape_median"] <= report[kept]["se_vs_best"]


def test_every_template_is_timed_over_the_whole_size_range():
    from colony.cost.calibrate import size_strata
    rng = np.random.Generator(np.random.SFC64(3))
    pick = size_strata(24, 7, rng)
    starts = [s[0] for s in np.array_split(np.arange(24), 7)]

    def strata_of(tables):
        return sorted(int(np.searchsorted(starts, i, side="right")) - 1 for i in tables)
    for tid in ("T17", "T5", "L1"):
        # one table from each size stratum, the largest included
        assert strata_of([pick(tid) for _ in range(7)]) == list(range(7))
        # the next pass covers them all again
        assert strata_of([pick(tid) for _ in range(7)]) == list(range(7))
    # fewer tables than runs per template (TPC-H's three scales): each table in turn
    few = size_strata(3, 7, rng)
    assert sorted(few("L4") for _ in range(3)) == [0, 1, 2]
