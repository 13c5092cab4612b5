"""The sifting service: one device's processing elements, reachable as endpoints.

Pure logic (no Ray): :class:`colony.sift.SiftNode` holds the state; this service adds
the device-to-device hand-off. ``publish`` sends each outbox part straight to the
device that owns it (``peers.call(owner, "sift", "deliver", key, object)``) and drops
it only when that call returned, i.e. when the receiver stored it.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from colony.services.base import Service, endpoint, service
from colony.sift import SiftNode, SiftPlan
from colony.errors import SiftError


_RUN = re.compile(r"^[A-Za-z0-9_\-]+$")


def _owned(obj):
    """A received object copied into this device's memory (not a view of the sender's or of a
    transport buffer): a delivery is a transfer, and the receiver must own what it acknowledges."""
    if isinstance(obj, (pa.Buffer, bytes, bytearray, memoryview)):
        src = np.frombuffer(obj, dtype=np.uint8)
        out = pa.allocate_buffer(len(src))
        np.copyto(np.frombuffer(out, dtype=np.uint8), src)
        return out
    return obj


@service
class SiftService(Service):
    name = "sift"

    def __init__(self, ctx, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.node: SiftNode | None = None
        self._run = "default"
        if "k" in options:
            self.configure(**options)

    def _need(self) -> SiftNode:
        if self.node is None:
            raise SiftError(f"sifting is not configured on {self.ctx.name!r}; call sift.configure(k, n_bins, members) first")
        return self.node

    @endpoint
    def configure(self, k: int, n_bins: int | None = None, members: list[str] | None = None,
                  routing: str = "low", threshold_rows: int = 1 << 20, threshold_bytes: int | None = None,
                  run: str = "default", fresh: bool = False, durable: bool = True) -> dict:
        """(Re)build this device's PEs for a plan.

        ``fresh``: start run ``run`` empty (drops this device's sifting state of any run).
        Otherwise state of the same run found on the workdir is recovered: that is how a
        device actor restarted by Ray resumes. ``durable``: mirror PE state on the
        workdir (needed to survive a restart; costs a local disk write per object).
        """
        if members is None:
            peers = self.ctx.peers
            members = [d.name for d in peers.devices()] if peers is not None else [self.ctx.name]
        plan = SiftPlan(k=int(k), n_bins=int(n_bins or len(members)), members=tuple(members), routing=routing)
        if not _RUN.match(run):
            raise SiftError(f"run name {run!r} may only use letters, digits, '_' and '-'")
        if self.node is not None:
            self.node.close()
            self.node = None
        root = Path(self.ctx.workdir) / "sift-runs" if self.ctx.workdir else None
        if fresh:
            store = self.ctx.store
            for pool in store.pools():
                if pool.startswith("sift."):
                    for key in store.list(pool):
                        store.drop(pool, key)
            if root is not None and root.exists():
                shutil.rmtree(root)
        self.node = SiftNode(self.ctx.name, plan, self.ctx.store,
                             workdir=root / run if (root is not None and durable) else None,
                             threshold_rows=threshold_rows, threshold_bytes=threshold_bytes,
                             threads=self.ctx.threads)
        self._run = run
        return {**plan.to_dict(), "run": run, "durable": self.node._disk is not None,
                "recovered": self.node.recovered}

    @endpoint
    def plan(self) -> dict:
        node = self._need()
        return {**node.plan.to_dict(), "run": self._run}

    @endpoint
    def inject(self, table: pa.Table | list[pa.Table], source: str, seq: int) -> str:
        """A simulation rank hands a snapshot to its local device's stage-1 PE."""
        return self._need().inject(table, source, seq)

    @endpoint
    def deliver(self, key: str, obj) -> bool:
        """Accept a part from another PE (idempotent by key); returning is the acknowledgement."""
        node = self._need()
        if node.seen(key):
            return False
        return node.accept(key, _owned(obj))

    @endpoint
    def compact(self, stage: int, force: bool = False) -> dict:
        return self._need().compact(stage, force=force)

    @endpoint
    def deliver_many(self, items: list[tuple[str, Any]]) -> list[bool]:
        """Accept several parts in one call (one round trip per destination device)."""
        return [self.deliver(key, obj) for key, obj in items]

    @endpoint
    def publish(self, stage: int | str | None = None, batch_bytes: int = 64 << 20) -> dict:
        """Deliver outbox parts to their owners; keep what was not acknowledged for a later retry.

        Parts for one owner travel together (up to ``batch_bytes`` per call); a part leaves
        the outbox only after the call that carried it returned (the owner stored it).
        """
        node = self._need()
        stats = {"objects": 0, "bytes": 0, "duplicates": 0, "failed": 0, "calls": 0, "publish_s": 0.0,
                 "errors": []}
        t0 = time.perf_counter()
        by_owner: dict[str, list[str]] = {}
        for key, owner in node.outbox(stage):
            by_owner.setdefault(owner, []).append(key)
        for owner, keys in by_owner.items():
            batches: list[list[tuple[str, pa.Buffer]]] = [[]]
            size = 0
            for key in keys:
                buf = node.outgoing(key)
                if batches[-1] and size + buf.size > batch_bytes:
                    batches.append([])
                    size = 0
                batches[-1].append((key, buf))
                size += buf.size
            for items in batches:
                try:
                    if owner == self.ctx.name:
                        fresh = [node.accept(key, buf) for key, buf in items]
                    else:
                        if self.ctx.peers is None:
                            raise SiftError(f"{self.ctx.name!r} has no peers to reach {owner!r}")
                        fresh = self.ctx.peers.call(owner, "sift", "deliver_many", items)
                        stats["calls"] += 1
                except Exception as e:   # receiver down or restarting: keep the parts, retry later
                    stats["failed"] += len(items)
                    stats["errors"].append(f"{owner}: {type(e).__name__}: {e}"[:300])
                    break
                for (key, buf), new in zip(items, fresh):
                    node.ack(key)
                    stats["objects"] += 1
                    stats["bytes"] += buf.size
                    stats["duplicates"] += 0 if new else 1
        stats["publish_s"] = time.perf_counter() - t0
        stats["pending"] = len(node.outbox(stage))
        return stats

    @endpoint
    def status(self) -> dict:
        return self._need().status()

    @endpoint
    def bins(self) -> dict[int, int]:
        return self._need().bins()

    @endpoint
    def bin(self, bin_id: int) -> pa.Table | None:
        return self._need().bin_table(int(bin_id))

    @endpoint
    def track(self, particle_id: int) -> pa.Table | None:
        return self._need().track(int(particle_id))


__all__ = ["SiftService"]
