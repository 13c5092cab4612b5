"""The kept learner: cross-validation folds hold out whole query templates, and the most
structured learner within one standard error of the lowest median error is kept, so a
sub-point difference does not flip the choice between two calibrations of one device."""

import numpy as np

from colony.cost.models import _folds, _one_se, fit_exec, log_err
from colony.query.estimate import OPS


def _runs(n=200, seed=0, templates=10):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        rows = float(rng.uniform(2e4, 1e6))
        ops = dict.fromkeys(OPS, 0.0)
        ops.update(rows=rows, scan=3 * rows, filter=rows, cmp=rows * (1 + i % 3))
        th = int(rng.integers(1, 3))
        t = 1e-3 + 4e-9 * ops["scan"] + 2e-8 * ops["cmp"] / th
        out.append({"ops": ops, "threads": th, "exec_s": t * rng.uniform(0.9, 1.1), "template": f"T{i % templates}"})
    return out


def test_folds_hold_out_whole_templates_when_there_are_enough():
    rng = np.random.Generator(np.random.SFC64(0))
    runs = _runs()
    fold, how = _folds(runs, 5, rng)
    assert "by query template" in how and set(fold) == set(range(5))
    for t in {r["template"] for r in runs}:       # a template's runs never straddle folds
        assert len({int(f) for f, r in zip(fold, runs) if r["template"] == t}) == 1
    few = [dict(r, template=f"T{i % 4}") for i, r in enumerate(runs)]     # 4 templates: too few to hold out
    fold, how = _folds(few, 5, rng)
    assert "by query template" not in how and len(set(fold)) == 5
    bare = [{k: v for k, v in r.items() if k != "template"} for r in runs]
    assert "by query template" not in _folds(bare, 5, rng)[1]


def test_one_standard_error_rule_prefers_the_structured_learner_on_a_tie_only():
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 30, 240)
    tie = {"ops": base + rng.normal(0.8, 3, 240), "nnls": base, "forest": base + 5}
    kept, se = _one_se(tie, np.random.default_rng(2))
    assert kept == "ops" and se["ops"] > 0
    clear = {"ops": base + 8, "nnls": base, "forest": base + 5}
    assert _one_se(clear, np.random.default_rng(2))[0] == "nnls"


def test_fit_exec_reports_the_rule_and_the_lowest_learner():
    model, report = fit_exec(_runs())
    assert "by query template" in report["selection"] and "one standard error" in report["selection"]
    assert report["lowest"] in ("ops", "nnls", "blend", "forest")
    for name in ("ops", "nnls", "blend", "forest"):
        assert report[name]["se_vs_best"] >= 0 and report[name]["log_err_mean"] >= 0
    assert report["kept"] == "ops"          # the data is exactly the per-operator shape


def test_the_log_error_reported_beside_the_median_is_symmetric():
    y = np.array([1e-3, 1e-2, 1e-1])
    assert np.allclose(log_err(2 * y, y), log_err(y / 2, y)) and np.allclose(log_err(2 * y, y), np.log(2))
    assert np.all(log_err(y, y) == 0)
