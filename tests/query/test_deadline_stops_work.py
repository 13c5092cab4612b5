"""A query deadline stops the work, not just the wait (issue 14).

The long query is a self cross join (40k x 40k rows, ~13 s on one thread here): it emits
nothing until it is done, so a deadline checked between output batches cannot stop it.
The test asserts the worker is gone, its CPU is free and the device answers the next call;
how soon after the deadline it stops is measured in bench/results/query_deadline.json."""

import time

import psutil
import pytest

from colony.data import uniform
from colony.errors import DeadlineExceeded, QueryTimeout
from colony.query import plan as qplan
from colony.config.builders import devices as devices_config
from colony.runtime.local import LocalColony

SLOW = "select count(*) as n from particles a, particles b where a.x < b.x"
QUICK = "select count(*) as n from particles where x < 0.5"


@pytest.fixture(scope="module")
def colony():
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 1, "services": {"query": {"timeout_s": 0.5}}},
                      "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {"timeout_s": 0.5}},
                               "pools": ["particles"]}}))
    t = uniform(40_000, seed=1)
    lc.store("nic0").put("particles", "o0", t)
    return lc, t


def _worker_cpu() -> dict[int, float]:
    """CPU seconds per query worker of this process (every device's): the query runs in one.
    Not the whole process tree: a session's Ray colony (raylet, idle actors) is in it too and
    spends tenths of a second per second on its own, which made the bound flaky."""
    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            if "colony.query.worker" in " ".join(p.cmdline()):
                c = p.cpu_times()
                out[p.pid] = c.user + c.system
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            pass
    return out


def _assert_stopped(lc, device, killed_before):
    w = lc.call(device, "query", "workers")
    assert w["isolate"] and w["live"] == []
    new = w["killed"][killed_before:]
    assert len(new) == 1
    assert not psutil.pid_exists(new[0])                 # the worker is gone (killed and reaped)
    time.sleep(1.5)                                      # its replacement has started (and idles)
    c0 = _worker_cpu()
    time.sleep(1.0)
    c1 = _worker_cpu()
    busy = sum(c1[pid] - c0[pid] for pid in c0.keys() & c1.keys())
    assert busy < 0.3                                    # no worker is still computing the query


def test_device_query_past_its_deadline_is_stopped(colony):
    lc, t = colony
    plan = qplan.to_substrait(SLOW, {"particles": t.schema})
    killed = len(lc.call("nic0", "query", "workers")["killed"])
    with pytest.raises(QueryTimeout, match="deadline of 0.50 s and was stopped") as e:
        lc.call("nic0", "query", "execute", plan, {"particles": "particles"}, "down")
    assert isinstance(e.value, DeadlineExceeded)
    _assert_stopped(lc, "nic0", killed)
    quick = qplan.to_substrait(QUICK, {"particles": t.schema})
    r = lc.call("nic0", "query", "execute", quick, {"particles": "particles"}, "down")   # the device answers
    from colony import codec
    assert codec.unpack_one(r["result"])["n"][0].as_py() == sum(x < 0.5 for x in t["x"].to_pylist())


def test_host_pushed_query_past_its_deadline_is_stopped(colony):
    lc, t = colony
    plan = qplan.to_substrait(SLOW, {"particles": t.schema})
    objs = [lc.store("nic0").get("particles", "o0")]
    killed = len(lc.call("host", "query", "workers")["killed"])
    with pytest.raises(DeadlineExceeded):
        lc.call("host", "query", "run_pushed", plan, {"particles": objs})
    _assert_stopped(lc, "host", killed)
    assert lc.call("host", "query", "load")["queue_depth"] == 0


def test_typed_errors_cross_the_worker(colony):
    lc, t = colony
    from colony.errors import ResultTooLarge
    lc2 = LocalColony(devices_config({"nic0": {"role": "smartnic", "threads": 1, "pools": ["particles"],
                                "services": {"query": {"max_result_bytes": 1000}}}}))
    lc2.store("nic0").put("particles", "o0", t)
    plan = qplan.to_substrait("select * from particles", {"particles": t.schema})
    with pytest.raises(ResultTooLarge, match="cap of 1000 bytes"):
        lc2.call("nic0", "query", "execute", plan, {"particles": "particles"}, "down")
