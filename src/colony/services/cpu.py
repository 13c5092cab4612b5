"""How much of its own cores a device can get now, measured, for the decision engine's load terms.

A device runs on the cores its process may use; whatever else runs there (a sifting run on
the same SmartNIC, other devices sharing the core) stretches the queries it runs. A daemon
thread of the device's process does a few milliseconds of CPU work every ``every_s`` and
records which share of the wall time that took it was actually on a CPU
(``time.thread_time``): the share a new piece of work gets on these cores now, under the
kernel's fair scheduling. The mean of its inverse over the last ``window_s`` is the stretch.
It never reads emulation settings: only what the kernel gave this process's thread.

The probe times a fixed amount of CPU, not of wall time, after a warm-up of ``warm_s`` of CPU
it does not count: a thread that wakes from sleep runs ahead of the others queued on its core
(the scheduler credits its sleep), so a 3-ms wall-time spin mostly ended before any of them
ran. Read against the stretch of 20 ms of CPU work on the same core (this VM, 2 s windows):

================================  ==========  ==========================  ===================
load on the core                  20 ms work  3-ms spins, mean share      this probe and mean
================================  ==========  ==========================  ===================
2 processes spinning              2.95-3.02   1.68-1.96                   2.75-3.29
4 processes spinning              4.82-5.01   3.66-4.12                   3.99-4.50
4 busy 20 ms / asleep 20 ms       2.28-3.09   1.51-2.05                   2.59-3.11
2 spinning, 2 bursty              3.82-4.15   2.18-2.38                   3.05-4.30
================================  ==========  ==========================  ===================
(3-4 windows each; "mean share" is the old sampler, "mean" the mean stretch, :meth:`CoreLoad._share`.)
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque


class CoreLoad:
    """Measured stretch of new work on this process's cores (started on first use). One
    sampler per process and core set (:meth:`shared`); each service discounts its own work."""

    _shared: dict = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls) -> "CoreLoad":
        key = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()
        with cls._shared_lock:
            if key not in cls._shared:
                cls._shared[key] = cls()
            return cls._shared[key]

    def __init__(self, window_s: float = 2.0, every_s: float = 0.25, spin_s: float = 0.003,
                 warm_s: float = 0.001) -> None:
        self.window_s, self.every_s, self.spin_s, self.warm_s = window_s, every_s, spin_s, warm_s
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self._samples: deque = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def close(self) -> None:
        self._stop.set()

    # a probe on a core shared 50 ways stops waiting (share 0.02, the stretch's floor)
    MAX_WAIT = 50.0

    def probe(self) -> float:
        """Share 0..1 of the wall time this thread took to get ``spin_s`` of CPU (at most
        ``MAX_WAIT`` times that in wall time) that it spent on a CPU, after ``warm_s`` of CPU
        that uses up its wake-up credit."""
        pc, tt = time.perf_counter, time.thread_time
        c0, cap = tt(), self.spin_s * self.MAX_WAIT
        w0 = pc()
        while tt() - c0 < self.warm_s and pc() - w0 < cap:
            pass
        w0, c0 = pc(), tt()
        while tt() - c0 < self.spin_s and pc() - w0 < cap:
            pass
        return min(1.0, (tt() - c0) / max(pc() - w0, 1e-9))

    def _run(self) -> None:
        while not self._stop.is_set():
            share = self.probe()
            now = time.monotonic()
            with self._lock:
                self._samples.append((now, share))
                while self._samples and now - self._samples[0][0] > self.window_s:
                    self._samples.popleft()
            self._stop.wait(self.every_s)

    @staticmethod
    def _share(shares: list) -> float:
        """The share that the mean stretch (1 / share) of the samples implies (1 without any):
        under bursty load (four processes each busy 20 ms then asleep 20 ms, a new thread's
        stretch ~3) half the probes land in a quiet gap, and a mean of shares read 1.0-2.0
        where the mean stretch read 3.0-3.1."""
        return len(shares) / sum(1.0 / max(x, 0.02) for x in shares) if shares else 1.0

    def measured(self) -> float:
        """The share a new thread got over the window (1 until the first sample), see :meth:`_share`."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="core-load", daemon=True)
                    self._thread.start()
        with self._lock:
            s = [x[1] for x in self._samples]
        return self._share(s)

    def settled(self, own: float = 0.0) -> float:
        """:meth:`slowdown` over a window sampled from now on (waits ``window_s``): none of
        the caller's work that just ended is in it."""
        self.measured()
        time.sleep(self.window_s)
        with self._lock:
            cutoff = time.monotonic() - self.window_s
            s = [x[1] for x in self._samples if x[0] >= cutoff]
        return max(1.0, 1.0 / max(self._share(s), 0.02) - own / self.cores)

    def slowdown(self, own: float = 0.0) -> float:
        """Stretch of new work by everything else on these cores: the measured stretch
        (1 / share) less what ``own`` running queries of the caller explain (they are priced
        through its backlog), at least 1."""
        return max(1.0, 1.0 / max(self.measured(), 0.02) - own / self.cores)
