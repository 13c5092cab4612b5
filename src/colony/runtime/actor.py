"""The device actor: one Ray actor per device, wrapping that device's DeviceHost.

It is pinned to its device by the device's custom Ray resource, runs threaded
(``max_concurrency`` > 1) so a service can call a peer that calls back without
deadlock, applies the device's emulation budgets to its own process, and is the one
place where bytes entering or leaving the device are paced and counted: a
:class:`colony.pacing.Link` per peer (the client, the host, another device), charged for
put/get/inject data, service-call arguments and results, in both transports (Ray for
control and small payloads, this device's Arrow Flight endpoint for bulk data).
Clients reach only the object service and the @endpoint methods of placed services:
devices never run client code.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import ray

from colony import codec
from colony.config import ColonyConfig
from colony.config.schema import _select
from colony.pacing import payload_bytes
from colony.runtime import placements, process
from colony.runtime.links import CLIENT, Links
from colony.services.base import DeviceContext, calls_stream
from colony.runtime.fingerprint import fingerprint
from colony.runtime.flight import fetch_large, large_bytes, stash_large
from colony.runtime.futures import resolve
from colony.services.host import DeviceHost
from colony.services.protocol import DeviceInfo
from colony.store import Entry, ObjectStore, routing
from colony.store.objects import clear_spill_dir

log = logging.getLogger(__name__)


def actor_name(config: ColonyConfig, device: str) -> str:
    return f"{config.name}:{device}"


def device_infos(config: ColonyConfig) -> list[DeviceInfo]:
    """Every device of ``config`` as the Colony interface describes it."""
    return [DeviceInfo(name=d.name, role=d.role, label=d.label,
                       services=tuple(["objects", *config.device_services(d.name)]),
                       pools=tuple(config.device_pools(d.name)), threads=d.threads)
            for d in config.devices.values()]


RESULT_TTL_S = 600.0   # a large call result not fetched by then is dropped
WARM_TIMEOUT_S = 20.0  # handler threads that have not all met by then are left as they are
READY_TIMEOUT_S = 180.0  # a device that does not answer its first call by then failed to start

def warm_devices(handles: Mapping[str, Any], k: int, answered: bool = False) -> list[str]:
    """Warm every handler thread of these devices (``k`` each): ``k`` barrier-synchronized
    :meth:`DeviceActor.warm_threads` calls per device at once, sent once every device answers
    a ping (so a slow start cannot eat the warm-up's deadline and cancel its calls before
    they run; ``answered``: the caller has just seen them answer). The devices whose threads
    did not all meet."""
    names = list(handles)
    if not answered:
        resolve([handles[n].ping.remote() for n in names], READY_TIMEOUT_S, names)
    calls = [n for n in names for _ in range(k)]
    met = resolve([handles[n].warm_threads.remote(k) for n in calls], WARM_TIMEOUT_S + 10, calls)
    return sorted({n for n, ok in zip(calls, met) if not ok})


@ray.remote(num_cpus=0, max_retries=0)
def _warm_restarted(config: ColonyConfig, device: str) -> list[str]:
    """A restarted device's warm-up, sent from its own Ray worker: a caller like the client
    that warms a device it starts, never the device calling itself while Ray still brings it
    back (CI saw such self-calls not run for over a minute)."""
    handle = ray.get_actor(actor_name(config, device), namespace=config.namespace)
    return warm_devices({device: handle}, config.runtime.max_concurrency)


FROM = "_colony_from"  # keyword a device call carries: who is calling (for the link it crosses)
BULK = "_colony_bulk"  # keyword of a client that fetches large results over Flight (runtime.flight)
TO = "_colony_to"      # keyword of a relayed call: the large parts of its result go to this end

# Per actor thread: whether the call it serves came from a client that fetches large results
# over Flight, so a call this device makes on that client's behalf (``relay``) can hand its
# large result straight from the callee to the client.
_SERVING = threading.local()


class RayPeers:
    """The Colony interface over device actors found by name.

    Devices use it for device-to-device calls (straight to the other device's actor, never
    through a client); the client :class:`colony.runtime.client.Colony` extends it. Every
    call names its caller, so the callee charges the arguments and the result on the link
    between the two; every wait has a deadline (``timeout=``, default
    ``runtime.call_timeout_s``) and a hung or dead device raises an error naming it.
    """

    def __init__(self, config: ColonyConfig, self_name: str | None = None) -> None:
        self.config = config
        self._self = self_name
        self._handles: dict[str, Any] = {}

    def handle(self, device: str):
        h = self._handles.get(device)
        if h is None:
            self.config.device(device)   # UnknownDevice for a wrong name
            h = ray.get_actor(actor_name(self.config, device), namespace=self.config.namespace)
            self._handles[device] = h
        return h

    @property
    def me(self) -> str:
        """This end of the links: the device these peers belong to, or the client."""
        return self._self or CLIENT

    def _deadline(self, timeout: float | None) -> float:
        return self.config.runtime.call_timeout_s if timeout is None else timeout

    # -- calls ------------------------------------------------------------------------
    def call(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
             **kwargs: Any) -> Any:
        """Call an endpoint of a service placed on ``device`` and wait for its result, at most
        ``timeout`` seconds (default ``runtime.call_timeout_s``): a hung device raises
        :class:`DeadlineExceeded`, a dead one :class:`DeviceLost`, both naming it."""
        return resolve(self._start(device, service, method, args, kwargs, timeout), self._deadline(timeout), device)

    def call_async(self, device: str, service: str, method: str, *args: Any, **kwargs: Any):
        """Start a call; returns a future (a Ray ObjectRef) for :meth:`wait`."""
        return self._start(device, service, method, args, kwargs, None)

    def _start(self, device: str, service: str, method: str, args: tuple, kwargs: dict, timeout: float | None):
        """Send a call. Large parts of its arguments (from ``RESULT_FLIGHT_BYTES``, where the
        transfer layer's measured rule says Flight) go ahead to ``device``'s Flight endpoint
        (DoPut, within the call's deadline) and the call carries references to them."""
        kwargs[FROM] = self.me
        if large_bytes((args, kwargs)):
            tr = getattr(self, "transfers", None)
            if tr is None:                          # a device's peers: one transfer layer, made once
                from colony.runtime.transfer import Transfers
                tr = self.transfers = Transfers(self)
            args, kwargs = tr.ship_args(device, args, kwargs, self.me, self._deadline(timeout), service)
        return self.handle(device).call.remote(service, method, *args, **kwargs)

    def relay(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
              **kwargs: Any) -> Any:
        """A call made on behalf of the client this device is serving: the large parts of its
        result go from ``device`` straight to that client (paced and counted on the
        ``device`` -> client link, fetched by the client over ``device``'s Flight endpoint)
        and this device gets references to them; small results, or a caller that is not such
        a client, take the normal call path."""
        if getattr(_SERVING, "bulk_client", False):
            kwargs[TO] = CLIENT
        return self.call(device, service, method, *args, timeout=timeout, **kwargs)

    def wait(self, futures, timeout: float | None = None, devices=None):
        """Results of futures from :meth:`call_async` (a list, or one future), within ``timeout``
        (default ``runtime.call_timeout_s``); ``devices`` names the futures' devices for errors."""
        return resolve(futures, self._deadline(timeout), devices)

    def devices(self) -> list[DeviceInfo]:
        return device_infos(self.config)

    def place(self, service: str, devices: str | Sequence[str] = "all", **options: Any) -> None:
        """Place a registered service on devices at run time ("all", "role:<role>", names).

        Placements from the configuration come back when Ray restarts a device; run-time
        placements do not (put lasting ones in the config).
        """
        sel = devices if isinstance(devices, str) else list(devices)
        names = _select(sel, self.config.devices, "place.devices")
        resolve([self.handle(n).place.remote(service, options) for n in names], self._deadline(None), names)

    # -- objects ------------------------------------------------------------------------
    def owner(self, pool: str, key: str) -> str:
        p = self.config.pool(pool)
        return routing.owner(key, p.members, p.policy)

    def put(self, pool: str, key: str, tables, codec: str = "none", threads: int | None = None,
            timeout: float | None = None) -> Entry:
        """Pack ``tables`` (one or a list) into an object here and store it on the key's owner."""
        return resolve(self.put_async(pool, key, tables, codec, threads), self._deadline(timeout),
                       self.owner(pool, key))

    def put_async(self, pool: str, key: str, tables, codec: str = "none", threads: int | None = None):
        buf = tables if isinstance(tables, pa.Buffer) else pack_tables(tables, codec, threads)
        return self.handle(self.owner(pool, key)).put.remote(pool, key, buf, "none", self.me)

    def pull(self, device: str, pool: str, key: str) -> pa.Buffer:
        """A stored object of ``device``, pulled by this process over the device's read
        endpoint (emulated DMA when the device is pinned, ``DeviceActor.read_location``),
        charged on the device's link to this end."""
        if getattr(self, "_reads", None) is None:
            from colony.runtime.transfer import Transfers
            self._reads = Transfers(self, endpoint="read_location")
        return self._reads.get_object(device, pool, key, peer=self.me)

    def actor(self, device: str):
        return self.handle(device)

    def get_object(self, pool: str, key: str, timeout: float | None = None) -> pa.Buffer:
        """The packed object (zero-copy view of what the device sent)."""
        dev = self.owner(pool, key)
        return resolve(self.handle(dev).get.remote(pool, key, self.me), self._deadline(timeout), dev)

    def get(self, pool: str, key: str, verify: bool = True, timeout: float | None = None) -> list[pa.Table]:
        return codec.unpack(self.get_object(pool, key, timeout), verify=verify)


def pack_tables(tables, codec_name: str, threads: int | None) -> pa.Buffer:
    if isinstance(tables, (pa.Table, pa.RecordBatch)):
        tables = [tables]
    return codec.pack(list(tables), codec_name, threads=threads)


def _own(buf) -> pa.Buffer:
    """Copy an argument out of Ray's shared memory into this device's own memory.

    Arguments arrive as zero-copy views of the node's object store; keeping them would
    pin object-store memory the device does not own and defeat its memory budget.
    """
    out = pa.allocate_buffer(len(memoryview(buf)))
    np.copyto(np.frombuffer(out, dtype=np.uint8), np.frombuffer(buf, dtype=np.uint8))
    return out


class DeviceActor:
    """A device: its store, its services, its link. Made remote by the client with options."""

    def __init__(self, config: ColonyConfig, device: str) -> None:
        from colony.cost import suite as calibration
        from colony.runtime import emulation
        self.config = config
        self.spec = config.device(device)
        machine_cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self.emulation = emulation.apply(config, device)
        spec = self.spec
        rctx = ray.get_runtime_context()
        self.restarted = rctx.was_current_actor_reconstructed
        if not spec.spill_explicit:
            # default spill dirs are per Ray cluster, so two colonies with the same name on one
            # machine never clear or recover each other's files; stable across actor restarts
            cluster = re.sub(r"[^A-Za-z0-9_.-]", "_", rctx.gcs_address or "local")
            spec = replace(spec, spill_dir=str(Path(spec.spill_dir) / f"cluster-{cluster}"))
            self.spec = spec
        if spec.disk and not self.restarted:
            clear_spill_dir(spec.spill_dir)   # a fresh device: objects of an earlier colony must not reappear
        store = ObjectStore(device, memory_budget=spec.memory,
                            spill_dir=spec.spill_dir if spec.disk else None,
                            disk_budget=spec.disk, threads=spec.threads)
        for pool in config.device_pools(device):
            store.create_pool(pool, durable=config.pool(pool).durable)
        self.links = Links(config, device)
        # the runtime's own CPU work on this device (packing injected batches, copying puts)
        # runs on at most `threads` threads, however many calls the actor serves at once
        self._cpu = threading.BoundedSemaphore(spec.threads)
        fp = fingerprint(spec)
        ctx = DeviceContext(name=device, role=spec.role, threads=spec.threads, store=store,
                            peers=RayPeers(config, device), calibration=calibration.record(device, fp),
                            workdir=spec.spill_dir, fingerprint=fp, record_dir=str(calibration.calibration_dir()),
                            link_gbps=self.links.gbps_to, own_process=True)
        self.host = DeviceHost(ctx, {"objects": {}, **config.device_services(device)})
        self._replace_services()
        self.started = time.time()
        self.calls = 0
        # large call parts by id: results awaiting the caller's DoGet, arguments put ahead of their call
        self._results: dict[str, tuple[Any, float]] = {}
        self._results_lock = threading.Lock()
        self._warm: dict[int, threading.Barrier] = {}
        self._warmed: set[int] = set()          # handler threads warmed (their idents)
        self._warm_lock = threading.Lock()
        from colony.runtime import auth
        from colony.runtime.flight import DeviceFlight, StoredReads
        self.flight = DeviceFlight(self, ray.util.get_node_ip_address(), auth.token())
        # Emulated DMA: a pinned device's stored objects are read for its peers (the host
        # pulling a push-back's objects) by a second endpoint whose threads run on cores
        # outside the device's own, as a DPU's DMA engine moves bytes without its cores.
        # The link is still paced and charged here, per byte sent.
        dma = [c for c in machine_cores if c not in (self.emulation.affinity or machine_cores)
               and spec.role != "host"]
        self.dma_cores = tuple(dma) or None
        self.reads = DeviceFlight.on_cores(self.dma_cores, StoredReads(self), ray.util.get_node_ip_address(),
                                           auth.token()) if self.dma_cores else None
        process.freeze_heap()      # start-up is done: its objects stay (see colony.runtime.process)
        self._gc = process.watch_gc()
        # Ray restarted this device: no client is there to warm its handler threads (the
        # runtime does it for a device it starts), so a task of its own sends the same warm-up
        self._warm_ref = _warm_restarted.remote(config, device) if self.restarted else None

    def _warm_state(self) -> str | None:
        """How a restarted device's own warm-up went (``status``): pending, done, or why not.
        A warm-up is an optimization: cold threads serve too, so a failure is only reported."""
        if self._warm_ref is None:
            return None
        ready, _ = ray.wait([self._warm_ref], timeout=0)
        if not ready:
            return "pending"
        try:
            cold = ray.get(self._warm_ref)
        except Exception as e:
            return f"failed: {type(e).__name__}: {e}"[:300]
        return f"not every thread met: {cold}" if cold else "done"

    # -- links: the one place this device's bytes are paced and counted ---------------------
    def _in(self, nbytes: int, peer: str = CLIENT, seconds: float | None = None, stream: bool = True) -> None:
        self.links.into(nbytes, peer, seconds, stream)

    def _out(self, nbytes: int, peer: str = CLIENT, seconds: float | None = None) -> None:
        self.links.out(nbytes, peer, seconds)

    # -- generic dispatch -------------------------------------------------------------
    def call(self, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """A service call: its arguments cross the caller's link in, its result out."""
        peer = kwargs.pop(FROM, CLIENT)
        bulk = kwargs.pop(BULK, False)
        to = kwargs.pop(TO, None)
        self.calls += 1
        was = getattr(_SERVING, "bulk_client", False)
        _SERVING.bulk_client = bool(bulk and peer == CLIENT)
        try:
            # argument parts that came ahead over Flight were charged as they arrived (flight_put)
            out = self.links.call(peer, lambda *a, **k: self.host.call(service, method, *fetch_large(a, self._take),
                                                                       **fetch_large(k, self._take)),
                                  args, kwargs, to=to, stream=calls_stream(service))
        finally:
            _SERVING.bulk_client = was
        if bulk or to is not None:   # large parts stay here for the client's DoGet (charged above, once)
            out = stash_large(out, self._stash, self.spec.name)
        return out

    def _take(self, ref) -> Any:
        """An argument part a caller put here ahead of its call (DoPut ``arg``); a reference to
        a part held on another device (a relayed result passed along) stays a reference."""
        if ref.device != self.spec.name:
            return ref
        with self._results_lock:
            obj, _t = self._results.pop(ref.id, (None, 0.0))
        if obj is None:
            from colony.errors import RuntimeFailure
            raise RuntimeFailure(f"device {self.spec.name!r} holds no call argument {ref.id!r}: it was taken "
                                 f"already or dropped after {RESULT_TTL_S} s; call again")
        return obj

    def _stash(self, obj: Any, rid: str | None = None) -> str:
        """Keep a large call part: a result for the caller's DoGet, or an argument put ahead of
        its call (``rid`` given by its sender). Parts never taken (a caller that gave up at its
        deadline, a call that never came) are dropped after RESULT_TTL_S."""
        import uuid
        now = time.monotonic()
        with self._results_lock:
            for k in [k for k, (_o, t) in self._results.items() if now - t > RESULT_TTL_S]:
                del self._results[k]
            rid = rid or uuid.uuid4().hex
            self._results[rid] = (obj, now)
        return rid

    # -- object service with the link in the path ----------------------------------------
    def put(self, pool: str, key: str, obj: Any, codec_name: str = "none", src: str = CLIENT):
        self.calls += 1
        self._in(payload_bytes(obj), src)
        if isinstance(obj, pa.Buffer):
            with self._cpu:
                obj = _own(obj)
        return self.host.call("objects", "put", pool, key, obj, codec_name)

    def get(self, pool: str, key: str, dst: str = CLIENT) -> pa.Buffer:
        """The object over Ray (devices among themselves; the client uses Flight DoGet)."""
        self.calls += 1
        buf = self.host.call("objects", "get", pool, key)
        self._out(buf.size, dst)
        return buf

    def _store_batch(self, pool: str, key: str, data: Any, codec_name: str = "none") -> tuple:
        """Pack Arrow data into the object format here, with the device's threads (an
        already packed object is copied into the device's memory); store it."""
        with self._cpu:
            t0 = time.perf_counter()
            if isinstance(data, (pa.Table, pa.RecordBatch, list)):
                buf = codec.pack(data, codec_name, threads=self.spec.threads)
            else:
                buf = _own(data)
            t1 = time.perf_counter()
        entry = self.host.ctx.store.put(pool, key, buf)
        return entry, t1 - t0

    def ingest(self, pool: str, key: str, data: Any, codec_name: str = "none") -> tuple:
        """Injection target over Ray: Arrow data arrives zero-copy from Ray's object store.

        Returns (entry, seconds packing on the device).
        """
        self.calls += 1
        self._in(payload_bytes(data))
        return self._store_batch(pool, key, data, codec_name)

    def echo(self, data: Any) -> int:
        """Receive bytes over the link and acknowledge their size (calibration of transfers)."""
        n = payload_bytes(data)
        self._in(n)
        return n

    def send(self, nbytes: int) -> pa.Buffer:
        """Return ``nbytes`` over the link (calibration of device-to-host transfers)."""
        buf = pa.allocate_buffer(nbytes)
        self._out(nbytes)
        return buf

    # -- the Flight endpoint (bulk data) ----------------------------------------------------
    def flight_location(self) -> str:
        return self.flight.location

    def read_location(self) -> str:
        """Where peers pull stored objects: the emulated-DMA read endpoint of a pinned device,
        else its Flight endpoint."""
        return self.reads.location if self.reads is not None else self.flight.location

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def flight_put(self, cmd: dict, reader) -> dict:
        """DoPut: receive record batches over Flight (each charged on the link as it arrives).

        ``op``: ``ingest`` (receive every batch, then pack here and store), ``inflight``
        (pack each batch into the object as it arrives: serialization in flight; ``ipc_bytes``
        and ``rows`` announce the stream), ``put`` (one packed object sent as a blob),
        ``echo`` (count and drop: the "no serialization" baseline and transfer benchmarks).
        """
        from colony.errors import ObjectTooLarge
        from colony.runtime.flight import table_blob
        self.calls += 1
        peer = cmd.get("from", CLIENT)
        op = cmd.get("op")
        writer = None
        if op == "inflight":
            writer = codec.ObjectWriter(reader.schema, int(cmd["ipc_bytes"]), int(cmd["rows"]))
        batches, n, t0, busy, pack_s = [], 0, time.perf_counter(), 0.0, 0.0
        it = iter(reader)
        while True:
            t1 = time.perf_counter()
            chunk = next(it, None)
            if chunk is None:
                break
            b = chunk.data
            t2 = time.perf_counter()
            # a call's argument sent ahead, of a service whose calls are messages: its first
            # chunk starts a stream of its own (colony.pacing.Link), the rest continue it
            first_of_message = n == 0 and op == "arg" and not calls_stream(str(cmd.get("service")))
            self._in(b.nbytes, peer, t2 - t1, stream=not first_of_message)
            busy += t2 - t1
            n += b.nbytes
            if writer is not None:
                with self._cpu:
                    writer.write(b)
                pack_s += time.perf_counter() - t2
            elif op != "echo":
                batches.append(b)
        recv_s = time.perf_counter() - t0
        if op == "echo":
            return {"bytes": n, "recv_s": recv_s}
        try:
            if op == "inflight":
                t3 = time.perf_counter()
                with self._cpu:
                    buf = writer.finish()
                pack_s += time.perf_counter() - t3
                entry = self.host.ctx.store.put(cmd["pool"], cmd["key"], buf)
            elif op == "put":
                with self._cpu:   # the copy into the device's memory is the device's own work
                    buf = table_blob(pa.Table.from_batches(batches), own=True)
                entry = self.host.call("objects", "put", cmd["pool"], cmd["key"], buf)
                pack_s = 0.0
            elif op == "arg":      # a large call argument, ahead of its call (runtime.transfer.put_arg)
                table = pa.Table.from_batches(batches, schema=reader.schema)
                self._stash(table_blob(table) if cmd.get("kind") == "buffer" else table, str(cmd["id"]))
                return {"bytes": n, "recv_s": recv_s}
            elif op == "ingest":   # the messages of one DoPut are one table (zero-copy), as inflight stores it
                table = pa.Table.from_batches(batches, schema=reader.schema)
                entry, pack_s = self._store_batch(cmd["pool"], cmd["key"], table, cmd.get("codec", "none"))
            else:
                raise ValueError(f"unknown Flight put op {op!r}")
        except ObjectTooLarge as e:
            return {"error": "ObjectTooLarge", "message": str(e), "size": e.size, "capacity": e.capacity}
        return {"entry": [entry.pool, entry.key, entry.nbytes, entry.rows, entry.codec, entry.spilled],
                "bytes": n, "recv_s": recv_s, "pack_s": pack_s}

    def flight_get(self, cmd: dict):
        """DoGet: ``get`` (a stored object, as one blob) or ``blob`` (``nbytes`` of zeros)."""
        from colony.runtime.flight import MESSAGE_BYTES, blob_table
        self.calls += 1
        peer = cmd.get("from", CLIENT)
        if cmd.get("op") == "result":       # a large part of a call's result: charged by the call
            with self._results_lock:
                obj, _t = self._results.pop(cmd["id"], (None, 0.0))
            if obj is None:
                from colony.errors import RuntimeFailure
                raise RuntimeFailure(f"device {self.spec.name!r} holds no call result {cmd['id']!r}: it was "
                                     f"fetched already or dropped after {RESULT_TTL_S} s; call again")
            table = obj if isinstance(obj, pa.Table) else blob_table(obj, MESSAGE_BYTES)
            return table.schema, iter(table.to_batches())
        if cmd.get("op") == "get":
            buf = self.host.call("objects", "get", cmd["pool"], cmd["key"])
        elif cmd.get("op") == "blob":
            buf = pa.allocate_buffer(int(cmd["nbytes"]))
        else:
            raise ValueError(f"unknown Flight get op {cmd.get('op')!r}")
        table = blob_table(buf)

        def batches():
            for b in table.to_batches():
                self._out(buf.size, peer)
                yield b
        return table.schema, batches()

    def set_link(self, gbps: float | None, device: str | None = None) -> None:
        """Change (or remove, with None) this device's link rate at run time (experiments);
        with ``device``, that peer's new rate (this end of the link to it follows)."""
        if device is None or device == self.spec.name:
            self.links.set_gbps(gbps)
            # the link is part of what the device's calibrations are valid for: a new rate is a
            # new fingerprint, whose record (if any) prices the device from now on
            from colony.cost import suite as calibration
            self.spec = replace(self.spec, link_gbps=self.links.gbps)    # the rate as the links keep it
            fp = fingerprint(self.spec)
            self.host.rekey(fp, calibration.record(self.spec.name, fp))
        else:
            self.links.set_peer_gbps(device, gbps)

    def link_stats(self) -> list[dict]:
        return self.links.stats()

    def set_budget(self, memory: int | None = None, disk: int | None = None) -> dict:
        """Change the store's memory/disk budgets at run time (experiments, back-pressure tests).

        Lowering a budget does not evict anything by itself; later puts see the new limits.
        """
        store = self.host.ctx.store
        with store._lock:
            if memory is not None:
                store.memory_budget = int(memory)
            if disk is not None:
                store.disk_budget = int(disk) if store.spill_dir is not None else 0
        return store.info()

    def place(self, service: str, options: dict | None = None) -> list[str]:
        """Place a registered service here at run time (by name; never client code); recorded,
        so a restart of this device places it again (:mod:`colony.runtime.placements`)."""
        from colony.services.base import service_class
        self.host.services[service] = service_class(service)(self.host.ctx, **(options or {}))
        placements.record(self.spec.spill_dir, service, options or {})
        return sorted(self.host.services)

    def _replace_services(self) -> None:
        """Restarted: the services placed at run time before, again; fresh: forget them."""
        from colony.services.base import service_class
        if not self.restarted:
            placements.forget(self.spec.spill_dir)
            return
        for service, options in placements.load(self.spec.spill_dir).items():
            try:
                self.host.services[service] = service_class(service)(self.host.ctx, **options)
            except Exception as e:  # noqa: BLE001 - the device comes up without it, and says why
                log.warning("device %s: could not place %r again after its restart: %s", self.spec.name, service, e)

    def free_bytes(self) -> int | None:
        return self.host.ctx.store.free_bytes()

    # -- facts -----------------------------------------------------------------------
    def status(self) -> dict:
        ctx = ray.get_runtime_context()
        return {
            "device": self.spec.name, "role": self.spec.role, "profile": self.spec.profile,
            "emulated": self.spec.emulated, "threads": self.spec.threads, "pid": os.getpid(),
            "node_id": ctx.get_node_id(), "restarted": self.restarted,
            "flight_args_sent": getattr(getattr(self.host.ctx.peers, "transfers", None), "args", 0),
            "uptime_s": time.time() - self.started, "calls": self.calls, "warm_threads": len(self._warmed),
            "warm_up": self._warm_state(),
            "services": sorted(self.host.services), "store": self.host.ctx.store.info(),
            "emulation": self.emulation.as_dict(),
            "links": self.link_stats(), "flight": self.flight.location,
            "dma_cores": list(self.dma_cores) if self.dma_cores else None,
            "link_waited_s": sum(c["waited_s"] for ln in self.link_stats() for c in ln["directions"].values()),
            "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            # objects frozen at start (never walked again); collections and their pauses since
            "gc": self._gc.to_dict(),
        }

    def calibrate(self, seed: int = 0, quick: bool = False) -> dict:
        """Run the fixed in-device calibration suite (memcpy, IPC, Arrow kernels)."""
        from colony.cost import suite as calibration
        return calibration.device_suite(threads=self.spec.threads, seed=seed, quick=quick)

    def set_calibration(self, result: dict) -> None:
        """Install the device suite's result, keeping the entries other calibrations added
        (the query cost models live under ``"query"``)."""
        keep = {k: v for k, v in (self.host.ctx.calibration or {}).items() if k not in result and k != "stale"}
        self.host.ctx.calibration = {**keep, **result, "fingerprint": self.host.ctx.fingerprint}

    def warm_threads(self, n: int) -> bool:
        """Warm each of this actor's ``n`` handler threads (:func:`colony.query.plan.warm_thread`):
        the runtime sends ``n`` of these at once and a barrier holds each until all ``n`` run,
        so every thread gets one. False if they did not all meet (then some threads stay cold)."""
        from colony.query.plan import warm_thread
        with self._warm_lock:
            barrier = self._warm.setdefault(n, threading.Barrier(n))
        try:
            barrier.wait(timeout=WARM_TIMEOUT_S)
            met = True
        except threading.BrokenBarrierError:
            met = False
        warm_thread()
        with self._warm_lock:
            self._warmed.add(threading.get_ident())
        return met

    def ping(self) -> str:
        return self.spec.name
