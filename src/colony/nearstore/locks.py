"""Block locks on one device (the device side of COSTA).

COSTA orders operations without a scheduler: it locks the blocks an operation will
produce or consume, and any other operation that touches a locked block waits until the
holder unlocks it, then runs at once (a condition variable wakes it). Locks are kept as
block ranges, so locking a 512 MiB extent is one entry, not 131072.
"""

from __future__ import annotations

import threading
import time

from colony.errors import LockTimeout, NearStoreError


class BlockLocks:
    def __init__(self, timeout_s: float = 300.0) -> None:
        self.timeout_s = timeout_s
        self._held: list[tuple[int, int, str]] = []     # [start, stop) block range, holder
        self._cv = threading.Condition()
        self.waits = 0              # how many accesses had to wait for an unlock
        self.waited_s = 0.0

    def _conflicts(self, start: int, stop: int, requester: str | None) -> list[tuple[int, int, str]]:
        return [h for h in self._held if h[0] < stop and start < h[1] and h[2] != requester]

    def lock(self, start: int, stop: int, holder: str, timeout_s: float | None = None) -> None:
        """Hold blocks [start, stop) for ``holder``; waits if another holder has any of them."""
        if stop <= start:
            return
        self.wait(start, stop, holder, timeout_s)
        with self._cv:
            self._held.append((start, stop, holder))

    def unlock(self, holder: str, start: int | None = None, stop: int | None = None) -> int:
        """Release what ``holder`` holds (only within [start, stop) if given). Returns ranges freed."""
        with self._cv:
            keep, freed = [], 0
            for h in self._held:
                inside = start is None or (h[0] >= start and h[1] <= stop)
                if h[2] == holder and inside:
                    freed += 1
                else:
                    keep.append(h)
            self._held = keep
            self._cv.notify_all()
        return freed

    def wait(self, start: int, stop: int, requester: str | None,
             timeout_s: float | None = None) -> float:
        """Block until no other holder has a block of [start, stop). Returns seconds waited."""
        t0 = time.monotonic()
        limit = self.timeout_s if timeout_s is None else timeout_s
        with self._cv:
            if not self._conflicts(start, stop, requester):
                return 0.0
            self.waits += 1
            ok = self._cv.wait_for(lambda: not self._conflicts(start, stop, requester), limit)
            waited = time.monotonic() - t0
            self.waited_s += waited
            if not ok:
                who = sorted({h[2] for h in self._conflicts(start, stop, requester)})
                raise LockTimeout(f"{requester or 'a reader'} waited {waited:.1f}s for blocks "
                                  f"{start}..{stop} held by {who}; the COSTA policy must unlock them "
                                  f"(or raise lock_timeout_s)")
            return waited

    def held(self) -> list[tuple[int, int, str]]:
        with self._cv:
            return list(self._held)

    def check_holder(self, holder: str) -> None:
        if not holder:
            raise NearStoreError("a lock holder needs a non-empty name")
