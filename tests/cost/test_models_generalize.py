"""Per-operator cost models: thread scaling per operator family, a calibration suite that
spans every family, learner kept by cross-validation."""

import math

import numpy as np
import pytest

from colony.cost.calibrate import LTEMPLATES, TEMPLATES, calibrate
from colony.cost.models import DeviceModels, NNLSExec, OpsExec, fit_exec
from colony.data import PARTICLE_SCHEMA, uniform
from colony.query import estimate, to_substrait
from colony.query.estimate import OPS, TABLE_MID
from colony.query.stats import TableStats


def _runs(n=240, seed=0):
    """Filters scale with threads, sorts do not: one Amdahl fraction cannot fit both."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rows = rng.uniform(2e4, 1e6)
        ops = dict.fromkeys(OPS, 0.0)
        sort = rng.random() < 0.5
        ops.update(rows=rows, filter=rows, cmp=rows * 2, sort=rows * np.log2(rows) if sort else 0.0)
        th = int(rng.integers(1, 5))
        t = 5e-4 + 2e-8 * ops["cmp"] / th + 1e-9 * ops["sort"]
        out.append({"ops": ops, "threads": th, "exec_s": t * rng.uniform(0.995, 1.005)})
    return out


def test_per_operator_thread_scaling_beats_one_amdahl_fraction_and_is_kept():
    model, report = fit_exec(_runs())
    assert report["kept"] == "ops" and isinstance(model, OpsExec)
    assert report["ops"]["ape_median"] < 2 and report["ops"]["ape_median"] < report["nnls"]["ape_median"] / 3
    i_cmp, i_sort = OPS.index("cmp"), OPS.index("sort")
    assert model.parallel[i_cmp] > 5 * model.serial[i_cmp]       # comparisons split across threads
    assert model.serial[i_sort] > 5 * model.parallel[i_sort]     # the sort did not
    again = DeviceModels(device="d", threads=4, exec=model, ser_time=None, ser_bytes=None, deser_s=0.0)
    assert again.predict_exec(_runs(1, 7)[0]["ops"], 4) > 0
    assert OpsExec(**{k: v for k, v in model.to_json().items() if k != "kind"}).predict(
        np.ones((1, len(OPS))), np.array([2.0]))[0] == pytest.approx(model.predict(np.ones((1, len(OPS))),
                                                                                    np.array([2.0]))[0])


def test_group_count_enters_the_op_vector():
    t = uniform(50_000, seed=1, n_particles=50_000)
    st = {"particles": TableStats.build([t])}
    few = estimate(to_substrait("select particle_id & 15 as g, count(*) from particles group by g",
                                {"particles": PARTICLE_SCHEMA}), st)
    many = estimate(to_substrait("select particle_id, count(*) from particles group by particle_id",
                                 {"particles": PARTICLE_SCHEMA}), st)
    assert few.ops["hash_agg"] == many.ops["hash_agg"]
    assert many.ops["groups"] > 1000 * few.ops["groups"] and many.ops["agg_lg"] > 3 * few.ops["agg_lg"]
    # the table's size past the knots: 16 groups stay in cache, ~50k pass the first knot only
    assert few.ops["agg_mid"] == few.ops["agg_big"] == 0
    assert many.ops["agg_mid"] == pytest.approx(50_000 * math.log2(many.ops["groups"] / TABLE_MID), rel=1e-6)
    assert many.ops["agg_big"] == 0


def test_a_join_prices_the_smaller_sides_table_past_the_knots_per_row_of_the_larger():
    """The engine builds on the smaller input whichever side it is written on, so the hinge
    terms are the larger side's rows times the smaller side's log size past each knot."""
    big, small = uniform(200_000, seed=1), uniform(8_192 * 2, seed=2)
    st = {"a": TableStats.build([big]), "b": TableStats.build([small])}
    sch = {"a": PARTICLE_SCHEMA, "b": PARTICLE_SCHEMA}
    one = estimate(to_substrait("select count(*) from a join b on a.id = b.id", sch), st).ops
    other = estimate(to_substrait("select count(*) from b join a on a.id = b.id", sch), st).ops
    for o in (one, other):
        assert o["join_mid"] == pytest.approx(200_000 * 2.0, rel=1e-6)     # 16k rows: two doublings past 4k
        assert o["join_big"] == 0
    tiny = estimate(to_substrait("select count(*) from a join b on a.id = b.id where b.x < 0.01", sch), st).ops
    assert tiny["join_mid"] == tiny["join_big"] == 0 and tiny["join_probe"] > 0


def test_an_aggregate_without_grouping_is_counted_apart_from_hash_aggregates():
    """No grouping: one accumulator per measure, updated a batch at a time (no hashing, no
    group index), so its rows are ``scalar_agg``, not a one-group ``hash_agg``."""
    t = uniform(50_000, seed=1)
    st = {"particles": TableStats.build([t])}
    sch = {"particles": PARTICLE_SCHEMA}
    scalar = estimate(to_substrait("select count(id), min(x), sum(vz) from particles where x < 0.5", sch), st)
    grouped = estimate(to_substrait("select particle_id & 1 as g, count(id), min(x), sum(vz) from particles "
                                    "where x < 0.5 group by g", sch), st)
    assert scalar.ops["hash_agg"] == 0 and scalar.ops["agg_lg"] == 0 and scalar.ops["groups"] == 1
    assert scalar.ops["scalar_agg"] == pytest.approx(3 * grouped.ops["hash_agg"] / 4)   # 3 measures; 1 key + 3
    assert grouped.ops["scalar_agg"] == 0 and grouped.ops["agg_lg"] > 0


def test_calibration_spans_every_operator_family_and_reports_its_choice():
    models, runs = calibrate("dev", 2, n_runs=60, min_rows=5_000, max_rows=30_000, seed=3)
    seen = {k for r in runs for k, v in r["ops"].items() if v > 0}
    families = {"cmp", "logic", "arith", "power", "func", "str", "filter", "take", "scan", "scan_str", "hash_agg",
                "scalar_agg", "agg_lg", "agg_mid", "groups", "sort", "join_build", "join_probe", "join_out",
                "limit", "union"}
    assert families <= seen, families - seen
    # count(distinct) reaches the device as two hash aggregates (DataFusion rewrites it)
    t18 = [r for r in runs if r["template"] == "T18"]
    assert t18 and all(r["ops"]["groups"] > 100 and r["est_rows"] == 1 for r in t18)
    groups = [r["ops"]["groups"] / r["input_rows"] for r in runs if r["ops"]["groups"] > 1]
    assert min(groups) < 0.01 and max(groups) > 0.2          # a few groups up to a large share of the rows
    assert {r["threads"] for r in runs} == {1, 2}
    # every template once (51 of the 60 runs), then the reserve for the features seen least
    n = len(TEMPLATES) + len(LTEMPLATES)
    assert {r["template"] for r in runs[:n]} == set(TEMPLATES) | set(LTEMPLATES)
    topped = models.report["support"]["top_up"]
    assert sum(topped.values()) == 60 - n
    assert sum(1 for r in runs[n:] for f in topped if r["ops"][f] > 0) >= (60 - n) // 2
    assert models.report["kept"] in ("ops", "nnls", "blend", "forest") and "cross-validation" in models.report["selection"]
    assert all(models.report[k]["ape_median"] >= 0 for k in ("ops", "nnls", "blend", "forest"))
    assert isinstance(models.exec_linear, (OpsExec, NNLSExec))
