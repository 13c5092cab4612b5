"""A peer's model payload is data to validate: no cycles, bounded depth and size (issue 14)."""

import copy

import numpy as np
import pytest

from colony.cost.models import MAX_DEPTH, DeviceModels, ForestExec, LinearModel, fit_exec_both
from colony.errors import InvalidArgument
from colony.query.estimate import OPS


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(0)
    runs = [{"ops": {k: float(rng.integers(1, 10**6)) for k in OPS}, "threads": int(rng.integers(1, 3)),
             "exec_s": float(rng.random() + 0.01)} for _ in range(40)]
    final, linear, report, rows_max = fit_exec_both(runs)
    forest = final if isinstance(final, ForestExec) else ForestExec.fit(
        np.stack([[r["ops"].get(k, 0.0) for k in OPS] for r in runs]),
        np.array([r["threads"] for r in runs], float), np.array([r["exec_s"] for r in runs]))
    return DeviceModels("host", 2, forest, LinearModel(0, 1e-9), LinearModel(0, 8), 1e-4,
                        exec_linear=linear, rows_max=rows_max).to_json()


def test_fitted_models_round_trip(models):
    m = DeviceModels.from_json(models)
    assert m.predict_exec({k: 1000.0 for k in OPS}) > 0


def _with_tree(models, **changes):
    bad = copy.deepcopy(models)
    bad["exec"]["trees"][0].update(changes)
    return bad


def test_a_cycle_is_refused_not_looped_forever(models):
    t = models["exec"]["trees"][0]
    left = list(t["left"])
    left[left.index(next(c for c in left if c > 0))] = 0      # an inner node points back at the root
    with pytest.raises(InvalidArgument, match="tree 0: a child does not come after its parent"):
        DeviceModels.from_json(_with_tree(models, left=left))


def test_depth_size_and_shape_are_capped(models):
    n = MAX_DEPTH + 2                           # a chain deeper than the cap
    chain = {"left": [i + 1 for i in range(n - 1)] + [-1], "feature": [0] * n, "threshold": [0.0] * n,
             "value": [0.0] * n}
    chain["right"] = [n] * (n - 1) + [-1]
    chain["left"].append(-1); chain["right"].append(-1)
    for k in ("feature", "threshold", "value"):
        chain[k].append(0)
    with pytest.raises(InvalidArgument, match="depth"):
        DeviceModels.from_json(_with_tree(models, **chain))
    with pytest.raises(InvalidArgument, match="five arrays of one length"):
        DeviceModels.from_json(_with_tree(models, value=[0.0]))
    with pytest.raises(InvalidArgument, match="1..1000 trees"):
        bad = copy.deepcopy(models)
        bad["exec"]["trees"] = bad["exec"]["trees"] * 1001
        DeviceModels.from_json(bad)
    with pytest.raises(InvalidArgument, match="not numeric"):
        DeviceModels.from_json(_with_tree(models, left="loop"))


@pytest.mark.parametrize("mutate", [
    lambda d: d.pop("device"),
    lambda d: d.update(ser_time={"a": "x", "b": 1}),
    lambda d: d.update(ser_time={"a": float("nan"), "b": 1}),
    lambda d: d.update(exec={"kind": "python", "code": "import os"}),
    lambda d: d.update(exec={"kind": "nnls", "coef": [1.0], "intercept": 0, "serial": 0}),
    lambda d: d.update(link=[1, 2]),
])
def test_malformed_payloads_are_typed(models, mutate):
    bad = copy.deepcopy(models)
    mutate(bad)
    with pytest.raises(InvalidArgument):
        DeviceModels.from_json(bad)
