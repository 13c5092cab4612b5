"""A device's key/object store: named pools of Colony objects (see colony.codec).

Objects are held in the one object format, so a get can hand the bytes to the wire
unchanged and decoding them is zero-copy. Hooks let services keep per-object state
(for example statistics) in step with puts and drops.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterable

import pyarrow as pa

from colony import codec
from colony.errors import ColonyError


class StoreError(ColonyError):
    pass


class UnknownPool(StoreError):
    pass


class UnknownKey(StoreError):
    pass


@dataclass(frozen=True)
class Entry:
    pool: str
    key: str
    nbytes: int
    rows: int
    codec: str


PutHook = Callable[[str, str, list[pa.Table]], None]
DropHook = Callable[[str, str], None]


class ObjectStore:
    """In-memory pools of packed objects, safe to call from several threads."""

    def __init__(self, device: str = "local") -> None:
        self.device = device
        self._pools: dict[str, dict[str, pa.Buffer]] = {}
        self._lock = threading.RLock()
        self._put_hooks: list[PutHook] = []
        self._drop_hooks: list[DropHook] = []

    # -- pools -------------------------------------------------------------
    def create_pool(self, pool: str) -> None:
        with self._lock:
            self._pools.setdefault(pool, {})

    def pools(self) -> list[str]:
        with self._lock:
            return sorted(self._pools)

    def _pool(self, pool: str) -> dict[str, pa.Buffer]:
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
            buf = codec.pack(tables, codec_name)
        else:
            buf = obj if isinstance(obj, pa.Buffer) else pa.py_buffer(obj)
            tables = None
        info = codec.read_info(buf)  # refuse anything that is not a well-formed object
        with self._lock:
            self._pool(pool)[key] = buf
        if self._put_hooks:
            tables = tables if tables is not None else codec.unpack(buf)
            for hook in self._put_hooks:
                hook(pool, key, [t if isinstance(t, pa.Table) else pa.Table.from_batches([t]) for t in tables])
        return Entry(pool, key, info.nbytes, info.rows, info.codec)

    def get(self, pool: str, key: str) -> pa.Buffer:
        with self._lock:
            p = self._pool(pool)
            if key not in p:
                raise UnknownKey(f"pool {pool!r} on device {self.device!r} has no key {key!r}")
            return p[key]

    def get_tables(self, pool: str, key: str) -> list[pa.Table]:
        return codec.unpack(self.get(pool, key), verify=False)

    def list(self, pool: str, prefix: str = "") -> list[str]:
        with self._lock:
            return sorted(k for k in self._pool(pool) if k.startswith(prefix))

    def entries(self, pool: str, prefix: str = "") -> list[Entry]:
        with self._lock:
            items = [(k, b) for k, b in self._pool(pool).items() if k.startswith(prefix)]
        out = []
        for k, b in sorted(items):
            info = codec.read_info(b)
            out.append(Entry(pool, k, info.nbytes, info.rows, info.codec))
        return out

    def drop(self, pool: str, key: str) -> None:
        with self._lock:
            p = self._pool(pool)
            if key not in p:
                raise UnknownKey(f"pool {pool!r} on device {self.device!r} has no key {key!r}")
            del p[key]
        for hook in self._drop_hooks:
            hook(pool, key)

    def info(self) -> dict:
        with self._lock:
            return {
                "device": self.device,
                "pools": {name: {"objects": len(p), "bytes": sum(b.size for b in p.values())}
                          for name, p in self._pools.items()},
            }

    # -- hooks -------------------------------------------------------------
    def on_put(self, hook: PutHook) -> None:
        self._put_hooks.append(hook)

    def on_drop(self, hook: DropHook) -> None:
        self._drop_hooks.append(hook)

    def keys(self, pools: Iterable[str] | None = None) -> list[tuple[str, str]]:
        with self._lock:
            names = list(pools) if pools is not None else list(self._pools)
            return [(p, k) for p in names for k in sorted(self._pool(p))]
