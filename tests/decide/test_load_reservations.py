"""Load terms of the decision engine: host work reserved at decision time (a burst of devices
sees each other's push-backs), the device's measured core contention, and the sampler."""

import os
import subprocess
import sys
import time

import pytest

from colony.cost.models import DeviceModels, LinearModel, OpsExec
from colony.data import PARTICLE_SCHEMA
from colony.decide import DeviceLoad, HostLoad, decide, host_slack, host_work
from colony.drivers.emulated import emulated_colony, load_particles
from colony.drivers.query import QueryClient
from colony.query import plan as qplan
from colony.query.estimate import OPS, Estimate
from colony.services.cpu import CoreLoad

SQL = "select * from particles where x < 0.9"


def _models(name, threads, per_row):
    """Execution linear in input rows; fast link."""
    per = [per_row if k == "rows" else 0.0 for k in OPS]
    return DeviceModels(name, threads, OpsExec(serial=per, parallel=[0.0] * len(OPS), intercept=1e-4),
                        LinearModel(1e-5, 1e-9), LinearModel(500, 1.0), 1e-5, link=LinearModel(5e-5, 1e-9))


def _est(rows=1e6):
    ops = {k: (rows if k == "rows" else 0.0) for k in OPS}
    return Estimate(rows=rows / 100, out_cols=2, out_width=16.0, ops=ops, input_rows=rows,
                    input_bytes=int(rows * 72), objects=4)


def test_host_backlog_and_device_contention_enter_the_prediction():
    dev, host = _models("nic", 1, 1.5e-8), _models("host", 2, 1e-8)
    dev.link = LinearModel(5e-5, 1e-10)             # a fast link: the device's execution decides
    idle = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2, backlog_s=0.0), dev_load=DeviceLoad())
    assert idle.placement == "down"
    slow = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2, backlog_s=0.0),
                  dev_load=DeviceLoad(backlog_s=0.0, slowdown=3.0))
    d = slow.predicted["down"]
    assert d["contention"] == pytest.approx(2.0 * (d["deser"] + d["exec"] + d["ser"] + d["transfer"]))
    assert slow.predicted["back"]["contention"] == pytest.approx(2.0 * slow.predicted["back"]["transfer"])
    assert slow.placement == "back"                 # a busy device core pushes the work back
    full = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2, backlog_s=0.2),
                  dev_load=DeviceLoad(backlog_s=0.0, slowdown=3.0))
    assert full.predicted["back"]["wait"] == pytest.approx(0.1)    # 0.2 s admitted over 2 threads
    assert full.placement == "down"
    stretched = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2, backlog_s=0.0, slowdown=2.0))
    b = stretched.predicted["back"]
    assert b["contention_host"] == pytest.approx(b["exec_host"] + b["deser_host"])
    # the slack is the host wait at which back stops beating down
    s = host_slack(slow.predicted, "back")
    b = slow.predicted["back"]
    assert b["total"] - b["wait"] + s == pytest.approx(slow.predicted["down"]["total"])
    assert host_work(b) == pytest.approx(b["exec_host"] + b["deser_host"])


def _pushback_colony():
    c = emulated_colony(n_nics=1)
    load_particles(c, "nic0", 20_000, objects=2)
    svc = c.host("nic0").services["query"]
    svc.models = _models("nic0", 1, 1e-5)                   # slow device: push-back pays
    svc.host_models = _models("host", 2, 1e-9)
    return c


def test_host_admits_reservations_atomically_and_refuses_past_the_slack():
    c = _pushback_colony()
    first = c.call("host", "query", "admit", 4.0, 1.0)
    assert first["ticket"] is not None
    assert c.call("host", "query", "load")["backlog_s"] == pytest.approx(4.0)
    refused = c.call("host", "query", "admit", 1.0, 1.0)    # 4 s over 2 threads: 2 s wait > 1 s
    assert refused["ticket"] is None and refused["load"]["backlog_s"] == pytest.approx(4.0)
    assert c.call("host", "query", "admit", 1.0, 5.0)["ticket"] is not None
    c.call("host", "query", "unadmit", first["ticket"])
    assert c.call("host", "query", "load")["backlog_s"] == pytest.approx(1.0)


def test_load_aware_query_decides_again_when_the_host_filled_up_and_leaks_nothing():
    c = _pushback_colony()
    client = QueryClient(c, "host")
    free = client.query(SQL)
    assert free.placement == "back"
    assert c.call("host", "query", "load")["backlog_s"] == pytest.approx(0.0)    # released when done
    big = c.call("host", "query", "admit", 1e4, 1e9)["ticket"]   # another device's long push-back
    client_stale = QueryClient(c, "host")
    client_stale.colony = _StaleLoad(c)                           # the request carries an idle host's load
    kept = client_stale.query(SQL)
    assert kept.placement == "down" and "decided again" in kept.decision["reason"]
    assert kept.table.num_rows == free.table.num_rows
    c.call("host", "query", "unadmit", big)
    assert client.query(SQL).placement == "back"
    assert c.call("host", "query", "load")["backlog_s"] == pytest.approx(0.0)
    assert c.call("nic0", "query", "health")["backlog_s"] == pytest.approx(0.0)


def test_naive_and_forced_queries_reserve_nothing_but_still_count_while_running():
    c = _pushback_colony()
    svc = c.host("nic0").services["query"]
    pb = qplan.to_substrait(SQL, {"particles": PARTICLE_SCHEMA})
    naive = svc.execute(pb, {"particles": ["particles", "*"]}, "auto", None, None, "host")
    assert naive["decision"]["placement"] == "back" and "decided again" not in naive["decision"]["reason"]
    assert c.call("host", "query", "load")["backlog_s"] == pytest.approx(0.0)


class _StaleLoad:
    """A colony whose host load report is always the idle one (a request decided on stale load)."""

    def __init__(self, c):
        self._c = c

    def call(self, dev, svc, method, *a, **k):
        if method == "load":
            return {"queue_depth": 0, "free_threads": 2, "threads": 2, "service_s": 0.0, "backlog_s": 0.0,
                    "slowdown": 1.0}
        return self._c.call(dev, svc, method, *a, **k)

    def devices(self):
        return self._c.devices()


def test_core_load_discounts_own_queries_and_measures_competition():
    cl = CoreLoad(window_s=10.0)
    cl._thread = object()                                   # no sampler: feed samples by hand
    cl.cores = 1
    now = time.monotonic()
    cl._samples.extend([(now, 0.25), (now, 0.25)])
    assert cl.slowdown(own=1) == pytest.approx(3.0)         # stretch 4, one of it our own query
    cl._samples.clear()
    cl._samples.extend([(now, 1.0)])
    assert cl.slowdown() == 1.0
    assert CoreLoad.shared() is CoreLoad.shared()           # one sampler per process and core set
    if not hasattr(os, "sched_setaffinity"):
        return
    core = min(os.sched_getaffinity(0))
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    hogs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)]
    try:
        old = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {core})
        try:
            busy = CoreLoad(window_s=1.5, every_s=0.05)
            busy.measured()
            time.sleep(2.0)
            assert busy.slowdown() > 1.5                    # three spinning processes share our core
            busy.close()
        finally:
            os.sched_setaffinity(0, old)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
