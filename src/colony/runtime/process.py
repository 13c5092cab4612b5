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
"""

from __future__ import annotations

DEVICE_ENV = {"MIMALLOC_PURGE_DELAY": "5000"}


def settings() -> dict:
    """What the fingerprint records of a device process."""
    return {"env": dict(DEVICE_ENV)}
