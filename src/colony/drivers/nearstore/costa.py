"""COSTA, host side: orchestrates computational-storage sub-operations with block locks.

There is no dependency graph: the default policy (the thesis' default orchestration)
locks every block the operations will touch, each block held by the first operation
that touches it, issues all operations at once, and unlocks an operation's blocks when
it completes. An operation that needs a block another one still holds waits on the
device and starts the moment it is unlocked; so sorts and merges are issued together
and the merges begin as their inputs become ready. A ``policy`` callback replaces this
default, getting the same primitives (lock, unlock, issue, wait).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from colony.errors import NearStoreError
from colony.nearstore.address import Extent, decode
from colony.services.protocol import Colony


@dataclass
class SubOp:
    """One computational-storage command for one device (an oas_descriptor)."""

    id: str
    device: str
    op: str
    inputs: list[Extent]
    output: Extent | None = None
    params: dict = field(default_factory=dict)
    phase: str = "op"
    result: dict | None = None

    def extents(self) -> list[Extent]:
        return list(self.inputs) + ([self.output] if self.output is not None else [])


Policy = Callable[["Costa", list[SubOp]], None]


class Costa:
    def __init__(self, client: Colony, directory: dict[int, str], service: str = "nearstore") -> None:
        self.client = client
        self.directory = dict(directory)
        self.service = service
        self.events: list[tuple[float, str, str]] = []     # (time, event, op id) for tracing
        self._ev_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    # -- primitives -----------------------------------------------------------
    def owner(self, ext: Extent) -> str:
        dev = decode(ext.addr)[0]
        try:
            return self.directory[dev]
        except KeyError:
            raise NearStoreError(f"extent {ext} is on device id {dev}, which is not in this "
                                 f"COSTA's directory {self.directory}") from None

    def _event(self, what: str, op_id: str) -> None:
        with self._ev_lock:
            self.events.append((time.time(), what, op_id))

    def lock(self, ext: Extent, holder: str) -> None:
        self.client.call(self.owner(ext), self.service, "lock", ext, holder)
        self._event("lock", holder)

    def unlock(self, holder: str, exts: list[Extent] | None = None) -> None:
        """Release ``holder``'s locks on the devices of ``exts`` (all devices if None)."""
        devices = sorted({self.owner(e) for e in exts}) if exts else sorted(set(self.directory.values()))
        for dev in devices:
            self.client.call(dev, self.service, "unlock", holder)
        self._event("unlock", holder)

    def issue(self, sub: SubOp, after: Callable[[SubOp], None] | None = None) -> Future:
        """Send ``sub`` to its device without waiting; ``after`` runs when it completes."""
        if self._pool is None:
            raise NearStoreError("Costa.issue is only valid inside Costa.run (no worker pool)")

        def go() -> SubOp:
            self._event("issue", sub.id)
            try:
                sub.result = self.client.call(
                    sub.device, self.service, "run", sub.id, sub.op, sub.inputs, sub.output,
                    params=sub.params, phase=sub.phase, directory=self.directory)
                sub.output = sub.result["output"]
                self._event("done", sub.id)
            finally:
                if after is not None:
                    after(sub)
            return sub
        return self._pool.submit(go)

    @staticmethod
    def wait(futures: list[Future]) -> list[SubOp]:
        """Wait for every future; raise the first failure after all have settled."""
        out, err = [], None
        for f in futures:
            try:
                out.append(f.result())
            except BaseException as e:  # noqa: BLE001 - re-raised below
                err = err or e
        if err is not None:
            raise err
        return out

    # -- running a plan --------------------------------------------------------
    def run(self, subs: list[SubOp], policy: Policy | None = None) -> list[SubOp]:
        """Run sub-operations under ``policy`` (default: :func:`lock_all_policy`)."""
        # every sub-op may wait on a lock while holding a worker, so one worker each
        with ThreadPoolExecutor(max_workers=max(1, len(subs)), thread_name_prefix="costa") as pool:
            self._pool = pool
            try:
                (policy or lock_all_policy)(self, subs)
            finally:
                self._pool = None
        return subs


def lock_plan(subs: list[SubOp]) -> dict[Extent, str]:
    """Each extent is held by the first sub-operation (in plan order) that touches it."""
    holders: dict[Extent, str] = {}
    for sub in subs:
        for ext in sub.extents():
            holders.setdefault(ext, sub.id)
    return holders


def lock_all_policy(costa: Costa, subs: list[SubOp]) -> None:
    """The thesis' default: lock all blocks, issue everything, unlock each op's blocks when
    it completes (so an op waiting on them starts at once)."""
    holders = lock_plan(subs)
    held_by: dict[str, list[Extent]] = {}
    for ext, holder in holders.items():
        costa.lock(ext, holder)
        held_by.setdefault(holder, []).append(ext)
    futures = [costa.issue(s, after=lambda s: costa.unlock(s.id, held_by.get(s.id, [])))
               for s in subs]
    costa.wait(futures)


def sequential_policy(costa: Costa, subs: list[SubOp]) -> None:
    """No locks: run one sub-operation after another (a callback example, and a baseline)."""
    for s in subs:
        costa.wait([costa.issue(s)])
