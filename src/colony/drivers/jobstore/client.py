"""Client of the job-local store (see :mod:`colony.services.jobstore` for the design).

    with JobStore.up(colony, "job42", pool="default") as js:   # places the service, opens the job
        js.write("ckpt/0001", data)                            # striped, checksummed, atomic commit
        assert js.read("ckpt/0001") == data
    # leaving the block ends the job: every chunk and manifest is dropped (keep=True keeps them)

Chunk bytes travel with ``colony.put``/``colony.get`` (the runtime's data plane paces and
counts them); metadata with ``colony.call`` to the metadata device.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import crc32c as _crc
import pyarrow as pa

from colony.errors import ChecksumMismatch, ColonyError, JobStoreError, ServiceError, WriteFailed
from colony.services.jobstore import chunk_key
from colony.services.protocol import Colony
from colony.store import stable_hash

DEFAULT_CHUNK = 1 << 20


def _chunk_table(data: bytes | memoryview) -> pa.Table:
    """One chunk as a one-row binary column (zero-copy over ``data``)."""
    buf = pa.py_buffer(data)
    offsets = pa.py_buffer(pa.array([0, buf.size], pa.int32()).buffers()[1])
    return pa.table({"data": pa.Array.from_buffers(pa.binary(), 1, [None, offsets, buf])})


def _chunk_bytes(tables: list[pa.Table]) -> pa.Buffer:
    return tables[0].column("data").chunk(0)[0].as_buffer()


class JobStore:
    """One job's files, striped over the members of ``pool``."""

    def __init__(self, colony: Colony, job: str, pool: str = "default", *, chunk_size: int = DEFAULT_CHUNK,
                 keep: bool = False, threads: int | None = None) -> None:
        self.colony, self.job, self.pool = colony, job, pool
        self.members = [d.name for d in colony.devices() if pool in d.pools]
        if not self.members:
            raise JobStoreError(f"no device holds pool {pool!r}; choose a pool of the colony's config "
                                f"(`colony status` shows them)")
        self.metadata = self.members[0]
        self.chunk_size = int(chunk_size)
        self.keep = keep
        self._pool = ThreadPoolExecutor(max_workers=threads or min(8, 2 * len(self.members)),
                                        thread_name_prefix=f"jobstore-{job}")
        self.closed = False

    @classmethod
    def up(cls, colony: Colony, job: str, pool: str = "default", **kw: Any) -> "JobStore":
        """Place the service on the pool's members where it is not running yet, and open the job."""
        js = cls(colony, job, pool, **kw)
        for dev in js.members:
            try:
                colony.call(dev, "jobstore", "jobs")
            except ServiceError:
                colony.place("jobstore", [dev])
        colony.call(js.metadata, "jobstore", "open", job, pool, js.members)
        return js

    def _meta(self, method: str, *args: Any, **kw: Any) -> Any:
        return self.colony.call(self.metadata, "jobstore", method, self.job, *args, **kw)

    # -- writing -------------------------------------------------------------------
    def open_write(self, path: str, on_chunk: Callable[[int], None] | None = None) -> "Writer":
        return Writer(self, path, on_chunk)

    def write(self, path: str, data: bytes | memoryview, on_chunk: Callable[[int], None] | None = None) -> dict:
        """Write a whole file and commit it; returns its manifest."""
        w = self.open_write(path, on_chunk)
        try:
            w.write(data)
        except BaseException:
            w.abort()
            raise
        return w.commit()

    # -- reading -------------------------------------------------------------------
    def stat(self, path: str) -> dict:
        return self._meta("stat", path)

    def list(self, prefix: str = "") -> list[dict]:
        return self._meta("list", prefix)

    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """Bytes of a committed file; every chunk's CRC32C (codec segments and manifest) is checked."""
        m = self.stat(path)
        size, cs = m["size"], m["chunk_size"]
        end = size if length is None else min(size, offset + length)
        if offset >= end:
            return b""
        first, last = offset // cs, (end - 1) // cs
        futs = [self._pool.submit(self.read_chunk, m, i) for i in range(first, last + 1)]
        out = bytearray()
        for i, f in zip(range(first, last + 1), futs):
            buf = f.result()
            lo = offset - i * cs if i == first else 0
            hi = end - i * cs if i == last else buf.size
            out += memoryview(buf)[lo:hi]
        return bytes(out)

    def read_chunk(self, m: dict, i: int) -> pa.Buffer:
        """Chunk ``i`` of the file whose manifest is ``m``, checked against its CRC32C."""
        key = chunk_key(self.job, m["txn"], m["start"] + i)
        buf = _chunk_bytes(self.colony.get(self.pool, key))    # codec CRC32C verified on unpack
        if _crc.crc32c(buf) != m["crcs"][i]:
            raise ChecksumMismatch(f"chunk {i} of {self.job}:{m['path']} ({key}) does not match the CRC32C "
                                   f"recorded at commit: corrupted at rest; rewrite the file from its source")
        return buf

    # -- the rest ------------------------------------------------------------------
    def unlink(self, path: str) -> None:
        self._meta("unlink", path)

    def gc(self) -> int:
        return self._meta("gc")

    def usage(self) -> list[dict]:
        return [self.colony.call(d, "jobstore", "usage", self.pool, self.job) for d in self.members]

    def close(self, keep: bool | None = None) -> dict:
        """End the job: everything is dropped unless ``keep`` (default: the store's ``keep``)."""
        if self.closed:
            return {"job": self.job, "closed": True}
        keep = self.keep if keep is None else keep
        out = self._meta("close", keep=keep)
        self._pool.shutdown(wait=True)
        self.closed = True
        return out

    def __enter__(self) -> "JobStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Writer:
    """A file being written: chunks go out as they fill (striped, in flight at once); nothing
    is visible until :meth:`commit` publishes the manifest."""

    def __init__(self, js: JobStore, path: str, on_chunk: Callable[[int], None] | None = None) -> None:
        self.js, self.path, self.on_chunk = js, path, on_chunk
        self.txn = uuid.uuid4().hex[:16]
        self.start = stable_hash(path) % len(js.members)
        self._buf = bytearray()
        self._crcs: list[int] = []
        self._crc = 0
        self._size = 0
        self._pending: list[Future] = []
        self._done = False
        js._meta("begin", self.txn)

    def write(self, data: bytes | memoryview) -> int:
        mv = memoryview(data).cast("B")
        cs = self.js.chunk_size
        pos = 0
        if self._buf:
            take = min(cs - len(self._buf), len(mv))
            self._buf += mv[:take]
            pos = take
            if len(self._buf) == cs:
                self._send(bytes(self._buf))
                self._buf.clear()
        while len(mv) - pos >= cs:
            self._send(mv[pos:pos + cs])
            pos += cs
        self._buf += mv[pos:]
        return len(mv)

    def _send(self, chunk: bytes | memoryview) -> None:
        i = len(self._crcs)
        c = _crc.crc32c(chunk)
        self._crcs.append(c)
        self._crc = _crc.crc32c(chunk, self._crc)
        self._size += len(chunk)
        key = chunk_key(self.js.job, self.txn, self.start + i)
        self._pending.append(self.js._pool.submit(self.js.colony.put, self.js.pool, key, _chunk_table(chunk)))
        if self.on_chunk:
            self.on_chunk(i)
        if len(self._pending) > 2 * len(self.js.members):
            self._settle(self._pending.pop(0))

    def _settle(self, fut: Future) -> None:
        try:
            fut.result()
        except Exception as e:   # noqa: BLE001 - every failure becomes one typed error after cleanup
            self.abort()
            raise WriteFailed(f"writing {self.js.job}:{self.path} failed ({type(e).__name__}: {e}); nothing was "
                              f"published and the previous version (if any) is intact; write it again") from e

    def commit(self) -> dict:
        """Flush, wait for every chunk, and publish the file atomically; returns its manifest."""
        if self._done:
            raise JobStoreError(f"write of {self.path!r} already committed or aborted; open a new writer")
        if self._buf:
            self._send(bytes(self._buf))
            self._buf.clear()
        while self._pending:
            self._settle(self._pending.pop(0))
        manifest = {"txn": self.txn, "start": self.start, "nchunks": len(self._crcs), "size": self._size,
                    "chunk_size": self.js.chunk_size, "crc32c": self._crc, "crcs": self._crcs,
                    "pool": self.js.pool, "written": time.time()}
        try:
            m = self.js._meta("commit", self.path, manifest)
        except ColonyError as e:
            self.abort()
            if isinstance(e, JobStoreError):
                raise
            raise WriteFailed(f"committing {self.js.job}:{self.path} failed ({type(e).__name__}: {e}); nothing "
                              f"was published; write it again") from e
        self._done = True
        return m

    def abort(self) -> None:
        """Drop what this write sent (best effort: a dead device's chunks go with it or to gc)."""
        if self._done:
            return
        self._done = True
        for f in self._pending:
            f.cancel()
        for f in self._pending:
            try:
                f.result()
            except BaseException:   # noqa: BLE001 - the write is being abandoned anyway
                pass
        self._pending.clear()
        try:
            self.js._meta("abort", self.txn)
        except Exception:   # noqa: BLE001 - metadata device gone: nothing can be published either
            pass
