"""The job-local store's device side (the seeds' BeeOND role): metadata for an ephemeral,
job-scoped file store whose data are ordinary objects in the devices' stores.

A file is a list of chunks striped over the members of one pool (TFT routing: chunk
``i`` of a file starting at tag ``s`` lives on member ``(s + i) % n``). Chunks are packed
objects, so every byte carries the codec's CRC32C and spills to the device's spill files
like any object. Chunks are written under the write's transaction keys
(``job/<job>/d/<txn>/<tag>``), which no reader ever looks up: a file becomes visible only
when the metadata device stores its manifest (one put, atomic in the store), after
checking every chunk is there. Commit replaces the previous version and drops its
chunks; an aborted or crashed write leaves only unreferenced transaction keys, which
:meth:`JobStore.gc` and the job's cleanup remove.

The metadata device is the first member (as BeeOND puts its metadata service on the
first node); every member runs this service so it can report its usage and clean up.
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
from typing import Any

import pyarrow as pa

from colony.errors import CommitRefused, JobStoreError, NoSuchFile, UnknownKey
from colony.services.base import DeviceContext, Service, endpoint, service

META_POOL = "jobmeta"


def chunk_prefix(job: str, txn: str | None = None) -> str:
    """Key prefix of a job's chunks (of one transaction when ``txn`` is given)."""
    return f"job/{job}/d/" + (f"{txn}/" if txn else "")


def chunk_key(job: str, txn: str, tag: int) -> str:
    return f"{chunk_prefix(job, txn)}{tag}"


def _txn_of(key: str) -> str:
    return key.split("/")[3]


@service
class JobStore(Service):
    name = "jobstore"

    def __init__(self, ctx: DeviceContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self._jobs: dict[str, dict] = {}          # job -> {"pool", "members", "open": {txn: t0}}
        self._lock = threading.RLock()
        ctx.store.create_pool(META_POOL)

    # -- jobs --------------------------------------------------------------------
    @endpoint
    def open(self, job: str, pool: str, members: list[str]) -> dict:
        """Start serving ``job``'s metadata here (idempotent; a restarted device re-learns it)."""
        if self.ctx.name not in members:
            raise JobStoreError(f"device {self.ctx.name!r} is not a member of pool {pool!r} ({members}); "
                                f"open the job on the pool's first member")
        with self._lock:
            j = self._jobs.setdefault(job, {"pool": pool, "members": list(members), "open": {}})
            if j["pool"] != pool:
                raise JobStoreError(f"job {job!r} already uses pool {j['pool']!r}, not {pool!r}; "
                                    f"pick another job id")
        return {"job": job, "pool": pool, "members": list(members), "metadata": self.ctx.name}

    def _job(self, job: str) -> dict:
        try:
            return self._jobs[job]
        except KeyError:
            raise JobStoreError(f"job {job!r} is not open on metadata device {self.ctx.name!r}; "
                                f"run `colony jobstore up --job {job}`") from None

    @endpoint
    def begin(self, job: str, txn: str) -> None:
        """Register a write in flight (so :meth:`gc` leaves its chunks alone)."""
        with self._lock:
            self._job(job)["open"][txn] = time.time()

    @endpoint
    def commit(self, job: str, path: str, manifest: dict) -> dict:
        """Publish ``path`` atomically once every chunk of its transaction is on its member."""
        j = self._job(job)
        txn, n = manifest["txn"], int(manifest["nchunks"])
        found = self._chunks(j, chunk_prefix(job, txn))
        tags = sorted(int(k.rsplit("/", 1)[1]) for k in found)
        want = list(range(manifest["start"], manifest["start"] + n))
        if tags != want:
            missing = sorted(set(want) - set(tags))[:5]
            raise CommitRefused(f"write of {path!r} (txn {txn}) has {len(tags)} of {n} chunks on the devices "
                                f"(missing tags {missing}...); nothing was published, write the file again")
        m = {**manifest, "path": path, "committed": time.time()}
        with self._lock:
            old = self._manifest(job, path, missing_ok=True)
            self.ctx.store.put(META_POOL, f"{job}/{path}", pa.table({"manifest": [json.dumps(m)]}))
            j["open"].pop(txn, None)
        if old is not None and old["txn"] != txn:
            self._drop(j, chunk_prefix(job, old["txn"]))
        return m

    @endpoint
    def abort(self, job: str, txn: str) -> int:
        """Drop a failed write's chunks on every member that answers; returns how many."""
        j = self._job(job)
        with self._lock:
            j["open"].pop(txn, None)
        return self._drop(j, chunk_prefix(job, txn))

    # -- files -------------------------------------------------------------------
    def _manifest(self, job: str, path: str, missing_ok: bool = False) -> dict | None:
        try:
            t = self.ctx.store.get_tables(META_POOL, f"{job}/{path}")[0]
        except UnknownKey:
            if missing_ok:
                return None
            raise NoSuchFile(f"job {job!r} has no committed file {path!r}; `colony jobstore ls --job {job}` "
                             f"lists them") from None
        return json.loads(t.column("manifest")[0].as_py())

    @endpoint
    def stat(self, job: str, path: str) -> dict:
        self._job(job)
        return self._manifest(job, path)

    @endpoint
    def list(self, job: str, prefix: str = "") -> list[dict]:
        self._job(job)
        keys = self.ctx.store.list(META_POOL, f"{job}/{prefix}")
        return [m for k in keys if (m := self._manifest(job, k[len(job) + 1:], missing_ok=True)) is not None]

    @endpoint
    def unlink(self, job: str, path: str) -> None:
        j = self._job(job)
        with self._lock:
            m = self._manifest(job, path)
            self.ctx.store.drop(META_POOL, f"{job}/{path}")
        self._drop(j, chunk_prefix(job, m["txn"]))

    @endpoint
    def gc(self, job: str) -> int:
        """Drop chunks no manifest references and no open write owns (left by crashed writes)."""
        j = self._job(job)
        n = 0
        live: set[str] = set()
        dead: set[str] = set()     # neither open nor committed: a txn never comes back from that
        for dev in j["members"]:
            try:
                keys = self.ctx.peers.call(dev, "objects", "list", j["pool"], chunk_prefix(job))
            except Exception:   # noqa: BLE001 - a member that does not answer keeps its orphans for now
                continue
            for k in keys:
                txn = _txn_of(k)
                if txn not in dead:
                    # decided now, not at the listing: a write that began (its chunk exists, so it
                    # registered first) or committed since then is live
                    if txn in live or txn in j["open"] or txn in {m["txn"] for m in self.list(job)}:
                        live.add(txn)
                        continue
                    dead.add(txn)
                n += self._drop_one(dev, j["pool"], k)
        return n

    @endpoint
    def close(self, job: str, keep: bool = False) -> dict:
        """End the job: drop every chunk and manifest (unless ``keep``) and forget the job."""
        j = self._job(job)
        files = len(self.ctx.store.list(META_POOL, f"{job}/"))
        dropped = 0
        if not keep:
            dropped = self._drop(j, chunk_prefix(job))
            for k in self.ctx.store.list(META_POOL, f"{job}/"):
                self.ctx.store.drop(META_POOL, k)
        with self._lock:
            self._jobs.pop(job, None)
        return {"job": job, "files": files, "kept": keep, "chunks_dropped": dropped}

    @endpoint
    def jobs(self) -> dict:
        with self._lock:
            return {k: {"pool": v["pool"], "members": v["members"], "open_writes": len(v["open"])}
                    for k, v in self._jobs.items()}

    # -- every member ------------------------------------------------------------
    @endpoint
    def usage(self, pool: str, job: str | None = None) -> dict:
        """This device's share of a job (or of every job) and the CPU its process used so far."""
        ents = self.ctx.store.entries(pool, chunk_prefix(job) if job else "job/")
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {"device": self.ctx.name, "pid": os.getpid(), "chunks": len(ents),
                "bytes": sum(e.nbytes for e in ents), "spilled": sum(e.spilled for e in ents),
                "cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime,
                "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}

    # -- helpers -----------------------------------------------------------------
    def _chunks(self, j: dict, prefix: str) -> list[str]:
        out: list[str] = []
        for dev in j["members"]:
            out += self.ctx.peers.call(dev, "objects", "list", j["pool"], prefix)
        return out

    def _drop_one(self, device: str, pool: str, key: str) -> int:
        """Drop one chunk on ``device``; 1 if it was there, 0 if it was already gone."""
        try:
            self.ctx.peers.call(device, "objects", "drop", pool, key)
            return 1
        except UnknownKey:
            return 0

    def _drop(self, j: dict, prefix: str) -> int:
        n = 0
        for dev in j["members"]:
            try:
                keys = self.ctx.peers.call(dev, "objects", "list", j["pool"], prefix)
            except Exception:   # noqa: BLE001 - a dead member's objects die with it (or gc later)
                continue
            for k in keys:
                n += self._drop_one(dev, j["pool"], k)
        return n
