"""A cancelled query stops on the device: ``query.cancel(query_id)`` kills the worker
process running it (device execute and host run_pushed), a cancel that overtakes its
request refuses it, and the device answers the next query (issue 16).

The long query is a self cross join (40k x 40k rows, ~13 s on one thread here) with a
60 s deadline, so only the cancel can stop it within the test's bounds."""

import threading
import time

import psutil
import pytest

from colony import codec
from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.query import QueryClient
from colony.errors import InvalidArgument, QueryCancelled
from colony.query import plan as qplan
from colony.query.plan import TableSpec
from colony.runtime.local import LocalColony

SLOW = "select count(*) as n from particles a, particles b where a.x < b.x"
QUICK = "select count(*) as n from particles where x < 0.5"


@pytest.fixture(scope="module")
def colony():
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 1, "services": {"query": {"timeout_s": 60}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "pools": ["particles"],
                                              "services": {"query": {"timeout_s": 60}}}}))
    t = uniform(40_000, seed=1)
    lc.store("nic0").put("particles", "o0", t)
    return lc, t


def _running(lc, device, query_id, bound_s=60.0) -> int:
    """The pid of the worker running ``query_id`` on ``device`` once it runs."""
    stop = time.monotonic() + bound_s            # generous: a loaded 2-core machine starts workers slowly
    while time.monotonic() < stop:
        pids = lc.call(device, "query", "workers")["running"].get(query_id)
        if pids:
            return pids[0]
        time.sleep(0.02)
    raise AssertionError(f"{query_id} never ran on {device}")


def _cancel_when_running(lc, device, query_id, cancel) -> dict:
    seen: dict = {}

    def go():
        seen["pid"] = _running(lc, device, query_id)
        seen["killed"] = cancel()
    th = threading.Thread(target=go)
    seen["thread"] = th
    th.start()
    return seen


def _assert_stopped(lc, device, query_id, pid):
    w = lc.call(device, "query", "workers")
    assert {"query_id": query_id, "pid": pid} in w["cancelled"]      # the device's own record
    assert query_id not in w["running"] and pid not in w["live"]
    assert not psutil.pid_exists(pid)                                # killed and reaped
    assert w["killed"] == []                                         # not by the 60 s deadline


def test_cancel_kills_the_device_worker_and_the_device_answers_next(colony):
    lc, t = colony
    plan = qplan.to_substrait(SLOW, {"particles": t.schema})
    seen = _cancel_when_running(lc, "nic0", "q-down", lambda: lc.call("nic0", "query", "cancel", "q-down"))
    t0 = time.monotonic()
    with pytest.raises(QueryCancelled, match="q-down was cancelled by its client; its worker pid"):
        lc.call("nic0", "query", "execute", plan, {"particles": "particles"}, "down", query_id="q-down")
    seen["thread"].join()
    assert time.monotonic() - t0 < 60                     # answered by the cancel, not the deadline
    assert seen["killed"]["killed"] == [seen["pid"]]
    _assert_stopped(lc, "nic0", "q-down", seen["pid"])
    quick = qplan.to_substrait(QUICK, {"particles": t.schema})
    r = lc.call("nic0", "query", "execute", quick, {"particles": "particles"}, "down", query_id="q-next")
    assert codec.unpack_one(r["result"])["n"][0].as_py() == sum(x < 0.5 for x in t["x"].to_pylist())
    assert lc.call("nic0", "query", "health")["ok"]


def test_cancel_kills_the_host_worker_of_a_pushed_back_query(colony):
    lc, t = colony
    plan = qplan.to_substrait(SLOW, {"particles": t.schema})
    objs = [lc.store("nic0").get("particles", "o0")]
    seen = _cancel_when_running(lc, "host", "q-back", lambda: lc.call("host", "query", "cancel", "q-back"))
    with pytest.raises(QueryCancelled):
        lc.call("host", "query", "run_pushed", plan, {"particles": objs}, query_id="q-back")
    seen["thread"].join()
    _assert_stopped(lc, "host", "q-back", seen["pid"])
    assert lc.call("host", "query", "load")["queue_depth"] == 0


def test_a_cancel_that_overtakes_its_query_refuses_it(colony):
    lc, t = colony
    plan = qplan.to_substrait(QUICK, {"particles": t.schema})
    assert lc.call("nic0", "query", "cancel", "q-early")["killed"] == []
    with pytest.raises(QueryCancelled, match="q-early"):
        lc.call("nic0", "query", "execute", plan, {"particles": "particles"}, "down", query_id="q-early")
    with pytest.raises(InvalidArgument, match="query_id"):
        lc.call("nic0", "query", "cancel", "")


def test_query_client_cancel_reaches_every_device_working_on_it(colony):
    lc, t = colony
    client = QueryClient(lc, "host", {"particles": TableSpec("particles", "particles", "*")})
    for placement, device in (("down", "nic0"), ("back", "host")):
        qid = f"client-{placement}"
        seen = _cancel_when_running(lc, device, qid, lambda qid=qid: client.cancel(qid))
        with pytest.raises(QueryCancelled):
            client.query(SLOW, placement, query_id=qid)
        seen["thread"].join()
        assert seen["killed"][device] == [seen["pid"]] and set(seen["killed"]) == {"host", "nic0"}
        _assert_stopped(lc, device, qid, seen["pid"])
        assert client.query(QUICK, placement).table["n"][0].as_py() == sum(x < 0.5 for x in t["x"].to_pylist())


def test_ctrl_c_in_the_query_client_cancels_it_on_the_device(colony):
    """What `colony query` does on Ctrl-C: the interrupted client cancels its query id."""
    import signal
    lc, t = colony
    client = QueryClient(lc, "host", {"particles": TableSpec("particles", "particles", "*")})
    main = threading.main_thread().ident
    seen: dict = {}

    def interrupt():
        seen["pid"] = _running(lc, "nic0", "ctrl-c")
        signal.pthread_kill(main, signal.SIGINT)          # as the terminal does, to the main thread
    # a shell starts background jobs with SIGINT ignored (CI may run us so): Ctrl-C as in a terminal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        th = threading.Thread(target=interrupt)
        th.start()
        with pytest.raises(KeyboardInterrupt):
            client.query(SLOW, "down", query_id="ctrl-c")
        th.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    stop = time.monotonic() + 10          # the call may run in another thread (LocalColony deadlines): it ends
    while time.monotonic() < stop:        # once the cancel has killed its worker
        w = lc.call("nic0", "query", "workers")
        if "ctrl-c" not in w["running"] and seen["pid"] not in w["live"]:
            break
        time.sleep(0.05)
    assert "ctrl-c" not in w["running"] and seen["pid"] not in w["live"] and not psutil.pid_exists(seen["pid"])
    plan = qplan.to_substrait(QUICK, {"particles": t.schema})
    with pytest.raises(QueryCancelled):                   # the device knows the id as cancelled
        lc.call("nic0", "query", "execute", plan, {"particles": "particles"}, "down", query_id="ctrl-c")
    assert client.query(QUICK, "down").table.num_rows == 1
