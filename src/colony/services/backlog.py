"""Admitted work in measured seconds: what a service has taken on and not finished, and the
rate at which its cores actually get through a predicted second.

Each job enters with its predicted seconds (the decision engine's terms, online correction
included). Predictions can be far off for shapes the calibration under-covers (wide inputs
on the host: ~10x low in the storm), and a backlog summed in predicted seconds then looks
small, so a burst herds to it. While jobs run, the capacity they occupy is integrated
(thread-seconds, each job its fair share of the threads), and a finished job adds what it
occupied and its predicted seconds times the contention measured on the cores when it
started: the ratio of the two decaying sums is the measured rate, seconds per predicted second on quiet cores.
The backlog is reported in those seconds, so the wait a new job meets is what the cores
will really spend, with current contention applied on top by the caller.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass
class _Job:
    predicted: float
    measured: bool            # a prediction, not a stand-in: its completion is a rate sample
    started: float | None = None
    slowdown: float = 1.0
    used: float = 0.0         # thread-seconds it has occupied (its fair share of the threads)


class Backlog:
    """Jobs admitted and not done, and the measured rate (see the module docstring)."""

    def __init__(self, threads: int, decay: float = 0.9, min_samples: int = 3,
                 bounds: tuple[float, float] = (0.25, 20.0), clock=time.perf_counter) -> None:
        self.clock = clock
        self.threads = max(1, int(threads))
        self.decay, self.min_samples, self.bounds = decay, min_samples, bounds
        self._jobs: dict[int, _Job] = {}
        self._tickets = 0
        self._busy = 0.0          # decaying thread-seconds spent on measured jobs
        self._done = 0.0          # decaying predicted seconds they finished (times their contention)
        self._samples = 0
        self._t = clock()
        self._lock = threading.Lock()

    def _advance(self, now: float) -> None:
        running = [j for j in self._jobs.values() if j.started is not None]
        for j in running:
            j.used += (now - self._t) * min(len(running), self.threads) / len(running)
        self._t = now

    def add(self, seconds: float, start: bool = False, slowdown: float = 1.0, measured: bool = True) -> int:
        """Admit ``seconds`` of predicted work; ``measured=False`` for a stand-in (no prediction)."""
        with self._lock:
            now = self.clock()
            self._advance(now)
            self._tickets += 1
            self._jobs[self._tickets] = _Job(max(0.0, float(seconds)), measured,
                                             now if start else None, max(1.0, float(slowdown)))
            return self._tickets

    def __contains__(self, ticket: int | None) -> bool:
        return ticket in self._jobs

    def start(self, ticket: int, slowdown: float = 1.0) -> None:
        with self._lock:
            now = self.clock()
            self._advance(now)
            job = self._jobs.get(ticket)
            if job is not None:
                job.started, job.slowdown = now, max(1.0, float(slowdown))

    def finish(self, ticket: int, sample: bool = True) -> None:
        """The job is done: its predicted seconds count against the capacity it used.
        ``sample=False``: no rate sample (it waited for a worker process to start, a one-off
        its prediction does not cover: it counted 20x a 25-ms query's price into the rate)."""
        with self._lock:
            self._advance(self.clock())
            job = self._jobs.pop(ticket, None)
            if job is None or not sample or not job.measured or job.started is None or job.predicted <= 0:
                return
            # one job counts at most the rate's upper bound: a cold start must not swamp the sums
            self._busy = self._busy * self.decay + min(job.used, self.bounds[1] * job.predicted * job.slowdown)
            self._done = self._done * self.decay + job.predicted * job.slowdown
            self._samples += 1

    def drop(self, ticket: int | None) -> None:
        """The job never ran (refused, failed, cancelled): no rate sample."""
        with self._lock:
            self._advance(self.clock())
            self._jobs.pop(ticket, None)

    @property
    def samples(self) -> int:
        """Jobs finished with a prediction (the rate's evidence)."""
        return self._samples

    @property
    def rate(self) -> float:
        """Measured seconds per predicted second (1 until ``min_samples`` jobs finished)."""
        if self._samples < self.min_samples or self._done <= 0:
            return 1.0
        lo, hi = self.bounds
        return min(hi, max(lo, self._busy / self._done))

    def seconds(self) -> float:
        """Measured seconds still to do: each started job has progressed at its fair share."""
        with self._lock:
            now, rate = self.clock(), self.rate
            share = min(1.0, self.threads / max(1, len(self._jobs)))
            left = 0.0
            for j in self._jobs.values():
                work = j.predicted * (rate if j.measured else 1.0)
                left += work if j.started is None else max(0.0, work - (now - j.started) * share / j.slowdown)
            return float(left)

    def __len__(self) -> int:
        return len(self._jobs)
