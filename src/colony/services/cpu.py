"""How much of its own cores a device can get now, measured, for the decision engine's load terms.

A device runs on the cores its process may use; whatever else runs there (a sifting run on
the same SmartNIC, other devices sharing the core) stretches the queries it runs. Two
measurements, both of what the kernel gave this device's own threads, never of emulation
settings:

- **its running work** (:meth:`CoreLoad.watch`): while the device's queries run, the kernel's
  scheduler statistics of their threads (``/proc/<pid>/task/<tid>/schedstat``: time on a CPU
  and time runnable but waiting) say, every ``task_every_s``, which share of the time they
  wanted they got. Under fair scheduling that share tells how many tasks compete for the
  cores, so how many *others* (not the device's own threads) a new query would share them
  with. It is read from counters the kernel keeps anyway (~30 us a read), and it follows a
  burst within a tick: when the device's four neighbours on a shared core all start queries
  at once, the next tick shows it.
- **a probe** (when nothing of the device's runs): a daemon thread spins for a few
  milliseconds every ``every_s`` and records which share of that wall time it was actually
  on a CPU (``time.thread_time``): the share a new piece of work gets on these cores now.
  Its inverse, averaged over the last ``window_s``, is the stretch.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from typing import Callable, Iterable

_PROC = "/proc"


def task_times(pids: Iterable[int]) -> dict[int, tuple[int, int]]:
    """Thread id -> (ns on a CPU, ns runnable but waiting for one), for every thread of
    ``pids`` (those gone, or a kernel without scheduler statistics: left out)."""
    out: dict[int, tuple[int, int]] = {}
    for pid in pids:
        base = f"{_PROC}/{int(pid)}/task/"
        try:
            tids = os.listdir(base)
        except OSError:
            continue
        for tid in tids:
            try:
                fd = os.open(base + tid + "/schedstat", os.O_RDONLY)
                try:
                    f = os.read(fd, 128).split()
                finally:
                    os.close(fd)
                out[int(tid)] = (int(f[0]), int(f[1]))
            except (OSError, ValueError, IndexError):
                continue
    return out


def others_stretch(prev: dict[int, tuple[int, int]], cur: dict[int, tuple[int, int]], wall_s: float,
                   cores: int, min_busy: float = 0.2) -> float | None:
    """Stretch that everything but these threads puts on new work, from two readings of
    :func:`task_times` ``wall_s`` apart (None: the threads hardly ran, no evidence).

    The threads got ``s`` = on-CPU / runnable of the time they wanted; under fair scheduling
    ``N = cores / s`` tasks competed (when ``s`` < 1), ``n`` = runnable / wall of them ours,
    so a new query shares the cores with ``N - n`` others: stretch ``(N - n + 1) / cores``."""
    cpu = wait = 0
    for tid, (c1, w1) in cur.items():
        p = prev.get(tid)
        if p is not None:
            cpu += max(0, c1 - p[0])
            wait += max(0, w1 - p[1])
    run = cpu + wait
    if wall_s <= 0 or run < min_busy * wall_s * 1e9 or cpu <= 0:
        return None
    share = cpu / run
    if share >= 0.98:             # nothing kept them waiting: no one else wanted these cores
        return 1.0
    others = max(0.0, cores / share - run / (wall_s * 1e9))
    return max(1.0, (others + 1.0) / cores)


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

    def __init__(self, window_s: float = 2.0, every_s: float = 0.2, spin_s: float = 0.003,
                 task_every_s: float = 0.05, task_window_s: float = 0.2) -> None:
        self.window_s, self.every_s, self.spin_s = window_s, every_s, spin_s
        self.task_every_s, self.task_window_s = task_every_s, task_window_s
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self._samples: deque = deque()
        self._task_samples: deque = deque()          # (time, others' stretch) from the watched threads
        self._watched: list[Callable[[], Iterable[int]]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def close(self) -> None:
        self._stop.set()

    def watch(self, pids: Callable[[], Iterable[int]]) -> None:
        """Read the scheduler statistics of the processes ``pids()`` names (a service's
        query workers running now) while they run."""
        with self._lock:
            self._watched.append(pids)

    def probe(self) -> float:
        """Share 0..1 of ``spin_s`` of wall time this thread spent on a CPU."""
        w0, c0 = time.perf_counter(), time.thread_time()
        while time.perf_counter() - w0 < self.spin_s:
            pass
        return min(1.0, (time.thread_time() - c0) / max(time.perf_counter() - w0, 1e-9))

    def _watched_pids(self) -> set[int]:
        with self._lock:
            sources = list(self._watched)
        pids: set[int] = set()
        for f in sources:
            try:
                pids.update(int(p) for p in list(f()))
            except Exception:           # noqa: BLE001 - a source mid-change: read it next tick
                continue
        return pids

    def _run(self) -> None:
        next_probe = 0.0
        prev, t_prev = {}, time.perf_counter()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_probe:
                share = self.probe()
                with self._lock:
                    self._samples.append((now, share))
                    while self._samples and now - self._samples[0][0] > self.window_s:
                        self._samples.popleft()
                next_probe = now + self.every_s
            pids = self._watched_pids() if self._watched else ()
            cur, t_cur = (task_times(pids) if pids else {}), time.perf_counter()
            got = others_stretch(prev, cur, t_cur - t_prev, self.cores) if prev and cur else None
            prev, t_prev = cur, t_cur
            if got is not None:
                with self._lock:
                    self._task_samples.append((now, got))
                    while self._task_samples and now - self._task_samples[0][0] > self.task_window_s:
                        self._task_samples.popleft()
            self._stop.wait(self.task_every_s if self._watched else self.every_s)

    def _start(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="core-load", daemon=True)
                    self._thread.start()

    def measured(self) -> float:
        """Mean share a new thread got over the window (1 until the first sample)."""
        self._start()
        with self._lock:
            s = [x[1] for x in self._samples]
        return sum(s) / len(s) if s else 1.0

    def running(self) -> float | None:
        """Stretch from others measured on the watched work over the last ``task_window_s``
        (None: none of it ran then)."""
        self._start()
        cutoff = time.monotonic() - self.task_window_s
        with self._lock:
            s = [x[1] for x in self._task_samples if x[0] >= cutoff]
        return sum(s) / len(s) if s else None

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
        """Stretch of new work by everything else on these cores. While the caller's work
        runs: what its threads measured (others only). Otherwise the probe's stretch
        (1 / share) less what ``own`` running queries of the caller explain (they are priced
        through its backlog), at least 1."""
        got = self.running()
        if got is not None:
            return got
        return max(1.0, 1.0 / max(self.measured(), 0.02) - own / self.cores)
