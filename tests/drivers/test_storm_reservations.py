"""A burst of load-aware queries from several devices at once: host reservations made at
decision time spread the burst over host and devices instead of herding it to the host."""

import pytest

from colony.bench.query_storm import burst
from colony.cost.models import DeviceModels, LinearModel, OpsExec
from colony.drivers.emulated import emulated_colony, load_particles
from colony.drivers.query import QueryClient
from colony.query.estimate import OPS
from colony.query.plan import TableSpec


def _models(name, threads, per_row):
    per = [per_row if k == "rows" else 0.0 for k in OPS]
    return DeviceModels(name, threads, OpsExec(serial=per, parallel=[0.0] * len(OPS), intercept=1e-4),
                        LinearModel(1e-5, 1e-9), LinearModel(500, 1.0), 1e-5, link=LinearModel(5e-5, 1e-10))


@pytest.fixture()
def storm_colony():
    """Four SmartNICs whose models say push-back pays for one query at a time: the host's
    predicted work per query (0.2 s) is close to the device's (0.3 s)."""
    c = emulated_colony(n_nics=4)
    for i in range(4):
        load_particles(c, f"nic{i}", 20_000, objects=2, seed=i, pool=f"particles_nic{i}")
        svc = c.host(f"nic{i}").services["query"]
        svc.models = _models(f"nic{i}", 1, 1.5e-5)
        svc.host_models = _models("host", 2, 1e-5)
    assert c.host("host").services["query"].cores is None     # in-process: no per-device cores to measure
    return c


def _clients(c, send_load):
    return {f"nic{i}": QueryClient(c, "host", {"particles": TableSpec("particles", f"particles_nic{i}")},
                                   send_load=send_load) for i in range(4)}


def test_load_aware_burst_splits_over_host_and_devices_and_releases_everything(storm_colony):
    c = storm_colony
    sql = "select * from particles where x < 0.5"
    naive = burst(_clients(c, False), "auto", 3, seed=1, sql=sql)
    assert naive["pushed_back"] == naive["queries"]                  # every device alone sees an idle host
    aware = burst(_clients(c, True), "auto", 3, seed=1, sql=sql)
    assert 0 < aware["pushed_back"] < aware["queries"]               # the reservations thin the herd out
    # some device saw the others' reservations: in its request's load report, or at the host when it reserved
    assert any(q["host_backlog_s"] or "decided again" in (q["reason"] or "") or "refused" in (q["reason"] or "")
               for q in aware["log"])
    assert c.call("host", "query", "load")["backlog_s"] == pytest.approx(0.0)
    for i in range(4):
        assert c.call(f"nic{i}", "query", "health")["backlog_s"] == pytest.approx(0.0)
