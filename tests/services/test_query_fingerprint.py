"""Calibrations are kept with the runtime's device fingerprint and invalidated when it changes."""

from colony.config.builders import devices as devices_config
from colony.cost.calibrate import calibrate
from colony.runtime.local import LocalColony
from colony.services.base import DeviceContext
from colony.services.query import QueryService
from colony.store import ObjectStore


def _colony(threads):
    spec = {"role": "smartnic", "threads": threads, "services": {"query": {}}}
    return LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                       "nic0": spec}))


def test_runtime_fingerprint_follows_the_device_spec():
    from colony.runtime.fingerprint import describe
    a, b = _colony(1), _colony(2)
    fa = a.host("nic0").ctx.fingerprint
    assert fa and fa == _colony(1).host("nic0").ctx.fingerprint
    assert fa != b.host("nic0").ctx.fingerprint
    d = describe(a.config.devices["nic0"])
    assert {"role", "threads", "link_gbps", "software", "layout"} <= set(d) and d["software"]["datafusion"]


def test_a_changed_calibration_template_changes_the_fingerprint(monkeypatch):
    """Records fitted on another suite are stale: a template added or changed recalibrates."""
    import importlib
    cal = importlib.import_module("colony.cost.calibrate")   # the module (colony.cost exports the function)
    from colony.runtime.fingerprint import fingerprint
    spec = _colony(1).config.devices["nic0"]
    before = fingerprint(spec)
    monkeypatch.setitem(cal.TEMPLATES, "T1", cal.TEMPLATES["T1"] + " and x > 0")
    assert fingerprint(spec) != before


def test_a_changed_operation_count_changes_the_fingerprint(monkeypatch):
    """Models read the op vector: a count the estimator changes (its revision) makes them stale."""
    import importlib
    est = importlib.import_module("colony.query.estimate")   # the module (colony.query exports the function)
    from colony.runtime.fingerprint import fingerprint
    spec = _colony(1).config.devices["nic0"]
    before = fingerprint(spec)
    monkeypatch.setattr(est, "OPS_REVISION", est.OPS_REVISION + 1)
    assert fingerprint(spec) != before


def test_a_changed_measurement_changes_the_fingerprint(monkeypatch):
    """Records whose runs were timed another way (a term measured differently) are stale."""
    import importlib
    cal = importlib.import_module("colony.cost.calibrate")
    from colony.runtime.fingerprint import fingerprint
    spec = _colony(1).config.devices["nic0"]
    before = fingerprint(spec)
    monkeypatch.setattr(cal, "MEASURE_REVISION", cal.MEASURE_REVISION + 1)
    assert fingerprint(spec) != before


def test_stored_models_load_only_for_the_same_fingerprint(tmp_path):
    models, _ = calibrate("nic0", 1, n_runs=8, min_rows=2_000, max_rows=4_000)
    ctx = DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="f1")
    svc = QueryService(ctx, models_dir=str(tmp_path))
    svc.models = models
    svc._persist()
    same = QueryService(DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="f1"),
                        models_dir=str(tmp_path))
    assert same.health()["calibrated"] and not same.health()["stale"]
    moved = QueryService(DeviceContext(name="nic0", store=ObjectStore("nic0"), fingerprint="f2"),
                         models_dir=str(tmp_path))
    h = moved.health()
    assert not h["calibrated"] and "recalibrate" in h["stale"]
