"""Client side of sifting: configure the PEs, inject snapshots, move waves stage by stage,
and fetch tracks. Works over anything with ``call(device, service, method, ...)``: the
in-process :class:`colony.runtime.local.LocalColony` or a Ray colony from ``colony.connect``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from colony.errors import ServiceError
from colony.services.protocol import Colony
from colony.sift.node import sort_tracks
from colony.errors import SiftError
from colony.sift.plan import SiftPlan, bin_of


@dataclass
class StageReport:
    stage: int
    rows: int = 0
    parts: int = 0
    split_s: float = 0.0          # sum over PEs: concat + partition kernel
    pack_s: float = 0.0           # sum over PEs: serializing parts into objects
    publish_s: float = 0.0        # sum over PEs: delivering parts to their owners
    wall_split_s: float = 0.0     # wall time of the stage's compaction phase
    wall_publish_s: float = 0.0   # wall time of the stage's publish phase (with retries)
    objects: int = 0
    bytes: int = 0
    retries: int = 0
    duplicates: int = 0
    per_device_rows: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


Progress = Callable[[str, int, int], None]   # (phase, done, total)


class Sifter:
    """Drive one sifting run over ``members`` (devices that host the ``sift`` service)."""

    def __init__(self, colony: Colony, members: list[str], k: int = 4, n_bins: int | None = None,
                 routing: str = "low", threshold_rows: int = 1 << 20, threshold_bytes: int | None = None,
                 max_retries: int = 40, retry_wait_s: float = 0.25, run: str | None = None,
                 durable: bool = True, parallel: bool = True) -> None:
        self.colony = colony
        self.plan = SiftPlan(k=k, n_bins=n_bins or len(members), members=tuple(members), routing=routing)
        self.threshold_rows = threshold_rows
        self.threshold_bytes = threshold_bytes
        self.max_retries = max_retries
        self.retry_wait_s = retry_wait_s
        self.run_id = run or f"run-{int(time.time() * 1000)}"
        self.durable = durable
        # Fan calls out to every PE at once when the colony can (Ray); a LocalColony runs them in turn.
        self.parallel = parallel
        self._seq: dict[str, int] = {}
        self.configure()

    @classmethod
    def attach(cls, colony: Colony, devices: list[str], **kw) -> "Sifter":
        """A consumer's handle on the run the devices hold now (reads the plan; changes nothing)."""
        last: Exception | None = None
        for d in devices:
            try:
                plan = colony.call(d, "sift", "plan")
            except Exception as e:   # not placed / not configured here: ask the next device
                last = e
                continue
            self = cls.__new__(cls)
            self.colony = colony
            self.plan = SiftPlan.from_dict(plan)
            self.threshold_rows, self.threshold_bytes = kw.get("threshold_rows", 1 << 20), None
            self.max_retries, self.retry_wait_s = kw.get("max_retries", 40), kw.get("retry_wait_s", 0.25)
            self.run_id, self.durable, self.parallel = plan.get("run", "default"), True, False
            self._seq = {}
            return self
        raise SiftError(f"no device among {devices} holds a sifting run ({last}); run `colony sift run` first")

    def _call(self, device: str, method: str, *args, **kw):
        return self.colony.call(device, "sift", method, *args, **kw)

    def _call_retry(self, device: str, method: str, *args, **kw):
        """Calls that are safe to repeat (idempotent) survive a device restarting."""
        for attempt in range(self.max_retries + 1):
            try:
                return self._call(device, method, *args, **kw)
            except SiftError as e:
                if "not configured" in str(e) and attempt < self.max_retries:
                    self._configure_one(device)   # a restarted actor comes back unconfigured: it recovers
                    continue
                raise
            except ServiceError as e:
                # a run-time placement does not survive a device restart: place the service again
                if "not placed" in str(e) and attempt < self.max_retries:
                    self.colony.place("sift", [device])
                    self._configure_one(device)
                    continue
                raise
            except Exception:
                if attempt == self.max_retries:
                    raise
                time.sleep(self.retry_wait_s)

    def _configure_one(self, device: str, fresh: bool = False) -> dict:
        return self._call(device, "configure", self.plan.k, self.plan.n_bins, list(self.plan.members),
                          self.plan.routing, self.threshold_rows, self.threshold_bytes, run=self.run_id,
                          fresh=fresh, durable=self.durable)

    def configure(self) -> None:
        """Start this run empty on every member."""
        for d in self.plan.members:
            self._configure_one(d, fresh=True)

    def _fanout(self, method: str, *args) -> dict[str, Any]:
        """Call ``method`` on every member; in parallel when the colony supports it. A device that
        fails (restarting) is retried on its own."""
        out: dict[str, Any] = {}
        if self.parallel:
            futs = {d: self.colony.call_async(d, "sift", method, *args) for d in self.plan.members}
            for d, f in futs.items():
                try:
                    out[d] = self.colony.wait(f)
                except Exception:
                    out[d] = self._call_retry(d, method, *args)
            return out
        return {d: self._call_retry(d, method, *args) for d in self.plan.members}

    # -- input ---------------------------------------------------------------
    def inject(self, table: pa.Table, device: str, source: str | None = None, seq: int | None = None) -> str:
        """Inject a snapshot into ``device``'s stage-1 PE. (source, seq) must be unique per run."""
        source = source or f"client-{device}"
        if seq is None:
            seq = self._seq.get(source, 0)
        self._seq[source] = max(self._seq.get(source, 0), seq + 1)
        return self._call_retry(device, "inject", table, source, seq)

    # -- waves ---------------------------------------------------------------
    def run_stage(self, stage: int, force: bool = True, progress: Progress | None = None) -> StageReport:
        """Compact ``stage`` on every PE, then publish until every part is acknowledged."""
        rep = StageReport(stage)
        members = self.plan.members
        t0 = time.perf_counter()
        results = self._fanout("compact", stage, force)
        for i, d in enumerate(members):
            st = results[d]
            rep.rows += st["rows"]
            rep.parts += st["parts"]
            rep.split_s += st["split_s"]
            rep.pack_s += st["pack_s"]
            rep.per_device_rows[d] = st["rows"]
            if progress:
                progress(f"stage {stage} split", i + 1, len(members))
        rep.wall_split_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self._publish_all(rep, progress, f"stage {stage} publish")
        rep.wall_publish_s = time.perf_counter() - t0
        return rep

    def _publish_all(self, rep: StageReport, progress: Progress | None, label: str) -> None:
        pending = list(self.plan.members)
        for attempt in range(self.max_retries + 1):
            still = []
            if self.parallel:
                futs = {d: self.colony.call_async(d, "sift", "publish") for d in pending}
            for i, d in enumerate(pending):
                try:
                    st = self.colony.wait(futs[d]) if self.parallel else self._call_retry(d, "publish")
                except Exception:
                    try:
                        st = self._call_retry(d, "publish")
                    except Exception:
                        still.append(d)
                        continue
                rep.objects += st["objects"]
                rep.bytes += st["bytes"]
                rep.publish_s += st["publish_s"]
                rep.duplicates += st["duplicates"]
                if st["pending"]:
                    still.append(d)
                if progress:
                    progress(label, len(self.plan.members) - len(pending) + i + 1, len(self.plan.members))
            if not still:
                return
            rep.retries += 1
            pending = still
            time.sleep(self.retry_wait_s)
        raise SiftError(f"parts on {pending} were not acknowledged after {self.max_retries} retries; "
                        "check that every member device is up, then call run() again (nothing is lost)")

    def run(self, progress: Progress | None = None) -> list[StageReport]:
        """Move everything injected so far through all stages into the final bins (impulse response)."""
        return [self.run_stage(s, force=True, progress=progress) for s in range(1, self.plan.stages + 1)]

    def pump(self) -> list[StageReport]:
        """Streaming step: compact only the PEs over their threshold, publish what is ready."""
        return [self.run_stage(s, force=False) for s in range(1, self.plan.stages + 1)]

    # -- output --------------------------------------------------------------
    def bin_owner(self, bin_id: int) -> str:
        return self.plan.bin_owner(bin_id)

    def bin(self, bin_id: int) -> pa.Table | None:
        """One final bin as tracks (sorted by particle_id, time)."""
        if not 0 <= bin_id < self.plan.total_bins:
            raise SiftError(f"bin {bin_id} out of range 0..{self.plan.total_bins - 1}")
        return self._call_retry(self.bin_owner(bin_id), "bin", bin_id)

    def track(self, particle_id: int) -> pa.Table | None:
        """Every record of one particle, in time order, from the device that holds its bin."""
        b = int(bin_of(np.array([particle_id], dtype=np.uint64), self.plan)[0])
        return self._call_retry(self.bin_owner(b), "track", particle_id)

    def bins(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for d in self.plan.members:
            out.update(self._call_retry(d, "bins"))
        return out

    def status(self) -> dict[str, dict]:
        return {d: self._call_retry(d, "status") for d in self.plan.members}

    def all_tracks(self) -> pa.Table:
        """Every final bin concatenated (for checks and small runs)."""
        tables = [t for b in sorted(self.bins()) if (t := self.bin(b)) is not None]
        return sort_tracks(pa.concat_tables(tables)) if tables else None
