"""A burst of load-aware queries from several devices at once: each push-back prices the host
work already admitted, and every reservation is released when its query is done."""

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
    predicted work per query (2 s) is close to the device's (3 s): the backlog outlasts the burst."""
    c = emulated_colony(n_nics=4)
    for i in range(4):
        load_particles(c, f"nic{i}", 20_000, objects=2, seed=i, pool=f"particles_nic{i}")
        svc = c.host(f"nic{i}").services["query"]
        svc.models = _models(f"nic{i}", 1, 1.5e-4)
        svc.host_models = _models("host", 2, 1e-4)
    assert c.host("host").services["query"].cores is None     # in-process: no per-device cores to measure
    return c


def _clients(c, send_load):
    return {f"nic{i}": QueryClient(c, "host", {"particles": TableSpec("particles", f"particles_nic{i}")},
                                   send_load=send_load) for i in range(4)}


def test_load_aware_burst_prices_the_admitted_backlog_and_releases_everything(storm_colony):
    c = storm_colony
    sql = "select * from particles where x < 0.5"
    naive = burst(_clients(c, False), "auto", 3, seed=1, sql=sql)
    assert naive["pushed_back"] == naive["queries"]                  # every device alone sees an idle host
    aware = burst(_clients(c, True), "auto", 3, seed=1, sql=sql)
    # every load-aware push-back priced the host's admitted backlog (2 host threads) as its wait;
    # how many overlap depends on how concurrently this process serves the calls
    backs = [q for q in aware["log"] if q["placement"] == "back"]
    for q in backs:
        assert q["predicted_wait_s"] == pytest.approx(q["host_backlog_s"] * q["host_slowdown"] / 2)
    assert c.call("host", "query", "load")["backlog_s"] == pytest.approx(0.0)
    for i in range(4):
        assert c.call(f"nic{i}", "query", "health")["backlog_s"] == pytest.approx(0.0)
