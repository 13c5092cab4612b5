"""Settings of a device actor's process, applied when it starts and inherited by the query
workers it forks. They shape the device's timings, so they are part of its fingerprint
(:mod:`colony.runtime.fingerprint`): changing one invalidates the calibrations made under it.

- ``MIMALLOC_PURGE_DELAY=5000``: Arrow's allocator (mimalloc) hands freed memory back to the
  OS after 10 ms by default, so every object a device stores after a drop faults its pages in
  again (a first touch ran at 0.2-1.4 GB/s against a 5 GB/s memcpy, `colony bench inject`,
  docs/runtime.md). A device keeps memory it freed for 5 s, so a stream of objects reuses
  touched pages; never returning it ran the 2-vCPU, 23.5 GiB machine into Ray's memory
  monitor once other work ran beside a 4.8 GB injection.
- **Transparent huge pages off** (``prctl(PR_SET_THP_DISABLE)``): with the kernel's THP on
  ``madvise`` and the allocators asking for huge pages, every purged range a device touched
  again was faulted back as whole 2 MiB pages, each zeroed (``clear_page_erms`` was 15 % of a
  device's CPU under ``perf``); a cold decision's Substrait decode then cost ~5 ms instead of
  0.1 ms (p90 of the cold estimate 5-7 ms), and 1M-row push-down queries ran 15 % slower than
  with 4 KiB pages (docs/query.md, "Device processes").
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

DEVICE_ENV = {"MIMALLOC_PURGE_DELAY": "5000"}
TRANSPARENT_HUGEPAGES = False

_PR_SET_THP_DISABLE = 41


def settings() -> dict:
    """What the fingerprint records of a device process."""
    return {"env": dict(DEVICE_ENV), "transparent_hugepages": TRANSPARENT_HUGEPAGES}


def apply() -> bool:
    """Apply the settings that are not environment variables to this process (a device
    actor's, at start). Returns whether huge pages are off; where the kernel has no such
    control (not Linux) it says so in the log and leaves them as they are."""
    if TRANSPARENT_HUGEPAGES or not sys.platform.startswith("linux"):
        return False
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0:
            return True
        log.warning("prctl(PR_SET_THP_DISABLE) failed (errno %d): transparent huge pages stay as the kernel "
                    "sets them", ctypes.get_errno())
    except (OSError, AttributeError) as e:
        log.warning("cannot turn transparent huge pages off in this process: %s", e)
    return False
