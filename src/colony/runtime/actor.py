"""The device actor: one Ray actor per device, wrapping that device's DeviceHost.

It is pinned to its device by the device's custom Ray resource, runs threaded
(``max_concurrency`` > 1) so a service can call a peer that calls back without
deadlock, applies the device's emulation budgets to its own process, and paces every
transfer over its link when a link rate is configured. Clients reach only the object
service and the @endpoint methods of placed services: devices never run client code.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import ray

from colony import codec
from colony.config import ColonyConfig
from colony.config.schema import _select
from colony.pacing import TokenBucket
from colony.services.base import DeviceContext
from colony.runtime.fingerprint import fingerprint
from colony.runtime.futures import resolve
from colony.services.host import DeviceHost
from colony.services.protocol import DeviceInfo
from colony.store import Entry, ObjectStore, routing
from colony.store.objects import clear_spill_dir


def actor_name(config: ColonyConfig, device: str) -> str:
    return f"{config.name}:{device}"


def device_infos(config: ColonyConfig) -> list[DeviceInfo]:
    """Every device of ``config`` as the Colony interface describes it."""
    return [DeviceInfo(name=d.name, role=d.role, label=d.label,
                       services=tuple(["objects", *config.device_services(d.name)]),
                       pools=tuple(config.device_pools(d.name)), threads=d.threads)
            for d in config.devices.values()]


class RayPeers:
    """The Colony interface over device actors found by name.

    Devices use it for device-to-device calls (straight to the other device's actor, never
    through a client); the client :class:`colony.runtime.client.Colony` extends it.
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

    # -- calls ------------------------------------------------------------------------
    def call(self, device: str, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call an endpoint of a service placed on ``device`` and wait for its result."""
        return resolve(self.handle(device).call.remote(service, method, *args, **kwargs))

    def call_async(self, device: str, service: str, method: str, *args: Any, **kwargs: Any):
        """Start a call; returns a future (a Ray ObjectRef) for :meth:`wait`."""
        return self.handle(device).call.remote(service, method, *args, **kwargs)

    def wait(self, futures, timeout: float | None = None):
        """Results of futures from :meth:`call_async` (a list, or one future)."""
        return resolve(futures, timeout=timeout)

    def devices(self) -> list[DeviceInfo]:
        return device_infos(self.config)

    def place(self, service: str, devices: str | Sequence[str] = "all", **options: Any) -> None:
        """Place a registered service on devices at run time ("all", "role:<role>", names).

        Placements from the configuration come back when Ray restarts a device; run-time
        placements do not (put lasting ones in the config).
        """
        sel = devices if isinstance(devices, str) else list(devices)
        names = _select(sel, self.config.devices, "place.devices")
        resolve([self.handle(n).place.remote(service, options) for n in names])

    # -- objects ------------------------------------------------------------------------
    def owner(self, pool: str, key: str) -> str:
        p = self.config.pool(pool)
        return routing.owner(key, p.members, p.policy)

    def put(self, pool: str, key: str, tables, codec: str = "none", threads: int | None = None) -> Entry:
        """Pack ``tables`` (one or a list) into an object here and store it on the key's owner."""
        return resolve(self.put_async(pool, key, tables, codec, threads))

    def put_async(self, pool: str, key: str, tables, codec: str = "none", threads: int | None = None):
        buf = tables if isinstance(tables, pa.Buffer) else pack_tables(tables, codec, threads)
        return self.handle(self.owner(pool, key)).put.remote(pool, key, buf)

    def get_object(self, pool: str, key: str) -> pa.Buffer:
        """The packed object (zero-copy view of what the device sent)."""
        return resolve(self.handle(self.owner(pool, key)).get.remote(pool, key))

    def get(self, pool: str, key: str, verify: bool = True) -> list[pa.Table]:
        return codec.unpack(self.get_object(pool, key), verify=verify)


def pack_tables(tables, codec_name: str, threads: int | None) -> pa.Buffer:
    if isinstance(tables, (pa.Table, pa.RecordBatch)):
        tables = [tables]
    return codec.pack(list(tables), codec_name, threads=threads)


def _nbytes(obj: Any) -> int:
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return obj.nbytes
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(o) for o in obj)
    try:
        return memoryview(obj).nbytes
    except TypeError:
        return 0


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
            store.create_pool(pool)
        self.link = TokenBucket.gbps(spec.link_gbps or None)   # None: unpaced, counts bytes
        # the runtime's own CPU work on this device (packing injected batches, copying puts)
        # runs on at most `threads` threads, however many calls the actor serves at once
        self._cpu = threading.BoundedSemaphore(spec.threads)
        ctx = DeviceContext(name=device, role=spec.role, threads=spec.threads, store=store,
                            peers=RayPeers(config, device), calibration=calibration.load(device),
                            workdir=spec.spill_dir, fingerprint=fingerprint(spec))
        self.host = DeviceHost(ctx, {"objects": {}, **config.device_services(device)})
        self.started = time.time()
        self.calls = 0

    # -- link ---------------------------------------------------------------------
    def _pace(self, nbytes: int) -> None:
        if nbytes:
            self.link.consume(nbytes)

    # -- generic dispatch -------------------------------------------------------------
    def call(self, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.host.call(service, method, *args, **kwargs)

    # -- object service with the link in the path ----------------------------------------
    def put(self, pool: str, key: str, obj: Any, codec_name: str = "none"):
        self.calls += 1
        self._pace(_nbytes(obj))
        if isinstance(obj, pa.Buffer):
            with self._cpu:
                obj = _own(obj)
        return self.host.call("objects", "put", pool, key, obj, codec_name)

    def get(self, pool: str, key: str) -> pa.Buffer:
        self.calls += 1
        buf = self.host.call("objects", "get", pool, key)
        self._pace(buf.size)
        return buf

    def ingest(self, pool: str, key: str, data: Any, codec_name: str = "none") -> tuple:
        """Injection target: Arrow data arrives zero-copy from Ray's object store.

        A table (or batches) is packed into the object format here, on the device, with
        the device's threads; an already packed (compressed) object is stored as is.
        Returns (entry, seconds packing on the device).
        """
        self.calls += 1
        self._pace(_nbytes(data))
        with self._cpu:
            t0 = time.perf_counter()
            if isinstance(data, (pa.Table, pa.RecordBatch, list)):
                buf = codec.pack(data, codec_name, threads=self.spec.threads)
            else:
                buf = _own(data)
            t1 = time.perf_counter()
        entry = self.host.ctx.store.put(pool, key, buf)
        return entry, t1 - t0

    def echo(self, data: Any) -> int:
        """Receive bytes over the link and acknowledge their size (calibration of transfers)."""
        n = _nbytes(data)
        self._pace(n)
        return n

    def send(self, nbytes: int) -> pa.Buffer:
        """Return ``nbytes`` over the link (calibration of device-to-host transfers)."""
        buf = pa.allocate_buffer(nbytes)
        self._pace(nbytes)
        return buf

    def set_link(self, gbps: float | None) -> None:
        """Change (or remove, with None) the paced link rate at run time (experiments)."""
        self.link = TokenBucket.gbps(gbps or None)

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
        """Place a registered service here at run time (by name; never client code)."""
        from colony.services.base import service_class
        self.host.services[service] = service_class(service)(self.host.ctx, **(options or {}))
        return sorted(self.host.services)

    def free_bytes(self) -> int | None:
        return self.host.ctx.store.free_bytes()

    # -- facts -----------------------------------------------------------------------
    def status(self) -> dict:
        ctx = ray.get_runtime_context()
        return {
            "device": self.spec.name, "role": self.spec.role, "profile": self.spec.profile,
            "emulated": self.spec.emulated, "threads": self.spec.threads, "pid": os.getpid(),
            "node_id": ctx.get_node_id(), "restarted": self.restarted,
            "uptime_s": time.time() - self.started, "calls": self.calls,
            "services": sorted(self.host.services), "store": self.host.ctx.store.info(),
            "emulation": self.emulation.as_dict(),
            "link_waited_s": self.link.waited,
            "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        }

    def calibrate(self, seed: int = 0, quick: bool = False) -> dict:
        """Run the fixed in-device calibration suite (memcpy, IPC, Arrow kernels)."""
        from colony.cost import suite as calibration
        return calibration.device_suite(threads=self.spec.threads, seed=seed, quick=quick)

    def set_calibration(self, result: dict) -> None:
        """Install the device suite's result, keeping the entries other calibrations added
        (the query cost models live under ``"query"``)."""
        keep = {k: v for k, v in (self.host.ctx.calibration or {}).items() if k not in result}
        self.host.ctx.calibration = {**keep, **result}

    def ping(self) -> str:
        return self.spec.name
