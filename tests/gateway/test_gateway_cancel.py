"""Cancelling a statement through the ADBC Flight SQL driver stops the device's work
(issue 16): the gateway cancels the statement's query id on every device working on it,
the device kills the worker process running it, and the next query on that device
succeeds. Deadlines are 60 s here, so only the cancel can stop the ~13 s join in time."""

import threading
import time

import adbc_driver_flightsql.dbapi as fdb
import psutil
import pytest
from adbc_driver_flightsql import DatabaseOptions

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.catalog import Catalog, ensure_query_service
from colony.gateway.server import Gateway
from colony.runtime.local import LocalColony

TOKEN = "t0ken-for-the-cancel-tests-0123456789"
SLOW = "select count(*) as n from heavy a, heavy b where a.x < b.x"       # 1.6 G pairs, one result row
QUICK = "select count(*) as n from heavy where x < 0.5"


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    opts = {"query": {"timeout_s": 60}}
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 1, "services": opts},
                                     "nic0": {"threads": 1, "pools": ["data"], "services": opts}},
                                    name="cancelcolony"))
    ensure_query_service(lc, str(tmp_path_factory.mktemp("models")), calib_runs=10, max_rows=40_000)
    t = uniform(40_000, seed=3, n_particles=100)
    lc.put("data", "heavy/000001", t)
    server = Gateway(Catalog(lc, ttl_s=5), "grpc://127.0.0.1:0", token=TOKEN, name="cancelcolony")
    threading.Thread(target=server.serve, daemon=True).start()
    yield server, lc, t
    server.shutdown()


def _connect(server):
    return fdb.connect(f"grpc://127.0.0.1:{server.port}",
                       db_kwargs={DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {TOKEN}"}, autocommit=True)


@pytest.mark.parametrize("placement,device", [("down", "nic0"), ("back", "host")])
def test_a_cancelled_statement_stops_the_devices_worker(gw, placement, device):
    server, lc, t = gw
    before = lc.call(device, "query", "workers")
    seen: dict = {}
    with _connect(server) as conn, conn.cursor() as cur:
        cur.execute(f"SET colony.placement = '{placement}'")

        def cancel_once_running():
            stop = time.monotonic() + 60            # a loaded 2-core machine starts workers slowly
            while time.monotonic() < stop:
                running = {q: p for q, p in lc.call(device, "query", "workers")["running"].items()
                           if q.startswith("flightsql-")}
                if running:
                    seen.update(running)
                    break
                time.sleep(0.02)
            cur.adbc_cancel()
        th = threading.Thread(target=cancel_once_running)
        th.start()
        with pytest.raises(Exception, match="(?i)cancel"):
            cur.execute(SLOW)
            cur.fetchall()
        th.join()
        assert len(seen) == 1
        (qid, pids), = seen.items()
        # the device's own state: the query shows cancelled and the worker that ran it is gone
        stop = time.monotonic() + 10
        while time.monotonic() < stop:
            w = lc.call(device, "query", "workers")
            if {"query_id": qid, "pid": pids[0]} in w["cancelled"]:
                break
            time.sleep(0.05)
        assert {"query_id": qid, "pid": pids[0]} in w["cancelled"]
        assert qid not in w["running"] and pids[0] not in w["live"] and not psutil.pid_exists(pids[0])
        assert w["killed"] == before["killed"]                          # not the 60 s deadline
        cur.execute(QUICK)                                              # same connection, same placement
        assert cur.fetchall() == [(sum(x < 0.5 for x in t["x"].to_pylist()),)]
    assert lc.call(device, "query", "health")["ok"]
