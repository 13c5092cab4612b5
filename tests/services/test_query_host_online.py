"""The host's model is corrected online by the host (from what devices predicted for it) and
every device prices host work with that correction; estimates are cached per plan until the
statistics they read change; calibration says which execution path it timed."""

import pytest

from colony.data import uniform
from colony.drivers.query import QueryClient


@pytest.fixture(scope="module")
def colony(calibrated_pair):
    return calibrated_pair((2, 3))


def test_calibration_reports_the_path_it_timed(colony):
    assert colony.call("nic0", "query", "models_json")["report"]["path"] == "worker process, objects cached"
    assert colony.call("host", "query", "models_json")["report"]["path"] == \
        "worker process, objects copied per query"


def test_the_record_keeps_the_runs_the_model_was_fitted_on(colony):
    """A refit (another learner or selection rule) needs no new timing: the runs are in the record."""
    import numpy as np

    from colony.cost.calibrate import runs_from_record
    from colony.cost.models import FEATURES, fit_exec
    rec = colony.host("nic0").ctx.calibration["query_runs"]
    assert rec["features"] == list(FEATURES) and len(rec["ops"]) == len(rec["exec_s"]) == 12
    runs = runs_from_record(rec)
    assert all(y > 0 for y in rec["exec_s"]) and all(isinstance(t, str) for t in rec["template"])
    kept = colony.call("nic0", "query", "models_json")["report"]
    _, report = fit_exec(runs, seed=kept["sizes"]["seed"])
    assert report["kept"] == kept["kept"]
    assert np.isclose(report[kept["kept"]]["log_err_mean"], kept[kept["kept"]]["log_err_mean"])


def test_pushed_back_queries_correct_the_host_model_and_devices_adopt_it(colony):
    c = QueryClient(colony, "host")
    sql = "select particle_id & 15 as g, count(*), avg(vx) from particles where y < 0.7 group by g"
    for _ in range(4):
        r = c.query(sql, "back")
        assert r.placement == "back"
    h = colony.call("host", "query", "health")
    shared = {k: v for k, v in h["corrections"].items() if k.startswith("*@")}
    assert h["corrections"] and sum(v["n"] for k, v in h["corrections"].items() if k not in shared) >= 4
    assert sum(v["n"] for v in shared.values()) >= 4      # the device-wide entries (per size class) learn from every family
    dev = colony.host("nic0").services["query"]
    host = colony.host("host").services["query"]
    assert dev.host_models.residuals.snapshot() == host.models.residuals.snapshot()
    # the device's next prediction of host work carries the host's correction
    fam = dev.host_models.family(dev._estimate(*_plan(c, sql, dev))[1].ops)
    assert dev.host_models.residuals.factor(fam) == pytest.approx(host.models.residuals.factor(fam))


def _plan(client, sql, dev):
    plan_bytes, _ = client.plan(sql)
    return bytes(plan_bytes), dev._stats({"particles": ("particles", "*")})


def test_estimates_are_cached_per_plan_until_statistics_change(colony):
    c = QueryClient(colony, "host")
    dev = colony.host("nic0").services["query"]
    pb, st = _plan(c, "select count(*) from particles where x < 0.25", dev)
    _, e1 = dev._estimate(pb, st)
    _, e2 = dev._estimate(pb, dev._stats({"particles": ("particles", "*")}))
    assert e1 is e2
    colony.store("nic0").put("particles", "o2", uniform(10_000, seed=4))
    _, e3 = dev._estimate(pb, dev._stats({"particles": ("particles", "*")}))
    assert e3 is not e1 and e3.input_rows == e1.input_rows + 10_000
    colony.store("nic0").drop("particles", "o2")


def test_the_fingerprint_tells_the_runtimes_apart(colony):
    from colony.runtime.fingerprint import describe, fingerprint
    spec = colony.config.devices["nic0"]
    assert describe(spec, "local")["runtime"] == "local"
    assert colony.host("nic0").ctx.fingerprint == fingerprint(spec, "local") != fingerprint(spec, "ray")
