"""The measured contention a device prices is what others put on its cores: its own queries
that wait for a worker use no CPU and must not cancel it, and a burst that fills the cores
shows in the reading at once instead of being averaged away by the quiet seconds before it
(the storm benchmark: four emulated SmartNICs on one core read a stretch of 1 while each had
eight queries queued)."""

import threading
import time

import pytest

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.query import QueryClient
from colony.query.plan import TableSpec
from colony.runtime.local import LocalColony
from colony.services.cpu import CoreLoad

SLOW = "select count(*) as n from particles a, particles b where a.x < b.x"
QUICK = "select count(*) from particles where x < 0.5"


def _fed(samples: list[tuple[float, float]]) -> CoreLoad:
    """A sampler fed by hand: (age in seconds, share) pairs."""
    cl = CoreLoad()
    cl._thread = object()                       # no sampler thread
    cl.cores = 1
    now = time.monotonic()
    cl._samples.extend((now - age, share) for age, share in sorted(samples, reverse=True))
    return cl


def test_a_burst_shows_in_the_next_samples_not_after_the_window():
    e = CoreLoad().every_s
    quiet = [(e * i, 1.0) for i in range(1, 6)]            # the 2 s window of an idle core
    # fresh samples with four others on the core (a stretch of 5): a plain mean over the
    # window read 1.09, 1.19 and 1.32 after one, two and three of them (the old reading)
    burst = [(0.0, 0.2), (e, 0.2), (2 * e, 0.2)]
    assert _fed(quiet + burst[:1]).slowdown() > 1.5
    assert _fed(quiet[1:] + burst[:2]).slowdown() > 2.2
    assert _fed(quiet[2:] + burst).slowdown() > 2.8
    # and back: a quiet core after a busy spell reads close to quiet again within a few samples
    busy = [(e * i, 0.2) for i in range(3, 6)]
    assert _fed(busy + [(0.0, 1.0), (e, 1.0), (2 * e, 1.0)]).slowdown() < 1.6
    assert _fed([(0.5, 0.25), (0.5, 0.25)]).slowdown(own=1) == pytest.approx(3.0)   # all as old: the mean


class _Recording:
    """A core-load reading that records how much of it the service says is its own."""

    def __init__(self) -> None:
        self.own: list[float] = []

    def slowdown(self, own: float = 0.0) -> float:
        self.own.append(own)
        return 1.0

    def settled(self, own: float = 0.0) -> float:
        return 1.0


def test_queries_waiting_for_a_worker_are_not_counted_as_own_work_on_the_cores():
    lc = LocalColony(devices_config({
        "host": {"role": "host", "threads": 2, "services": {"query": {}}},
        "nic0": {"role": "smartnic", "threads": 1, "pools": ["particles"],
                 "services": {"query": {"isolate": True, "max_workers": 1}}}}))
    lc.store("nic0").put("particles", "o0", uniform(6_000, seed=3))
    svc = lc.host("nic0").services["query"]
    rec = _Recording()
    svc.cores = rec
    client = QueryClient(lc, "host", {"particles": TableSpec("particles", "particles", "*")})
    errors: list[BaseException] = []

    def run():
        try:
            client.query(SLOW, placement="down")
        except BaseException as e:           # noqa: BLE001 - reported by the assertion below
            errors.append(e)
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while not (svc._running == 3 and svc._workers.busy == 1) and time.monotonic() < deadline:
        time.sleep(0.005)                     # all three in a run: one executes, two wait for the worker
    assert svc._running == 3 and svc._workers.busy == 1
    rec.own.clear()
    client.query(QUICK, explain=True)
    for t in threads:
        t.join()
    assert not errors
    assert rec.own and max(rec.own) <= 1        # the executing one; the old count said 3
