"""Cost models fit what calibration measured: the linear learners recover a known cost,
the forest's JSON form predicts like scikit-learn, the blend is its parts' geometric mean,
models survive a JSON round trip."""

import json

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor

from colony.cost.models import (BlendExec, DeviceModels, ForestExec, LinearModel, NNLSExec, OpsExec, _folds, ape,
                                cross_validated, exec_from_json, fit_exec)
from colony.errors import InvalidArgument
from colony.query.estimate import OPS


def _runs(n=200, seed=0):
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(n):
        rows = rng.uniform(1e4, 1e6)
        ops = {k: 0.0 for k in OPS}
        ops.update(rows=rows, cmp=rows * rng.integers(1, 4), filter=rows, take=rows * rng.uniform(0, 9),
                   power=rows * rng.integers(0, 3))
        th = int(rng.integers(1, 5))
        t = 1e-3 + (2e-9 * ops["cmp"] + 5e-9 * ops["take"] + 2e-8 * ops["power"] + 1e-9 * rows) * (0.2 + 0.8 / th)
        runs.append({"ops": ops, "threads": th, "exec_s": t * rng.uniform(0.97, 1.03)})
    return runs


def test_linear_learners_recover_a_linear_amdahl_cost_and_cross_validation_keeps_one():
    model, report = fit_exec(_runs())
    assert report["nnls"]["ape_median"] < 5 and report["ops"]["ape_median"] < 5
    assert report["kept"] in ("ops", "nnls") and "cross-validation" in report["selection"]
    runs = _runs()
    X = np.stack([[r["ops"][k] for k in OPS] for r in runs])
    T = np.array([r["threads"] for r in runs], float)
    y = np.array([r["exec_s"] for r in runs])
    assert NNLSExec.fit(X, T, y).serial == pytest.approx(0.2, abs=0.11)


def test_forest_json_predicts_like_sklearn():
    runs = _runs(120, 1)
    X = np.stack([[r["ops"][k] for k in OPS] for r in runs])
    T = np.array([r["threads"] for r in runs])
    y = np.array([r["exec_s"] for r in runs])
    f = ForestExec.fit(X, T, y, seed=0)
    rf = RandomForestRegressor(n_estimators=ForestExec.N_TREES, max_depth=10, min_samples_leaf=2, random_state=0, n_jobs=1)
    rf.fit(ForestExec._feat(X, T), np.log(y))
    want = np.exp(rf.predict(ForestExec._feat(X, T)))
    assert np.allclose(f.predict(X, T), want, rtol=1e-9)
    g = ForestExec(trees=f.trees)             # from its JSON form, one op vector at a time (a decision)
    assert np.allclose([g.predict(X[i], T[i])[0] for i in range(len(X))], want, rtol=1e-9)
    # the plain-Python walk a decision takes: the same leaves, including a value on a threshold
    assert np.allclose([g.predict_one(tuple(X[i]), T[i]) for i in range(len(X))], want, rtol=1e-9)
    node = next(i for i, f in enumerate(f.trees[0]["feature"]) if f >= 0 and f < X.shape[1])
    x = X[0].copy()
    x[f.trees[0]["feature"][node]] = np.expm1(f.trees[0]["threshold"][node])
    assert g.predict_one(tuple(x), T[0]) == pytest.approx(float(g.predict(x, T[0])[0]), rel=1e-12)


def test_the_c_forest_walk_gives_the_python_walks_float():
    """``_forest.c`` walks a decision's vector (estimation overhead); it must land on the same
    leaves and return the same float as the Python walk it replaces, ties and NaN included."""
    import pickle
    _forest = pytest.importorskip("colony.cost._forest", reason="the C forest walk was not built")
    runs = _runs(160, 2)
    X = np.stack([[r["ops"][k] for k in OPS] for r in runs])
    T = np.array([r["threads"] for r in runs])
    y = np.array([r["exec_s"] for r in runs])
    f = ForestExec.fit(X, T, y, seed=3)
    rng = np.random.default_rng(5)
    probes = [tuple(v) for v in X] + [tuple(v) for v in rng.uniform(0, 2e6, (200, len(OPS)))]
    tied = X[0].copy()
    node = next(i for i, ft in enumerate(f.trees[0]["feature"]) if 0 <= ft < X.shape[1])
    tied[f.trees[0]["feature"][node]] = np.expm1(f.trees[0]["threshold"][node])      # on a threshold
    probes += [tuple(tied), tuple(np.full(len(OPS), np.nan))]
    for i, x in enumerate(probes):
        for t in (1.0, 3.0):
            assert f.predict_one(x, t) == f._walk_python(x, t)        # the same float, not approximately
            assert f.predict_one(x, t) == pytest.approx(float(f.predict(np.asarray(x), t)[0]), rel=1e-12, nan_ok=True)
    g = pickle.loads(pickle.dumps(f))                                   # Ray ships models pickled
    assert g.predict_one(probes[0], 2.0) == f.predict_one(probes[0], 2.0)
    child, feat, thr, val, roots = f._lists
    with pytest.raises(ValueError):
        _forest.Forest(child[:-1], feat, thr, val, roots)               # a table of mismatched lengths
    with pytest.raises(ValueError):
        _forest.Forest([len(feat)] * len(child), feat, thr, val, roots)    # a child out of range
    loop = _forest.Forest([0] * len(child), [0] * len(feat), thr, val, roots)   # a tree that never ends
    with pytest.raises(ValueError, match="does not end"):
        loop.predict_one(probes[0], 1.0)
    with pytest.raises(ValueError):
        f.predict_one((1.0,), 1.0)                                      # fewer features than the trees read
    bare = _forest.Forest.__new__(_forest.Forest)                       # never given a table
    with pytest.raises(ValueError, match="no node table"):
        bare.predict_one(probes[0], 1.0)
    good = _forest.Forest(*f._lists)
    with pytest.raises(ValueError):
        good.__init__([len(feat)] * len(child), feat, thr, val, roots)  # a re-init failing mid-table
    with pytest.raises(ValueError, match="no node table"):
        good.predict_one(probes[0], 1.0)


def test_linear_model_and_json_roundtrip(tmp_path):
    lm = LinearModel.fit([1e3, 1e6, 1e7, 5e7], [1e-4 + 1e-9 * v for v in [1e3, 1e6, 1e7, 5e7]])
    assert lm.a == pytest.approx(1e-4, rel=1e-3) and lm.b == pytest.approx(1e-9, rel=1e-3)
    coef = [0.0] * len(OPS)
    coef[OPS.index("rows")] = 1e-8
    m = DeviceModels(device="d", threads=1, exec=NNLSExec(coef=coef, intercept=1e-4, serial=0.0),
                     ser_time=LinearModel(1e-5, 1e-9), ser_bytes=LinearModel(500, 1.0), deser_s=1e-5,
                     link=LinearModel(5e-5, 1e-8))
    m.save(tmp_path / "d.json")
    again = DeviceModels.load(tmp_path / "d.json")
    assert again.predict_exec({"rows": 1e6}) == pytest.approx(m.predict_exec({"rows": 1e6}))


def test_each_further_run_of_a_split_pays_the_calibrated_per_run_cost():
    """A split's cuts run one after another, each its own execution: a 9-cut TPC-H split
    cost ~9x a plan's fixed part on the device while the summed op vector priced it once."""
    coef = [0.0] * len(OPS)
    coef[OPS.index("rows")] = 1e-8
    m = DeviceModels(device="d", threads=1, exec=NNLSExec(coef=coef, intercept=1e-3, serial=0.0),
                     ser_time=LinearModel(1e-5, 1e-9), ser_bytes=LinearModel(500, 1.0), deser_s=1e-5)
    one = m.predict_exec({"rows": 1e5})
    assert one == pytest.approx(1e-3 + 1e-3)
    assert m.predict_exec({"rows": 1e5}, runs=4) == pytest.approx(one + 3 * 1e-3)
    assert m.per_run_s == pytest.approx(1e-3)


def _xty(runs):
    X = np.stack([[r["ops"][k] for k in OPS] for r in runs])
    return X, np.array([r["threads"] for r in runs], float), np.array([r["exec_s"] for r in runs])


def test_blend_is_the_geometric_mean_of_its_parts_and_survives_json():
    X, T, y = _xty(_runs(150, 2))
    b = BlendExec.fit(X, T, y, seed=0)
    want = np.sqrt(b.linear.predict(X, T) * b.forest.predict(X, T))
    assert np.allclose(b.predict(X, T), want, rtol=1e-12)
    again = exec_from_json(json.loads(json.dumps(b.to_json())))
    assert isinstance(again, BlendExec) and np.allclose(again.predict(X, T), want, rtol=1e-9)
    with pytest.raises(InvalidArgument):
        exec_from_json({"kind": "blend", "linear": b.forest.to_json(), "forest": b.forest.to_json()})
    nested = b.to_json()
    for _ in range(5000):           # a peer's blend in a blend: refused before any decoding
        nested = {"kind": "blend", "linear": nested, "forest": b.forest.to_json()}
    with pytest.raises(InvalidArgument):
        exec_from_json(nested)


def test_cross_validated_blend_error_is_that_of_blends_fitted_per_fold():
    """fit_exec scores the blend from its parts' held-out predictions instead of fitting both
    again: the shortcut must give exactly what fitting a blend on each fold gives."""
    runs = [dict(r, template=f"T{i % 12}") for i, r in enumerate(_runs(180, 3))]
    _, report = fit_exec(runs, seed=0, repeats=1)
    X, T, y = _xty(runs)
    fold, _ = _folds(runs, 5, np.random.Generator(np.random.SFC64(0)))
    pred = np.empty(len(y))
    for k in range(int(fold.max()) + 1):
        te, tr = fold == k, fold != k
        pred[te] = BlendExec.fit(X[tr], T[tr], y[tr], 0).predict(X[te], T[te])
    assert report["blend"]["ape_median"] == pytest.approx(float(np.median(ape(pred, y))), rel=1e-9)


def test_the_choice_averages_each_runs_error_over_several_template_groupings():
    """With one grouping of templates into folds, which templates were held out together
    moved a device's median by 2-4 points; each run's error is the mean over ``repeats``
    groupings, drawn one after another from the seed's stream."""
    runs = [dict(r, template=f"T{i % 12}") for i, r in enumerate(_runs(180, 3))]
    _, report = fit_exec(runs, seed=0, repeats=3)
    X, T, y = _xty(runs)
    rng = np.random.Generator(np.random.SFC64(0))
    errs = []
    for _ in range(3):
        fold, _ = _folds(runs, 5, rng)
        pred = np.empty(len(y))
        for k in range(int(fold.max()) + 1):
            te, tr = fold == k, fold != k
            pred[te] = OpsExec.fit(X[tr], T[tr], y[tr]).predict(X[te], T[te])
        errs.append(ape(pred, y))
    assert report["ops"]["ape_median"] == pytest.approx(float(np.median(np.mean(errs, axis=0))), rel=1e-9)
    assert "repeated 3x" in report["selection"]
    reps, how = cross_validated(runs, seed=0, repeats=3)      # what fit_exec scored, for offline studies
    assert len(reps) == 3 and set(reps[0]) == {"ops", "nnls", "forest", "blend"} and "by query template" in how
    assert np.allclose([ape(p["ops"], y) for p in reps], errs, rtol=1e-12)


def test_a_kept_blend_prices_each_vector_as_its_batch_prediction_and_extrapolates_linearly():
    runs = _runs(150, 4)
    X, T, y = _xty(runs)
    b = BlendExec.fit(X, T, y, seed=0)
    m = DeviceModels(device="d", threads=2, exec=b, ser_time=LinearModel(0, 0), ser_bytes=LinearModel(0, 1),
                     deser_s=0.0, exec_linear=b.linear, rows_max=float(X[:, OPS.index("rows")].max()))
    inside = [runs[0]["ops"], runs[1]["ops"]]
    got = m.predict_execs([(o, 3, None, 1) for o in inside])
    assert got == pytest.approx(list(b.predict(X[:2], np.array([3.0, 3.0]))), rel=1e-9)
    assert m.predict_exec(inside[0], 3) == pytest.approx(got[0], rel=1e-12)
    big = dict(inside[0], rows=5 * m.rows_max)         # beyond calibration: the linear part alone
    assert m.predict_exec(big, 3) == pytest.approx(b.linear.predict_one(tuple(big[k] for k in OPS), 3.0))
    assert DeviceModels.from_json(json.loads(json.dumps(m.to_json()))).predict_exec(inside[0], 3) == \
        pytest.approx(got[0], rel=1e-9)
