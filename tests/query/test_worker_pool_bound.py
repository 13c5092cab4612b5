"""The query worker pool runs at most ``max_live`` workers at once and reuses them: a burst
of concurrent queries waits for warm workers instead of starting (and dropping) a Python
process per query, which made throughput collapse with concurrency (issue 16). A run that
waits still honours its deadline and a cancel."""

import os
import sys
import threading
import time

import pytest

from colony import codec
from colony.data import uniform
from colony.errors import QueryCancelled, QueryTimeout
from colony.query import plan as qplan
from colony.query.worker import WorkerPool

QUICK = "select particle_id & 15 as g, count(*) as n from particles where x < 0.5 group by g"
SLOW = "select count(*) as n from particles a, particles b where a.x < b.x"


@pytest.fixture(scope="module")
def data():
    t = uniform(40_000, seed=2)
    return t, codec.pack([t])


def _run(pool, plan, buf, **kw):
    return pool.run(plan, {"particles": [buf]}, threads=1, memory_limit=None, max_result_bytes=None,
                    cache=True, **{"timeout_s": 60, **kw})


def test_a_burst_reuses_a_bounded_set_of_workers(data):
    t, buf = data
    plan = qplan.to_substrait(QUICK, {"particles": t.schema})
    pool = WorkerPool(keep=2, prestart=False, max_live=2)
    pids, most = set(), [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            st = pool.state()
            pids.update(st["live"])
            most[0] = max(most[0], len(st["live"]))
            time.sleep(0.002)
    ref = qplan.run_sql_locally(QUICK, {"particles": [t]}).sort_by("g")
    results = []

    def client():
        for _ in range(5):
            results.append(codec.unpack_one(_run(pool, plan, buf)).sort_by("g"))
    w = threading.Thread(target=watch)
    w.start()
    clients = [threading.Thread(target=client) for _ in range(6)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    stop.set()
    w.join()
    try:
        assert len(results) == 30 and all(r.equals(ref) for r in results)
        assert most[0] <= 2                         # never more than max_live running
        assert len(pids) <= 2                       # the same two processes served all 30 queries
        st = pool.state()
        assert st["max_live"] == 2 and len(st["waited_s"]) == 30 and max(st["waited_s"]) > 0
    finally:
        pool.close()


def test_a_waiting_run_honours_its_deadline_and_a_cancel(data):
    t, buf = data
    slow = qplan.to_substrait(SLOW, {"particles": t.schema})
    quick = qplan.to_substrait(QUICK, {"particles": t.schema})
    pool = WorkerPool(keep=1, prestart=False, max_live=1)
    errors = []
    holder = threading.Thread(target=lambda: errors.append(pytest.raises(QueryCancelled, _run, pool, slow, buf,
                                                                         query_id="holder")))
    holder.start()
    try:
        stop = time.monotonic() + 60
        while not pool.state()["running"] and time.monotonic() < stop:
            time.sleep(0.02)
        with pytest.raises(QueryTimeout, match="waited .* for one of the device's 1 query workers"):
            _run(pool, quick, buf, timeout_s=0.3)
        waiter = threading.Thread(target=lambda: errors.append(pytest.raises(QueryCancelled, _run, pool, quick, buf,
                                                                             query_id="waiter")))
        waiter.start()
        time.sleep(0.3)
        pool.cancel("waiter")                       # cancelled while it waits: it stops waiting
        waiter.join(timeout=10)
        assert not waiter.is_alive()
        pool.cancel("holder")
        holder.join(timeout=30)
        assert len(errors) == 2
        assert codec.unpack_one(_run(pool, quick, buf)).num_rows == 16     # the pool serves again
    finally:
        pool.cancel("holder")
        pool.close()


def _thp_disabled(pid: int):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("THP_enabled:"):
                return line.split()[1] == "0"
    except OSError:
        pass
    return None                    # a kernel that does not report it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_THP_DISABLE is Linux's")
def test_workers_run_without_transparent_huge_pages(data):
    t, buf = data
    pool = WorkerPool(keep=1, prestart=False, max_live=1)
    try:
        _run(pool, qplan.to_substrait(QUICK, {"particles": t.schema}), buf)     # a worker has served a query
        pids = list(pool.live) or [w.pid for w in pool._idle]
        assert pids
        reported = _thp_disabled(os.getpid()) is not None       # this kernel says it per process
        for pid in pids:
            assert _thp_disabled(pid) is (True if reported else None)
    finally:
        pool.close()
