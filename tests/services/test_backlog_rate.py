"""The admitted backlog in measured seconds: the rate is learnt from the capacity finished
jobs used per predicted second, and the backlog a new job waits behind is scaled by it."""

import pytest

from colony.decide import HostLoad
from colony.services.backlog import Backlog


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _run(b, clock, predicted, took, n=1, slowdown=1.0):
    """n jobs of ``predicted`` seconds each, run together for ``took`` seconds of wall time."""
    tickets = [b.add(predicted, start=True, slowdown=slowdown) for _ in range(n)]
    clock.t += took
    for t in tickets:
        b.finish(t)


def test_rate_is_measured_seconds_per_predicted_second_and_scales_the_backlog():
    clock = Clock()
    b = Backlog(threads=1, clock=clock)
    b.add(0.1)
    assert b.rate == 1.0 and b.seconds() == pytest.approx(0.1)   # nothing finished yet: predictions as they are
    b.drop(1)
    for _ in range(5):                       # each predicted 0.05 s took 0.5 s alone on the one thread
        _run(b, clock, 0.05, 0.5)
    assert b.rate == pytest.approx(10.0)
    b.add(0.05)
    b.add(0.05)
    assert b.seconds() == pytest.approx(1.0)     # what the host will really spend on the two admitted


def test_concurrent_jobs_share_the_threads_and_contention_is_not_counted_as_model_error():
    clock = Clock()
    b = Backlog(threads=2, clock=clock)
    for _ in range(4):                       # 4 jobs of 0.1 s on 2 threads finish together after 0.2 s
        _run(b, clock, 0.1, 0.2, n=4)
    assert b.rate == pytest.approx(1.0)
    c = Backlog(threads=1, clock=clock)
    for _ in range(4):                       # half the core taken by others (measured): twice as long
        _run(c, clock, 0.1, 0.2, slowdown=2.0)
    assert c.rate == pytest.approx(1.0)


def test_dropped_and_stand_in_jobs_teach_nothing_and_the_rate_is_bounded():
    clock = Clock()
    b = Backlog(threads=1, clock=clock, min_samples=3)
    for _ in range(2):
        _run(b, clock, 0.01, 1.0)
    assert b.rate == 1.0                     # fewer than min_samples finished
    t = b.add(0.01, start=True)
    clock.t += 5.0
    b.drop(t)                                # refused/failed work: no sample
    assert b.rate == 1.0
    s = b.add(0.3, start=True, measured=False)   # a stand-in (the mean service time) is not predicted work
    clock.t += 0.3
    b.finish(s)
    assert b.rate == 1.0
    _run(b, clock, 0.01, 1.0)
    assert b.rate == pytest.approx(20.0)     # 100x measured: each job counts at most the bound
    b.add(0.5, measured=False)
    assert b.seconds() == pytest.approx(0.5)     # stand-ins are already in measured seconds


def test_a_started_job_counts_down_at_its_fair_share():
    clock = Clock()
    b = Backlog(threads=1, clock=clock)
    for _ in range(3):
        _run(b, clock, 0.1, 0.2)             # rate 2
    b.add(0.1, start=True)
    b.add(0.1, start=True)
    clock.t += 0.1                           # two jobs on one thread: 0.05 s each done
    assert b.seconds() == pytest.approx(2 * (0.2 - 0.05))


def test_host_wait_is_the_measured_backlog_over_threads_stretched_by_contention():
    assert HostLoad(threads=2, backlog_s=1.0, slowdown=1.5, rate=10.0).wait_s() == pytest.approx(0.75)


def test_one_cold_start_does_not_swamp_the_rate():
    clock = Clock()
    b = Backlog(threads=1, clock=clock)
    _run(b, clock, 0.01, 5.0)                # a worker process started: 500x the prediction
    for _ in range(5):
        _run(b, clock, 0.01, 0.02)           # warm: 2x
    assert b.rate < 6.0                      # the outlier counted as 20x, not 500x, and decays


def test_bounds_of_one_keep_predicted_seconds():
    clock = Clock()
    b = Backlog(threads=1, clock=clock, bounds=(1.0, 1.0))
    for _ in range(4):
        _run(b, clock, 0.01, 1.0)
    b.add(0.5)
    assert b.rate == 1.0 and b.seconds() == pytest.approx(0.5)
