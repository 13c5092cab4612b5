"""Host-to-device injection (the seeds' SDMS): Arrow data from a producer into devices.

``inject_async`` starts an injection and returns an :class:`InjectHandle` at once (the
SDMS request): ``done()``, ``wait()``, ``reusable()`` (every byte has left the caller's
buffers: they may be reused), ``bytes``, ``host_s`` (time the caller spent initiating
it). Batches of at least ``runtime.bulk_bytes`` go to the device's Arrow Flight endpoint
(faster than Ray's object transfer between nodes here; ``colony bench transfer``),
smaller ones, and large ones to a device on the producer's own node (shared memory),
through Ray's object store. Where the bytes are serialized into the
object format is ``serialize`` (the four placements of the Sandia report, fig. 8-5):

- ``inflight`` (default over Flight): the device writes each batch into the object as
  it arrives, overlapping serialization with the transfer;
- ``device``: the device receives every batch, then packs;
- ``host``: the host packs (and compresses, when a codec is chosen) and sends the object;
- ``none``: nothing is serialized or stored (the transfer alone: the baseline).

Over a slow link (below ``runtime.slow_link_gbps``) ``codec="auto"`` packs with
``inner-lz4`` on the host so fewer bytes cross. Up to ``inflight`` batches are on the
wire at once. A full device pushes back: the batch is retried (``block``) or
:class:`colony.errors.DeviceFull` is raised (``raise``) with the batches not yet stored
still owned by the caller; nothing is ever dropped.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import ray

from colony import codec as _codec
from colony.errors import ColonyError, DeadlineExceeded, DeviceFull, ObjectTooLarge
from colony.runtime.futures import resolve
from colony.store import Entry


class _Full(Exception):
    def __init__(self, device: str, key: str, waited: float) -> None:
        self.device, self.key, self.waited = device, key, waited


@dataclass
class InjectReport:
    """What an injection moved and where its time went (seconds, host side)."""

    entries: list[Entry] = field(default_factory=list)
    rows: int = 0
    bytes: int = 0               # Arrow bytes handed in
    wire_bytes: int = 0          # bytes sent (after the host codec, when there is one)
    seconds: float = 0.0         # wall time, first batch in to last acknowledgement
    convert_s: float = 0.0       # producer arrays -> Arrow
    serialize_s: float = 0.0     # host packing (serialize="host"; 0 when the device packs)
    put_s: float = 0.0           # host time handing batches to the transport
    device_pack_s: float = 0.0   # packing into the object format on the devices (sum)
    blocked_s: float = 0.0       # waiting on a full device
    batches: int = 0
    codec: str = "none"
    serialize: str = "inflight"  # where batches become objects: inflight | device | host | none
    host_s: float = 0.0          # caller's time to initiate the injection (returns before the bytes move)
    host_cpu_s: float = 0.0      # CPU seconds of this process during the injection (all its threads)
    devices: dict[str, int] = field(default_factory=dict)
    transports: dict[str, int] = field(default_factory=dict)   # batches per transport (flight | ray)

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


SERIALIZE = ("inflight", "device", "host", "none")


class InjectHandle:
    """A running injection (an SDMS request): poll ``done()``, ``wait()`` for its report;
    ``reusable()`` says the caller may reuse the buffers it handed in."""

    def __init__(self, report: "InjectReport") -> None:
        self.report = report
        self._done = threading.Event()
        self._sent = threading.Event()
        self._error: BaseException | None = None
        self.host_s = 0.0          # caller's time to initiate the request (the seeds' host overhead)

    @property
    def bytes(self) -> int:
        return self.report.bytes

    def done(self) -> bool:
        return self._done.is_set()

    def reusable(self) -> bool:
        return self._sent.is_set()

    def wait_reusable(self, timeout: float | None = None) -> bool:
        return self._sent.wait(timeout)

    def wait(self, timeout: float | None = None) -> "InjectReport":
        """The report once every batch is stored; raises what the injection raised, or
        :class:`DeadlineExceeded` if it is still running after ``timeout`` seconds."""
        if not self._done.wait(timeout):
            raise DeadlineExceeded(f"injection of {self.report.batches} batch(es) still running after {timeout} s; "
                                   f"wait longer or check `colony status`", next(iter(self.report.devices), None),
                                   timeout)
        if self._error is not None:
            raise self._error
        return self.report


def inject(colony, data, device: str | None = None, pool: str = "inject", key_prefix: str = "inject/",
           **kw) -> "InjectReport":
    """Inject and wait (see :func:`inject_async`)."""
    return inject_async(colony, data, device, pool, key_prefix, **kw).wait()


def inject_async(colony, data, device: str | None = None, pool: str = "inject", key_prefix: str = "inject/", *,
                 codec: str | None = None, batch_rows: int | None = None, inflight: int | None = None,
                 backpressure: str | None = None, timeout_s: float | None = None, start: int | None = None,
                 serialize: str | None = None, transport: str = "auto") -> InjectHandle:
    """Start injecting ``data`` into ``pool`` (on ``device`` when given, else by the pool's
    routing); returns at once with an :class:`InjectHandle`.

    Keys are ``key_prefix`` + a sequence number (TFT tags), continuing across calls; with
    ``device`` the numbers skip to those the pool routes to that device, so ``get`` finds them.
    ``transport``: ``auto`` (Flight for batches >= ``runtime.bulk_bytes``, except large ones to a
    device on this node: Ray's shared memory), ``flight`` or ``ray``.
    """
    t_call = time.perf_counter()
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
    if transport not in ("auto", "flight", "ray"):
        raise ColonyError(f"transport must be 'auto', 'flight' or 'ray', not {transport!r}")
    timeout = rt.backpressure_timeout_s if timeout_s is None else timeout_s
    depth = max(1, inflight or rt.inject_inflight)
    codec_name = choose_codec(colony, device, pool, codec)
    place = serialize or ("host" if codec_name != "none" else "inflight")
    if place not in SERIALIZE:
        raise ColonyError(f"serialize must be one of {SERIALIZE}, not {place!r}")
    if codec_name != "none" and place != "host":
        raise ColonyError(f"codec {codec_name!r} compresses on the host: use serialize='host' (or codec='none')")
    rep = InjectReport(codec=codec_name, serialize=place)
    handle = InjectHandle(rep)
    seq0 = colony.seq(key_prefix) if start is None else start
    state = {"seq": seq0}
    lock = threading.Lock()
    tr = colony.transfers
    call_timeout = rt.call_timeout_s

    def use_flight(nbytes: int, dev: str) -> bool:
        return transport == "flight" or (transport == "auto" and tr.bulk(nbytes, dev))

    def send_once(dev: str, key: str, table: pa.Table, payload, nbytes: int, on_sent) -> tuple:
        """One attempt; returns (entry | None, device pack seconds). Over Ray a batch arrives
        whole, so ``inflight`` packs as ``device`` does."""
        flight = use_flight(nbytes, dev)
        with lock:
            kind = "flight" if flight else "ray"
            rep.transports[kind] = rep.transports.get(kind, 0) + 1
        if flight:
            if place == "none":
                tr.echo(dev, table)
                on_sent()
                return None, 0.0
            if place == "host":
                return tr.put_object(dev, pool, key, payload), 0.0
            if place == "inflight":
                from colony.runtime.flight import _chunks
                batches = [c for b in table.to_batches() for c in _chunks(b, tr.message_bytes)]
                cmd = {"op": "inflight", "pool": pool, "key": key, "rows": table.num_rows,
                       "ipc_bytes": _codec.stream_size(table.schema, batches)}
                ack = tr._put(dev, cmd, batches, on_sent)
                from colony.runtime.transfer import _entry
                return _entry(ack), ack.get("pack_s", 0.0)
            return tr.ingest(dev, pool, key, table, "none", on_sent)
        ref = ray.put(payload if place == "host" else table)
        on_sent()
        if place == "none":
            resolve(colony.actor(dev).echo.remote(ref), call_timeout, dev)
            return None, 0.0
        return resolve(colony.actor(dev).ingest.remote(pool, key, ref, "none"), call_timeout, dev)

    def send(dev: str, key: str, table: pa.Table, payload, nbytes: int, on_sent) -> None:
        waited = 0.0
        while True:
            try:
                entry, pack_s = send_once(dev, key, table, payload, nbytes, on_sent)
                break
            except ObjectTooLarge as e:
                if e.size > e.capacity:
                    raise   # can never fit this device: not a back-pressure situation
                if policy == "raise" or waited >= timeout:
                    raise _Full(dev, key, waited) from None
                pause = min(0.5, 0.02 * (1 + waited * 10))
                time.sleep(pause)
                waited += pause
                with lock:
                    rep.blocked_s += pause
        with lock:
            if entry is not None:
                rep.entries.append(entry)
            rep.device_pack_s += pack_s
            rep.devices[dev] = rep.devices.get(dev, 0) + 1

    def run() -> None:
        t_start = time.perf_counter()
        cpu0 = time.process_time()
        pool_ex = ThreadPoolExecutor(depth, thread_name_prefix="colony-inject")
        pending: deque = deque()
        unsent = [0]
        all_sent = threading.Event()

        def sent_one():
            with lock:
                unsent[0] -= 1
                if unsent[0] == 0 and produced.is_set():
                    handle._sent.set()
        produced = threading.Event()
        failed: list = []
        try:
            seq = state["seq"]
            for item in _batches(data, batch_rows):
                t0 = time.perf_counter()
                table = _to_arrow(item)
                t1 = time.perf_counter()
                rep.convert_s += t1 - t0
                key = f"{key_prefix}{seq}"
                if device is not None:   # the next key the pool routes to this device, so get() finds it
                    while colony.owner(pool, key) != device:
                        seq += 1
                        key = f"{key_prefix}{seq}"
                seq += 1
                state["seq"] = seq
                dev = device or colony.owner(pool, key)
                payload, wire = table, table.nbytes
                if place == "host":
                    payload = _codec.pack([table], codec_name)
                    wire = payload.size
                t2 = time.perf_counter()
                rep.serialize_s += t2 - t1
                with lock:
                    unsent[0] += 1
                pending.append((pool_ex.submit(send, dev, key, table, payload, wire, _once(sent_one)), key))
                rep.put_s += time.perf_counter() - t2
                rep.rows += table.num_rows
                rep.bytes += table.nbytes
                rep.wire_bytes += wire
                rep.batches += 1
                while len(pending) >= depth:
                    _settle(pending, failed)
            produced.set()
            with lock:
                if unsent[0] == 0:
                    handle._sent.set()
            while pending:
                _settle(pending, failed)
            if failed:
                raise failed[0]
        except _Full as full:
            not_stored = [full.key] + [k for _f, k in pending]
            for f, _k in pending:
                try:
                    f.result()
                except Exception:
                    pass
            stored = {e.key for e in rep.entries}
            not_stored = [k for k in dict.fromkeys(not_stored) if k not in stored]
            handle._error = DeviceFull(
                f"device {full.device!r} is full (pool {pool!r}); {len(rep.entries)} batch(es) stored, not stored "
                f"(still yours): {not_stored} and any later batch; drop objects on the device, raise its "
                f"memory/disk budget, or inject with backpressure='block'"
                + (f" (blocked {full.waited:.1f} s)" if full.waited else ""))
        except BaseException as e:   # noqa: BLE001 - handed to the waiter
            handle._error = e
        finally:
            pool_ex.shutdown(wait=True)
            if start is None:
                colony.set_seq(key_prefix, state["seq"])
            rep.seconds = time.perf_counter() - t_start
            rep.host_cpu_s = time.process_time() - cpu0
            handle._sent.set()
            handle._done.set()
            all_sent.set()

    threading.Thread(target=run, name="colony-inject-driver", daemon=True).start()
    handle.host_s = time.perf_counter() - t_call
    rep.host_s = handle.host_s
    return handle


def _once(fn):
    done = [False]

    def call():
        if not done[0]:
            done[0] = True
            fn()
    return call


def _settle(pending: deque, failed: list) -> None:
    fut, _key = pending.popleft()
    try:
        fut.result()
    except _Full:
        raise
    except BaseException as e:  # noqa: BLE001
        if not failed:
            failed.append(e)
