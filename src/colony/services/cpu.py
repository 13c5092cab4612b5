"""How much of its own cores a device can get now, measured, for the decision engine's load terms.

A device runs on the cores its process may use; whatever else runs there (a sifting run on
the same SmartNIC, other devices sharing the core) stretches the queries it runs. A daemon
thread of the device's process spins for a few milliseconds every ``every_s`` and records
which share of that wall time it was actually on a CPU (``time.thread_time``): the share a
new piece of work gets on these cores now, under the kernel's fair scheduling. Its inverse,
averaged over the last ``window_s``, is the stretch. It never reads emulation settings:
only what the kernel gave this process's thread.
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

    def __init__(self, window_s: float = 2.0, every_s: float = 0.2, spin_s: float = 0.003) -> None:
        self.window_s, self.every_s, self.spin_s = window_s, every_s, spin_s
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self._samples: deque = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def close(self) -> None:
        self._stop.set()

    def probe(self) -> float:
        """Share 0..1 of ``spin_s`` of wall time this thread spent on a CPU."""
        w0, c0 = time.perf_counter(), time.thread_time()
        while time.perf_counter() - w0 < self.spin_s:
            pass
        return min(1.0, (time.thread_time() - c0) / max(time.perf_counter() - w0, 1e-9))

    def _run(self) -> None:
        while not self._stop.is_set():
            share = self.probe()
            now = time.monotonic()
            with self._lock:
                self._samples.append((now, share))
                while self._samples and now - self._samples[0][0] > self.window_s:
                    self._samples.popleft()
            self._stop.wait(self.every_s)

    def measured(self) -> float:
        """Mean share a new thread got over the window (1 until the first sample)."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="core-load", daemon=True)
                    self._thread.start()
        with self._lock:
            s = [x[1] for x in self._samples]
        return sum(s) / len(s) if s else 1.0

    def settled(self, own: float = 0.0) -> float:
        """:meth:`slowdown` over a window sampled from now on (waits ``window_s``): none of
        the caller's work that just ended is in it."""
        self.measured()
        time.sleep(self.window_s)
        with self._lock:
            cutoff = time.monotonic() - self.window_s
            s = [x[1] for x in self._samples if x[0] >= cutoff]
        share = sum(s) / len(s) if s else 1.0
        return max(1.0, 1.0 / max(share, 0.02) - own / self.cores)

    def slowdown(self, own: float = 0.0) -> float:
        """Stretch of new work by everything else on these cores: the measured stretch
        (1 / share) less what ``own`` running queries of the caller explain (they are priced
        through its backlog), at least 1."""
        return max(1.0, 1.0 / max(self.measured(), 0.02) - own / self.cores)
