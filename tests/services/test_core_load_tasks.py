"""The contention a device's running queries meet is read from the kernel's scheduler
statistics of their threads, within a tick: the probe's seconds-long average missed the
start of a burst (storm runs 20-21: four emulated SmartNICs on one core priced their queries
at a fifth of what they took), and its share under-read many competitors."""

import os
import subprocess
import sys
import threading
import time

import pytest

from colony import codec
from colony.data import uniform
from colony.errors import QueryTimeout
from colony.query import plan as qplan
from colony.query.worker import WorkerPool
from colony.services.cpu import CoreLoad, others_stretch, task_times

MS = 1_000_000


def test_others_stretch_counts_competitors_not_our_own_threads():
    # one thread of ours got a quarter of the 100 ms it wanted on one core: three others
    assert others_stretch({1: (0, 0)}, {1: (25 * MS, 75 * MS)}, 0.1, cores=1) == pytest.approx(4.0)
    # two threads of ours shared one core between themselves: nobody else
    assert others_stretch({1: (0, 0), 2: (0, 0)}, {1: (50 * MS, 50 * MS), 2: (50 * MS, 50 * MS)},
                          0.1, cores=1) == pytest.approx(1.0)
    # two cores, one thread of ours and two others: a new query shares them with the two
    assert others_stretch({1: (0, 0)}, {1: (int(66.7 * MS), int(33.3 * MS))}, 0.1, cores=2) == \
        pytest.approx(1.5, rel=0.01)
    # never waited: 1; hardly ran (or a thread only in one reading): no evidence
    assert others_stretch({1: (0, 0)}, {1: (90 * MS, 0)}, 0.1, cores=1) == 1.0
    assert others_stretch({1: (0, 0)}, {1: (5 * MS, 5 * MS)}, 0.1, cores=1) is None
    assert others_stretch({1: (0, 0)}, {2: (90 * MS, 10 * MS)}, 0.1, cores=1) is None


def _schedstat() -> bool:
    return os.path.exists(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/schedstat") and \
        hasattr(os, "sched_setaffinity")


@pytest.mark.skipif(not _schedstat(), reason="no per-thread scheduler statistics on this kernel")
def test_a_watched_process_sees_the_others_on_its_core_within_a_tick():
    core = min(os.sched_getaffinity(0))
    spin = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    ours = subprocess.Popen([sys.executable, "-c", spin])
    hogs = []
    cl = CoreLoad(task_every_s=0.05, task_window_s=0.2)
    try:
        cl.watch(lambda: [ours.pid])
        time.sleep(0.5)
        alone = cl.slowdown()
        assert set(task_times([ours.pid])) and alone < 1.3       # our spinner alone on its core
        hogs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(3)]
        time.sleep(0.6)                                          # a few ticks, not the probe's 2 s window
        busy = cl.slowdown()
        assert 2.5 < busy < 6.0                                  # three others: stretch ~4
        assert cl.running() == pytest.approx(busy)
    finally:
        cl.close()
        for p in [ours] + hogs:
            p.kill()
            p.wait()


@pytest.mark.skipif(not _schedstat(), reason="no per-thread scheduler statistics on this kernel")
def test_a_pools_running_workers_are_what_is_watched():
    t = uniform(40_000, seed=2)
    buf = codec.pack([t])
    plan = qplan.to_substrait("select count(*) as n from particles a, particles b where a.x < b.x",
                              {"particles": t.schema})
    pool = WorkerPool(keep=1, prestart=False, max_live=1)
    cl = CoreLoad(task_every_s=0.05, task_window_s=0.2)
    cl.watch(pool.live_pids)
    seen = []

    def run():
        with pytest.raises(QueryTimeout):
            pool.run(plan, {"particles": [buf]}, threads=1, memory_limit=None, max_result_bytes=None,
                     timeout_s=3.0)
    try:
        assert cl.running() is None                              # nothing of ours runs
        th = threading.Thread(target=run)
        th.start()
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline and not seen:
            time.sleep(0.05)
            if pool.live_pids() and cl.running() is not None:
                seen.append(cl.running())
        th.join()
        assert seen and seen[0] >= 1.0                           # read from the worker's threads
        assert pool.live_pids() == []
    finally:
        cl.close()
        pool.close()
