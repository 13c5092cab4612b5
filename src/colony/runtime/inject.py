"""Host-to-device injection (the seeds' SDMS): Arrow data from a producer into devices.

Minimal host time: an uncompressed batch goes into Ray's object store with one
``ray.put`` of its Arrow buffers (no serialization on the host; Ray writes the buffers
out of band into shared memory) and the device packs it into the object format with
its own threads. Over a slow link (below ``runtime.slow_link_gbps``) the host packs
with a codec first so fewer bytes cross. Batches are pipelined: up to ``inflight`` are
in the object store / on the wire while the next one is put. A full device pushes
back: the batch is retried (``block``) or :class:`colony.errors.DeviceFull` is raised
(``raise``) with the batches not yet stored still owned by the caller; nothing is
ever dropped.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import ray

from colony import codec as _codec
from colony.errors import ColonyError, DeviceFull
from colony.store import Entry
from colony.errors import ObjectTooLarge


class _Full(Exception):
    def __init__(self, device: str, key: str, waited: float) -> None:
        self.device, self.key, self.waited = device, key, waited


@dataclass
class InjectReport:
    """What an injection moved and where its time went (seconds, host side)."""

    entries: list[Entry] = field(default_factory=list)
    rows: int = 0
    bytes: int = 0               # Arrow bytes handed in
    wire_bytes: int = 0          # bytes put into Ray's object store (after the codec)
    seconds: float = 0.0         # wall time, first batch in to last acknowledgement
    convert_s: float = 0.0       # producer arrays -> Arrow
    serialize_s: float = 0.0     # host codec packing (0 when the device packs)
    put_s: float = 0.0           # ray.put into the object store
    device_pack_s: float = 0.0   # packing into the object format on the devices (sum)
    blocked_s: float = 0.0       # waiting on a full device
    batches: int = 0
    codec: str = "none"
    devices: dict[str, int] = field(default_factory=dict)

    @property
    def gbps(self) -> float:
        return self.bytes / self.seconds / 1e9 if self.seconds > 0 else 0.0

    @property
    def transfer_s(self) -> float:
        """Time the host spent on the transfer itself: wall minus conversion and host serialization."""
        return max(0.0, self.seconds - self.convert_s - self.serialize_s)


def _batches(data: Any, batch_rows: int | None) -> Iterable[Any]:
    if isinstance(data, (pa.Table, pa.RecordBatch, Mapping)):
        data = [data]
    for item in data:
        if isinstance(item, pa.Table) and batch_rows and item.num_rows > batch_rows:
            for off in range(0, item.num_rows, batch_rows):
                yield item.slice(off, batch_rows)   # zero-copy views
        else:
            yield item


def _to_arrow(item: Any) -> pa.Table:
    if isinstance(item, pa.Table):
        return item
    if isinstance(item, pa.RecordBatch):
        return pa.Table.from_batches([item])
    if isinstance(item, Mapping):
        return pa.table({k: (v if isinstance(v, (pa.Array, pa.ChunkedArray)) else np.asarray(v))
                         for k, v in item.items()})
    raise ColonyError(f"inject takes Arrow tables, record batches or dicts of arrays, not {type(item).__name__}")


def choose_codec(colony, device: str | None, pool: str, requested: str | None) -> str:
    rt = colony.config.runtime
    name = requested or rt.inject_codec
    if name != "auto":
        _codec.resolve_codec(name)
        return name
    members = [device] if device else list(colony.config.pool(pool).members)
    links = [colony.config.devices[m].link_gbps for m in members]
    slow = any(link is not None and link < rt.slow_link_gbps for link in links)
    return "inner-lz4" if slow else "none"


def inject(colony, data, device: str | None = None, pool: str = "inject", key_prefix: str = "inject/", *,
           codec: str | None = None, batch_rows: int | None = None, inflight: int | None = None,
           backpressure: str | None = None, timeout_s: float | None = None, start: int | None = None) -> InjectReport:
    """Inject ``data`` into ``pool`` (on ``device`` when given, else by the pool's routing).

    Keys are ``key_prefix`` + a sequence number (TFT tags), continuing across calls; with
    ``device`` the numbers skip to those the pool routes to that device, so ``get`` finds them.
    """
    cfg = colony.config
    rt = cfg.runtime
    p = cfg.pool(pool)
    if device is not None:
        cfg.device(device)
        if device not in p.members:
            raise ColonyError(f"device {device!r} is not a member of pool {pool!r} (members {list(p.members)}); "
                              f"inject into a pool the device holds")
    policy = backpressure or rt.backpressure
    if policy not in ("block", "raise"):
        raise ColonyError(f"backpressure must be 'block' or 'raise', not {policy!r}")
    timeout = rt.backpressure_timeout_s if timeout_s is None else timeout_s
    depth = max(1, inflight or rt.inject_inflight)
    codec_name = choose_codec(colony, device, pool, codec)
    rep = InjectReport(codec=codec_name)
    pending: deque = deque()
    seq = colony.seq(key_prefix) if start is None else start
    t_start = time.perf_counter()

    def submit(dev, key, ref, nbytes):
        return colony.actor(dev).ingest.remote(pool, key, ref, "none")

    def settle(item) -> None:
        fut, dev, key, ref, nbytes = item
        waited = 0.0
        while True:
            try:
                entry, pack_s = ray.get(fut)
                break
            except ray.exceptions.RayTaskError as e:
                cause = getattr(e, "cause", None)
                if not isinstance(cause, ObjectTooLarge):
                    if isinstance(cause, ColonyError):
                        raise cause from None
                    raise
                if cause.size > cause.capacity:
                    raise cause from None   # can never fit this device: not a back-pressure situation
                if policy == "raise" or waited >= timeout:
                    raise _Full(dev, key, waited) from None
                pause = min(0.5, 0.02 * (1 + waited * 10))
                time.sleep(pause)
                waited += pause
                rep.blocked_s += pause
                fut = submit(dev, key, ref, nbytes)
        rep.entries.append(entry)
        rep.device_pack_s += pack_s
        rep.devices[dev] = rep.devices.get(dev, 0) + 1

    def run() -> None:
        nonlocal seq
        for item in _batches(data, batch_rows):
            t0 = time.perf_counter()
            table = _to_arrow(item)
            t1 = time.perf_counter()
            rep.convert_s += t1 - t0
            key = f"{key_prefix}{seq}"
            if device is not None:   # pick the next key the pool routes to this device, so get() finds it
                while colony.owner(pool, key) != device:
                    seq += 1
                    key = f"{key_prefix}{seq}"
            seq += 1
            dev = device or colony.owner(pool, key)
            if codec_name == "none":
                payload, wire = table, table.nbytes
            else:
                payload = _codec.pack([table], codec_name)
                wire = payload.size
            t2 = time.perf_counter()
            rep.serialize_s += t2 - t1
            ref = ray.put(payload)
            rep.put_s += time.perf_counter() - t2
            pending.append((submit(dev, key, ref, table.nbytes), dev, key, ref, table.nbytes))
            rep.rows += table.num_rows
            rep.bytes += table.nbytes
            rep.wire_bytes += wire
            rep.batches += 1
            while len(pending) >= depth:
                settle(pending.popleft())
        while pending:
            settle(pending.popleft())

    try:
        run()
    except _Full as full:
        not_stored = [full.key]
        for fut, _dev, key, _ref, _n in pending:   # let the batches already on the wire land (or not)
            try:
                entry, _pack_s = ray.get(fut)
                rep.entries.append(entry)
            except ray.exceptions.RayTaskError:
                not_stored.append(key)
        raise DeviceFull(
            f"device {full.device!r} is full (pool {pool!r}); {len(rep.entries)} batch(es) stored, not stored "
            f"(still yours): {not_stored} and any later batch; drop objects on the device, raise its "
            f"memory/disk budget, or inject with backpressure='block'"
            + (f" (blocked {full.waited:.1f} s)" if full.waited else "")) from None
    finally:
        if start is None:
            colony.set_seq(key_prefix, seq)
    rep.seconds = time.perf_counter() - t_start
    return rep
