"""Online correction: what slows the whole device is learnt from every family; a peer's
correction state is adopted only bounded and well-formed."""

import numpy as np
import pytest

from colony.cost.models import Residuals


def test_a_family_not_run_yet_starts_with_the_device_wide_correction():
    r = Residuals(alpha=0.2, bound=2.0)
    for _ in range(30):                                  # the device runs 1.5x slower than calibrated
        r.update("filter", 1.0 * r.factor("filter"), 1.5)
    assert r.factor("filter") == pytest.approx(1.5, rel=0.02)
    assert 1.15 < r.factor("power") < 1.5                # never ran, already partly corrected
    r.update("total:down", 1.0, 3.0)                     # end-to-end entries stand alone
    assert r.factor("total:down") == pytest.approx(np.exp(0.2 * np.log(3.0)))
    assert r.state["*"]["n"] == 30


def test_adopt_takes_a_peers_state_bounded_and_drops_malformed_entries():
    r = Residuals(bound=2.0)
    r.adopt({"filter": {"log": 5.0, "n": 3}, "*": {"log": -0.1, "n": 7}, "bad": {"log": "x"},
             "nan": {"log": float("nan"), "n": 1}, 3: {"log": 0.1, "n": 1}})
    assert set(r.state) == {"filter", "*"}
    assert r.state["filter"]["log"] == pytest.approx(np.log(2.0))
    r.adopt("not a dict")
    assert set(r.state) == {"filter", "*"}
    src = Residuals()
    src.update("sort", 1.0, 1.2)
    r.adopt(src.snapshot())
    assert r.factor("sort") == pytest.approx(src.factor("sort"))


def test_a_roles_bias_is_learnt_across_its_shapes():
    """A split's upper part runs 0.65x its price whatever its shape (each TPC-H query is a shape
    of its own): a new split shape starts corrected, a whole-plan shape of the same device much
    less."""
    r = Residuals(alpha=0.2, bound=2.0, min_n=10)
    for i in range(30):                                  # 30 split shapes, one query each
        fam = f"split:join[agg{i}]"
        r.update(fam, 1.0 * r.factor(fam), 0.65)
    new = r.factor("split:join[agg99]")
    assert 0.65 <= new < 0.8                             # most of the way, before its first run
    assert r.factor("back:join[agg99]") > new + 0.1      # the other role shares only the device-wide part
    assert r.state["split:*"]["n"] == 30 and r.state["*"]["n"] == 30
    one = Residuals(alpha=0.2)
    one.update("split:x", 1.0, 2.0)                      # one step moves a factor by alpha x residual
    assert one.factor("split:x") == pytest.approx(np.exp(0.2 * np.log(2.0)))
