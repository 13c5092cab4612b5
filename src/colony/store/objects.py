"""A device's key/object store: named pools of Colony objects (see colony.codec).

Objects are held in the one object format, so a get can hand the bytes to the wire
unchanged and decoding them is zero-copy. Hooks let services keep per-object state
(for example statistics) in step with puts and drops.

With a memory budget, the least recently used objects spill to local disk in the same
object format (``<spill_dir>/<pool>/<key>.clny``) and come back into memory on get. A new
store over an existing spill directory recovers every spilled object, which is how a
restarted device keeps them. An object that fits neither memory nor the disk budget is
refused with :class:`ObjectTooLarge` before anything changes.

Disk is a trust boundary: every spill read-back and every recovered file is checked
against its segment checksums. A file that fails is moved aside to
``<spill_dir>/#quarantine/`` (evidence, never served), logged by name, and its object is
reported lost (:class:`~colony.errors.ObjectLost`) on every later get; there are no replicas.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import quote, unquote

import pyarrow as pa

from colony import codec
from colony.errors import (CodecError, InvalidArgument, ObjectLost, ObjectTooLarge, StoreError, UnknownKey,
                           UnknownPool)

log = logging.getLogger(__name__)

SPILL_SUFFIX = ".clny"
QUARANTINE = "#quarantine"     # never a quoted pool name: quote() escapes '#'
JOURNAL_DIR = "~journal"   # <pool>.journal: the keys a memory-only pool acknowledged (+key / -key lines)
_MAX_NAME = 200


def _too_large(size: int, capacity: int, message: str) -> ObjectTooLarge:
    e = ObjectTooLarge(message)
    e.size, e.capacity = size, capacity
    return e


@dataclass(frozen=True)
class Entry:
    pool: str
    key: str
    nbytes: int
    rows: int
    codec: str
    spilled: bool = False


@dataclass(frozen=True)
class _Spilled:
    path: Path
    size: int


PutHook = Callable[[str, str, list[pa.Table]], None]
DropHook = Callable[[str, str], None]


def _fname(key: str) -> str:
    q = quote(key, safe="")
    return q if len(q) <= _MAX_NAME else "~" + hashlib.blake2b(key.encode(), digest_size=20).hexdigest()


class ObjectStore:
    """In-memory pools of packed objects, safe to call from several threads.

    ``memory_budget`` (bytes, 0 = unlimited) caps the bytes held in memory; beyond it
    objects spill to ``spill_dir`` up to ``disk_budget`` bytes (0 = never spill).
    """

    def __init__(self, device: str = "local", *, memory_budget: int = 0,
                 spill_dir: str | os.PathLike | None = None, disk_budget: int = 0,
                 threads: int | None = None) -> None:
        if disk_budget and spill_dir is None:
            raise StoreError("a disk budget needs a spill_dir; pass spill_dir=... or disk_budget=0")
        self.device = device
        self.memory_budget = int(memory_budget)
        self.disk_budget = int(disk_budget) if spill_dir is not None else 0
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self.threads = threads
        self._pools: dict[str, dict[str, pa.Buffer | _Spilled]] = {}
        self._lru: OrderedDict[tuple[str, str], int] = OrderedDict()   # in-memory objects, oldest first
        self._mem = 0
        self._disk = 0
        self._lock = threading.RLock()
        self._put_hooks: list[PutHook] = []
        self._drop_hooks: list[DropHook] = []
        self.recovered = 0
        self._durable: set[str] = set()
        self._journals: dict = {}
        self.lost: dict[tuple[str, str], str] = {}     # (pool, key) -> why it is lost (quarantined, or restart)
        # bumped whenever a pool, a key or a lost key comes or goes (not when an object only
        # spills or reloads): a reader may keep what it listed while the number is the same
        self.generation = 0
        if self.spill_dir is not None:
            self._recover()

    # -- pools -------------------------------------------------------------
    def create_pool(self, pool: str, durable: bool = False) -> None:
        """A pool. ``durable``: a put returns only once the object is on disk, fsynced (it
        survives a device restart and a machine crash); otherwise objects live in memory
        (spilling when full) and the keys are journaled, so a restart reports what it lost."""
        with self._lock:
            if durable and self.spill_dir is None:
                raise StoreError(f"pool {pool!r} on device {self.device!r} is durable but the device has no "
                                 f"spill_dir/disk budget; give the device a disk or make the pool memory-only")
            self._pools.setdefault(pool, {})
            self.generation += 1
            if durable:
                self._durable.add(pool)
            elif self.spill_dir is not None:
                try:
                    self._open_journal(pool)
                except OSError as e:
                    raise StoreError(f"device {self.device!r} cannot keep the key journal of pool {pool!r} under "
                                     f"{self.spill_dir}: {e}; check the spill directory") from e

    # -- acknowledgement: durable pools fsync, memory-only pools journal their keys --------
    def _open_journal(self, pool: str) -> None:
        """Keys the journal says were acknowledged but that did not come back are lost."""
        d = self.spill_dir / JOURNAL_DIR
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"device {self.device!r} cannot keep its key journal under {self.spill_dir}: {e}; "
                             f"check the spill directory") from e
        path = d / f"{quote(pool, safe='')}.journal"
        live: dict[str, None] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                if line[:1] == "+":
                    live[unquote(line[1:])] = None
                elif line[:1] == "-":
                    live.pop(unquote(line[1:]), None)
        have = self._pools.get(pool, {})
        lost = sorted(k for k in live if k not in have)
        if lost:
            for k in lost:
                self.lost[(pool, k)] = (f"object {pool}/{k} on device {self.device!r} was acknowledged but lived only "
                                        f"in memory when the device restarted: it is lost; put it again (a durable "
                                        f"pool keeps acknowledged objects)")
            log.warning("device %s: pool %s lost %d acknowledged object(s) at restart: %s", self.device, pool,
                        len(lost), lost[:20])
        path.write_text("".join(f"+{quote(k, safe='')}\n" for k in have))
        self._journals[pool] = open(path, "a", buffering=1)

    def _journal(self, pool: str, sign: str, key: str) -> None:
        j = self._journals.get(pool)
        if j is not None:
            j.write(f"{sign}{quote(key, safe='')}\n")

    def _put_durable(self, pool: str, key: str, buf: pa.Buffer) -> None:
        size = buf.size
        old = self._pools[pool].get(key)
        old_disk = old.size if isinstance(old, _Spilled) else 0
        if self._disk - old_disk + size > self.disk_budget:
            raise _too_large(size, self.disk_budget,
                             f"object {pool}/{key} ({size} bytes) does not fit the disk of device {self.device!r} "
                             f"(durable pool {pool!r}: {self._disk} of {self.disk_budget} bytes used); drop objects "
                             f"or raise the device's disk budget")
        spilled = self._write_spill(pool, key, buf, fsync=True)
        if isinstance(old, pa.Buffer):
            self._mem -= self._lru.pop((pool, key))
        self._disk += size - old_disk
        self._pools[pool][key] = spilled

    def pools(self) -> list[str]:
        with self._lock:
            return sorted(self._pools)

    def _pool(self, pool: str) -> dict[str, pa.Buffer | _Spilled]:
        try:
            return self._pools[pool]
        except KeyError:
            raise UnknownPool(f"device {self.device!r} has no pool {pool!r}; "
                              f"known pools: {sorted(self._pools)}") from None

    # -- objects -------------------------------------------------------------
    def put(self, pool: str, key: str, obj, codec_name: str = "none") -> Entry:
        """Store tables (packed with ``codec_name``) or an already packed object."""
        if isinstance(obj, (pa.Table, pa.RecordBatch, list, tuple)):
            tables = list(obj) if isinstance(obj, (list, tuple)) else [obj]
            buf = codec.pack(tables, codec_name, threads=self.threads)
        else:
            try:
                buf = obj if isinstance(obj, pa.Buffer) else pa.py_buffer(obj)
            except TypeError:
                raise InvalidArgument(f"put {pool}/{key}: an object is Arrow tables or a packed object's bytes, "
                                      f"not {type(obj).__name__}") from None
            tables = None
        info = codec.read_info(buf)  # refuse anything that is not a well-formed object
        with self._lock:
            self._pool(pool)
            if pool in self._durable:
                self._put_durable(pool, key, buf)
                spilled = True
            else:
                spilled = self._admit(pool, key, buf)
                self._journal(pool, "+", key)
            self.lost.pop((pool, key), None)
            self.generation += 1
        if self._put_hooks:
            tables = tables if tables is not None else codec.unpack(buf)
            for hook in self._put_hooks:
                hook(pool, key, [t if isinstance(t, pa.Table) else pa.Table.from_batches([t]) for t in tables])
        return Entry(pool, key, info.nbytes, info.rows, info.codec, spilled)

    def get(self, pool: str, key: str) -> pa.Buffer:
        """The object's bytes; a spilled object is reloaded into memory when it fits. A
        durable pool's objects stay on disk (the fsynced file is what the put acknowledged:
        moving it into memory would make a later crash lose it)."""
        with self._lock:
            p = self._pool(pool)
            if key not in p:
                self._missing(pool, key)
            v = p[key]
            if isinstance(v, pa.Buffer):
                self._lru.move_to_end((pool, key))
                return v
            buf = self._read_verified(pool, key, v)
            if pool not in self._durable and self.memory_budget and v.size <= self.memory_budget:
                plan = self._plan(v.size, extra_disk=-v.size)
                if plan is not None:
                    self._evict(plan)
                    v.path.unlink(missing_ok=True)
                    self._disk -= v.size
                    p[key] = buf
                    self._lru[(pool, key)] = v.size
                    self._mem += v.size
            return buf

    def get_tables(self, pool: str, key: str) -> list[pa.Table]:
        return codec.unpack(self.get(pool, key), verify=False)

    def contains(self, pool: str, key: str) -> bool:
        with self._lock:
            return key in self._pool(pool)

    def list(self, pool: str, prefix: str = "") -> list[str]:
        with self._lock:
            return sorted(k for k in self._pool(pool) if k.startswith(prefix))

    def entries(self, pool: str, prefix: str = "") -> list[Entry]:
        with self._lock:
            items = [(k, b) for k, b in self._pool(pool).items() if k.startswith(prefix)]
        out = []
        for k, b in sorted(items, key=lambda kv: kv[0]):
            spilled = isinstance(b, _Spilled)
            try:
                info = codec.read_info(self._read_spilled(b) if spilled else b)
            except (StoreError, CodecError):
                continue   # dropped meanwhile
            out.append(Entry(pool, k, info.nbytes, info.rows, info.codec, spilled))
        return out

    def lost_keys(self, pool: str, prefix: str = "") -> list[str]:
        """Keys of ``pool`` reported lost (quarantined, or gone at a restart) and not dropped since."""
        with self._lock:
            return sorted(k for p, k in self.lost if p == pool and k.startswith(prefix))

    def _lost_by_pool(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for p, k in sorted(self.lost):
            out.setdefault(p, []).append(k)
        return out

    def _missing(self, pool: str, key: str):
        if (pool, key) in self.lost:
            raise ObjectLost(self.lost[(pool, key)])
        raise UnknownKey(f"pool {pool!r} on device {self.device!r} has no key {key!r}")

    def drop(self, pool: str, key: str) -> None:
        with self._lock:
            p = self._pool(pool)
            if key not in p:
                if self.lost.pop((pool, key), None) is not None:
                    self.generation += 1
                    return       # dropping a lost object just forgets it
                self._missing(pool, key)
            self._remove(pool, key)
            self._journal(pool, "-", key)
        for hook in self._drop_hooks:
            hook(pool, key)

    def info(self) -> dict:
        with self._lock:
            pools = {}
            for name, p in self._pools.items():
                mem = [b.size for b in p.values() if isinstance(b, pa.Buffer)]
                disk = [b.size for b in p.values() if isinstance(b, _Spilled)]
                pools[name] = {"objects": len(p), "bytes": sum(mem) + sum(disk), "spilled": len(disk),
                               "spilled_bytes": sum(disk)}
            return {"device": self.device, "pools": pools, "memory_used": self._mem,
                    "memory_budget": self.memory_budget, "disk_used": self._disk, "disk_budget": self.disk_budget,
                    "spill_dir": str(self.spill_dir) if self.spill_dir else None, "recovered": self.recovered,
                    "durable": sorted(self._durable), "lost": self._lost_by_pool(),
                    "lost_reasons": {f"{p}/{k}": why for (p, k), why in sorted(self.lost.items())}}

    def free_bytes(self) -> int | None:
        """Bytes a put can still take (memory + spill), None when unlimited."""
        with self._lock:
            if not self.memory_budget:
                return None
            return max(0, self.memory_budget - self._mem) + max(0, self.disk_budget - self._disk)

    # -- hooks -------------------------------------------------------------
    def on_put(self, hook: PutHook) -> None:
        self._put_hooks.append(hook)

    def on_drop(self, hook: DropHook) -> None:
        self._drop_hooks.append(hook)

    # -- budget and spill (call with the lock held) ---------------------------
    def _remove(self, pool: str, key: str) -> None:
        self.generation += 1
        v = self._pools[pool].pop(key)
        if isinstance(v, pa.Buffer):
            self._mem -= self._lru.pop((pool, key))
        else:
            v.path.unlink(missing_ok=True)
            self._disk -= v.size

    def _plan(self, size: int, extra_disk: int = 0, exclude: tuple[str, str] | None = None):
        """LRU victims that make room for ``size`` bytes in memory, or None if the disk cannot take them."""
        need = self._mem + size - self.memory_budget
        victims, freed = [], 0
        if need > 0:
            for pk, n in self._lru.items():
                if freed >= need:
                    break
                if pk == exclude:
                    continue
                victims.append(pk)
                freed += n
            if freed < need:
                return None
        if victims and (self.spill_dir is None or self._disk + extra_disk + freed > self.disk_budget):
            return None
        return victims

    def _evict(self, victims: list[tuple[str, str]]) -> None:
        written: list[tuple[tuple[str, str], _Spilled]] = []
        try:
            for pool, key in victims:
                buf = self._pools[pool][key]
                written.append(((pool, key), self._write_spill(pool, key, buf)))
        except OSError as e:
            for _, s in written:
                s.path.unlink(missing_ok=True)
            raise StoreError(f"device {self.device!r} could not spill to {self.spill_dir}: {e}; "
                             f"check the disk or raise the memory budget") from e
        for (pool, key), s in written:
            self._pools[pool][key] = s
            self._mem -= self._lru.pop((pool, key))
            self._disk += s.size

    def _admit(self, pool: str, key: str, buf: pa.Buffer) -> bool:
        """Place a new object in memory (spilling LRU objects) or on disk; all or nothing."""
        size = buf.size
        old = self._pools[pool].get(key)
        old_mem = old.size if isinstance(old, pa.Buffer) else 0
        old_disk = old.size if isinstance(old, _Spilled) else 0
        if not self.memory_budget:
            if old is not None:
                self._remove(pool, key)
            self._pools[pool][key] = buf
            self._lru[(pool, key)] = size
            self._mem += size
            return False
        # plan as if the old version were gone
        self._mem -= old_mem
        self._disk -= old_disk
        try:
            to_disk = size > self.memory_budget
            victims = None if to_disk else self._plan(size, exclude=(pool, key))
            if victims is None:
                to_disk = True
                if self.spill_dir is None or self._disk + size > self.disk_budget:
                    free = max(0, self.memory_budget - self._mem) + max(0, self.disk_budget - self._disk)
                    raise _too_large(size, self.memory_budget + self.disk_budget, 
                        f"object {pool}/{key} ({size} bytes) does not fit device {self.device!r}: memory budget "
                        f"{self.memory_budget} bytes ({self._mem} used), spill budget {self.disk_budget} bytes "
                        f"({self._disk} used), at most {free} bytes free; split the object, drop objects or raise "
                        f"the device's memory/disk budget")
        finally:
            self._mem += old_mem
            self._disk += old_disk
        if to_disk:
            try:
                spilled = self._write_spill(pool, key, buf)   # writes a temp file first: nothing partial on failure
            except OSError as e:
                raise StoreError(f"device {self.device!r} could not write {pool}/{key} to {self.spill_dir}: {e}; "
                                 f"check the spill directory or raise the memory budget") from e
            if isinstance(old, pa.Buffer):
                self._mem -= self._lru.pop((pool, key))
            elif isinstance(old, _Spilled):
                self._disk -= old.size   # same path: the new file replaced it
            self._pools[pool][key] = spilled
            self._disk += size
            return True
        if old is not None:
            if isinstance(old, _Spilled):
                self._remove(pool, key)
            else:
                self._mem -= self._lru.pop((pool, key))
                del self._pools[pool][key]
        self._evict(victims)
        self._pools[pool][key] = buf
        self._lru[(pool, key)] = size
        self._mem += size
        return False

    def _write_spill(self, pool: str, key: str, buf: pa.Buffer, fsync: bool = False) -> _Spilled:
        d = self.spill_dir / quote(pool, safe="")
        d.mkdir(parents=True, exist_ok=True)
        name = _fname(key)
        path = d / (name + SPILL_SUFFIX)
        tmp = d / (name + SPILL_SUFFIX + ".tmp")
        try:
            if name.startswith("~"):
                (d / (name + ".key")).write_text(key)
            with open(tmp, "wb") as f:
                f.write(memoryview(buf))
                if fsync:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, path)
            if fsync:   # the rename itself must reach the disk too
                dfd = os.open(d, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        return _Spilled(path, buf.size)

    def _read_spilled(self, s: _Spilled) -> pa.Buffer:
        try:
            with pa.memory_map(str(s.path), "r") as f:
                return f.read_buffer()
        except (OSError, pa.ArrowException) as e:
            raise StoreError(f"spilled object {s.path} on device {self.device!r} cannot be read: {e}") from e

    def _read_verified(self, pool: str, key: str, s: _Spilled) -> pa.Buffer:
        buf = self._read_spilled(s)
        try:
            codec.verify(buf)
        except CodecError as e:
            del self._pools[pool][key]
            self._disk -= s.size
            raise self._quarantine(pool, key, s.path, e) from e
        return buf

    def _quarantine(self, pool: str, key: str, path: Path, why: Exception) -> ObjectLost:
        """Move a corrupt spill file aside (kept as evidence) and remember its object as lost."""
        dest = self.spill_dir / QUARANTINE / path.parent.name / path.name
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, dest)
        except OSError:
            path.unlink(missing_ok=True)
            dest = None
        msg = (f"object {pool}/{key} on device {self.device!r} is lost: spill file {path} failed its checksum "
               f"({why}); " + (f"moved to {dest}" if dest else "deleted") + "; put the object again from its source")
        log.error(msg)
        self.lost[(pool, key)] = msg
        self.generation += 1
        return ObjectLost(msg)

    def _recover(self) -> None:
        """Register objects spilled by an earlier store over the same directory (device restart)."""
        if not self.spill_dir.is_dir():
            return
        skip = (QUARANTINE, JOURNAL_DIR)
        for pdir in sorted(x for x in self.spill_dir.iterdir() if x.is_dir() and x.name not in skip):
            pool = unquote(pdir.name)
            self._pools.setdefault(pool, {})     # the pool existed even if all its files are lost
            for f in sorted(pdir.iterdir()):
                if f.name.endswith(".tmp"):
                    f.unlink(missing_ok=True)   # an interrupted spill: the object was never acknowledged
                    continue
                if not f.name.endswith(SPILL_SUFFIX):
                    continue
                stem = f.name[:-len(SPILL_SUFFIX)]
                key = (pdir / (stem + ".key")).read_text() if stem.startswith("~") else unquote(stem)
                s = _Spilled(f, f.stat().st_size)
                try:
                    codec.verify(self._read_spilled(s))
                except (StoreError, CodecError) as e:
                    self._quarantine(pool, key, f, e)
                    continue
                self._pools.setdefault(pool, {})[key] = s
                self._disk += s.size
                self.recovered += 1


def clear_spill_dir(spill_dir: str | os.PathLike) -> int:
    """Delete the spill files a store wrote under ``spill_dir`` (only those); returns how many.

    A device starting fresh (not restarted by Ray) calls this so objects of an earlier
    colony do not reappear; a restarted device keeps them and recovers them instead.
    """
    root = Path(spill_dir)
    if not root.is_dir():
        return 0
    n = 0
    for pdir in (x for x in root.iterdir() if x.is_dir() and x.name != QUARANTINE):
        for f in pdir.iterdir():
            if pdir.name == JOURNAL_DIR:
                f.unlink(missing_ok=True)   # a fresh device has acknowledged nothing yet
                continue
            if f.name.endswith((SPILL_SUFFIX, SPILL_SUFFIX + ".tmp")) or (f.name.startswith("~")
                                                                         and f.name.endswith(".key")):
                f.unlink(missing_ok=True)
                n += 1
        try:
            pdir.rmdir()
        except OSError:
            pass
    return n
