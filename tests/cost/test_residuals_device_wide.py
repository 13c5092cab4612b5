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


def test_the_device_wide_part_is_shared_only_within_a_size_class():
    """Small queries run 2x their prices (a fixed cost the model misses); a large shape not run
    yet keeps its raw price, a small one starts corrected, and a shape's own entry spans sizes
    (probe run 132: five 4-14 ms nested-table queries at 1.5-3.3x priced a 64-ms window query,
    raw price 56 ms, at the 2x bound)."""
    from colony.cost.models import OpsExec, DeviceModels, LinearModel, size_class
    from colony.query.estimate import OPS

    serial = [0.0] * len(OPS)
    serial[OPS.index("cmp")] = 4e-9
    serial[OPS.index("sort")] = 8e-9
    m = DeviceModels(device="nic", threads=1, exec=OpsExec(serial=serial, parallel=[0.0] * len(OPS), intercept=1e-4),
                     ser_time=LinearModel(0.0, 0.0), ser_bytes=LinearModel(0.0, 1.0), deser_s=0.0)
    small = dict.fromkeys(OPS, 0.0)
    small.update(rows=1e6, cmp=1e6)                                  # ~4 ms
    big = dict.fromkeys(OPS, 0.0)
    big.update(rows=2e5, sort=7e6)                                   # ~56 ms, another shape
    other_small = dict.fromkeys(OPS, 0.0)
    other_small.update(rows=2e5, sort=5e5)                           # ~4 ms, the big one's shape
    assert size_class(m.predict_exec(small)) == size_class(m.predict_exec(other_small)) == 2
    assert size_class(m.predict_exec(big)) == 5
    raw_big, raw_small = m.predict_exec(big), m.predict_exec(other_small)
    for _ in range(30):
        fam = m.family(small)
        m.residuals.update(fam, m.predict_exec(small), 2.0 * m.predict_exec(small) / m.residuals.factor(fam))
    assert m.predict_exec(small) / (1e-4 + 4e-9 * 1e6) == pytest.approx(2.0, rel=0.05)
    assert m.predict_exec(big) == pytest.approx(raw_big)             # another class: not spread as a factor
    before = m.predict_exec(other_small) / raw_small
    assert 1.2 < before < 2.0                                        # same class: the device-wide part
    m.residuals.update(m.family(big), m.predict_exec(big), 0.5 * raw_big)   # the shape runs fast, large
    shape = m.family(big).rpartition("@")[0]
    assert m.family(other_small).startswith(shape + "@")
    assert m.predict_exec(other_small) / raw_small == pytest.approx(before * np.exp(0.2 * 0.5 * np.log(0.5)))


def test_shared_entries_of_every_size_class_are_kept_when_shapes_are_dropped():
    r = Residuals(max_entries=6)
    for i in range(20):
        r.update(f"back:cmp[s{i}]@{i % 3}", 1.0, 1.1)
    assert set(r.state) == {"*@0", "*@1", "*@2", "back:*@0", "back:*@1", "back:*@2"}   # shapes go first
    r.update("back:cmp[s20]@3", 1.0, 1.1)          # more shared entries than room: kept, nothing raises
    assert "*@3" in r.state and "back:*@3" in r.state and len(r.state) == 8
