"""Settings of a device actor's process, applied when Ray starts it. They shape the
device's timings, so they are part of its fingerprint (:mod:`colony.runtime.fingerprint`):
changing one invalidates the calibrations made under it.

- ``MIMALLOC_PURGE_DELAY=5000``: Arrow's allocator (mimalloc) hands freed memory back to the
  OS after 10 ms by default, so every object a device stores after a drop faults its pages in
  again (a first touch ran at 0.2-1.4 GB/s against a 5 GB/s memcpy, `colony bench inject`,
  docs/runtime.md). A device keeps memory it freed for 5 s, so a stream of objects reuses
  touched pages; never returning it ran the 2-vCPU, 23.5 GiB machine into Ray's memory
  monitor once other work ran beside a 4.8 GB injection.
- Transparent huge pages stay as the kernel sets them in the device's own process: turning
  them off there cost injection ~10 % of the device's CPU (docs/runtime.md, "Process
  settings"); the query workers it forks turn them off for themselves
  (:mod:`colony.query.worker`).
- The garbage collector's heap is frozen once the device has started (:func:`freeze_heap`),
  and a query worker's once its imports are done. The ~136k objects of the libraries a
  device imports (DataFusion, pyarrow, scipy) are never garbage, yet every full collection
  walked them all, with the GIL held: whatever the device was doing waited. Over the 99
  TPC-DS queries on nic0 (first decision, then a pushed-down run; ``bench/gc_pauses.py``,
  3 runs each), its longest full collection took 88-109 ms and its slowest decision
  90-104 ms of CPU; frozen, 22-32 ms and 49-55 ms. Medians did not move. Not in the
  fingerprint: the calibration's medians of repeated runs are the same with it
  (docs/query.md, "Runs 154-159"). ``status`` reports the frozen objects and every
  generation's collections and pauses.
"""

from __future__ import annotations

import gc
import threading
import time

DEVICE_ENV = {"MIMALLOC_PURGE_DELAY": "5000"}


def settings() -> dict:
    """What the fingerprint records of a device process."""
    return {"env": dict(DEVICE_ENV)}


def freeze_heap() -> None:
    """Collect once, then move every object tracked so far to the collector's permanent
    generation: later collections skip them (they are still freed when their last reference
    goes). Called when a process's start-up is done (imports, services, models)."""
    gc.collect()
    gc.freeze()


class GcPauses:
    """The collector's pauses in this process, per generation: count, total and longest
    seconds (a collection holds the GIL, so every thread of the device waits it out)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._start: dict[int, float] = {}
        self.count, self.total_s, self.max_s = [0, 0, 0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]

    def __call__(self, phase: str, info: dict) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._start[threading.get_ident()] = now
            return
        t0 = self._start.pop(threading.get_ident(), None)
        g = info.get("generation", 2)
        if t0 is None or not 0 <= g <= 2:
            return
        with self._lock:
            self.count[g] += 1
            self.total_s[g] += now - t0
            self.max_s[g] = max(self.max_s[g], now - t0)

    def to_dict(self) -> dict:
        with self._lock:
            return {"frozen": gc.get_freeze_count(), "collections": list(self.count),
                    "pause_s": list(self.total_s), "longest_s": list(self.max_s)}


def watch_gc() -> GcPauses:
    """Record this process's collector pauses from now on (for a device's ``status``)."""
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    return pauses
