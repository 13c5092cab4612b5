"""An in-process colony: every device a DeviceHost in this process (tests, no Ray).

It implements the whole :class:`colony.services.protocol.Colony` interface from the same
:class:`colony.config.ColonyConfig` the Ray runtime reads, so a driver or a service runs
unchanged on both. Devices are not weakened here (no thread budgets, no paced link, no
memory budget unless ``budgets=True``), but every call crosses the same links as on Ray
(:mod:`colony.runtime.links`): paced at the devices' ``link_gbps`` (or the rates given
to ``links_gbps``), counted always. Device-to-device calls and push-back to the host go
over the link between those two devices, never through the caller. Every call has a
deadline (``timeout=``, else ``runtime.call_timeout_s``): it runs on a thread of a pool and
the caller stops waiting at the deadline with :class:`DeadlineExceeded` naming the device
(the abandoned call finishes in the background: a thread cannot be killed). ``budgets=True``
gives each store its device's memory/disk budget and spill directory, so data larger
than memory streams through (``colony sift run --input``).
"""

from __future__ import annotations

import contextvars
import queue
import threading
from concurrent.futures import Future
from typing import Any, Mapping, Sequence

import pyarrow as pa

from colony import codec as _codec
from colony.config import ColonyConfig
from colony.config.schema import _select, resolve
from colony.errors import DeadlineExceeded, UnknownDevice
from colony.runtime.fingerprint import fingerprint
from colony.services.base import DeviceContext, calls_stream, service_class
from colony.services.host import DeviceHost
from colony.services.protocol import DeviceInfo
from colony.runtime.flight import PartRef, fetch_large, stash_large
from colony.runtime.links import CLIENT, Links
from colony.store import Entry, ObjectStore, routing


class LocalColony:
    """Devices by name; ``call`` goes straight to the device's DeviceHost, in this thread."""

    def __init__(self, config: ColonyConfig | Mapping | None = None, links_gbps: Mapping[str, float] | None = None,
                 me: str = CLIENT, *, budgets: bool = False) -> None:
        self.config = resolve(config)
        self.me = me
        self.hosts: dict[str, DeviceHost] = {}
        self.links: dict[str, Links] = {}
        self._results: dict[str, Any] = {}     # relayed result parts, until the client takes them
        self._results_lock = threading.Lock()
        self._records: dict[str, dict[str, dict]] = {}   # per device, its in-memory records by fingerprint
        for name, spec in self.config.devices.items():
            self.links[name] = Links(self.config, name)
            store = (ObjectStore(name, memory_budget=spec.memory, spill_dir=spec.spill_dir, disk_budget=spec.disk)
                     if budgets else ObjectStore(name))
            for pool in self.config.device_pools(name):
                store.create_pool(pool)
            ctx = DeviceContext(name=name, role=spec.role, threads=spec.threads, store=store,
                                peers=_Peers(self, name),
                                workdir=spec.spill_dir if spec.spill_explicit else None,
                                fingerprint=fingerprint(spec, "local"), link_gbps=self.links[name].gbps_to)
            self.hosts[name] = DeviceHost(ctx, {"objects": {}, **self.config.device_services(name)})
        for name, gbps in (links_gbps or {}).items():
            self.set_link(name, gbps)

    # -- devices ------------------------------------------------------------------------
    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(name=n, role=s.role, label=s.label, services=tuple(self.hosts[n].services),
                           pools=tuple(self.config.device_pools(n)), threads=s.threads)
                for n, s in self.config.devices.items()]

    def host(self, device: str) -> DeviceHost:
        try:
            return self.hosts[device]
        except KeyError:
            raise UnknownDevice(f"unknown device {device!r}; devices: {sorted(self.hosts)}") from None

    def store(self, device: str) -> ObjectStore:
        return self.host(device).ctx.store

    # -- calls --------------------------------------------------------------------------
    def call(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
             **kwargs: Any) -> Any:
        """Crosses the link between the caller and ``device``; waits at most ``timeout``
        seconds (default ``runtime.call_timeout_s``), then raises :class:`DeadlineExceeded`."""
        return fetch_large(_call(self, self.me, device, service, method, args, kwargs, timeout), self._fetch)

    relay = call   # the client's own calls: it is the end a relayed result goes to

    def _stash(self, obj: Any) -> str:
        import uuid
        rid = uuid.uuid4().hex
        with self._results_lock:
            self._results[rid] = obj
        return rid

    def _fetch(self, ref: PartRef) -> Any:
        with self._results_lock:
            return self._results.pop(ref.id)

    def set_link(self, device: str, gbps: float | None) -> None:
        """Pace every link of ``device`` at ``gbps`` Gbit/s from now on (None: unpaced), at
        both ends (the other devices' links to it follow)."""
        self.host(device)
        self.links[device].set_gbps(gbps)
        for name, lk in self.links.items():
            if name != device:
                lk.set_peer_gbps(device, gbps)
        # a new rate is a new fingerprint; a rate this colony had before gets its record back
        self.config = self.config.with_link(device, gbps)
        h = self.hosts[device]
        kept = self._records.setdefault(device, {})
        kept[h.ctx.fingerprint] = h.ctx.calibration
        fp = fingerprint(self.config.device(device), "local")
        h.rekey(fp, kept.get(fp, {}))

    def link_stats(self) -> list[dict]:
        """Every link's counters (bytes, transfers, busy seconds per direction)."""
        return [ln for lk in self.links.values() for ln in lk.stats()]

    def call_async(self, device: str, service: str, method: str, *args: Any, **kwargs: Any) -> Future:
        """Runs the call now, in this thread (devices take turns), and returns its settled future."""
        return _settled(lambda: self.call(device, service, method, *args, **kwargs))

    def wait(self, futures: Future | Sequence[Future], timeout: float | None = None) -> Any:
        if isinstance(futures, Future):
            return futures.result(timeout)
        return [f.result(timeout) for f in futures]

    def place(self, service: str, devices: str | Sequence[str] = "all", **options: Any) -> None:
        cls = service_class(service)
        sel = devices if isinstance(devices, str) else list(devices)
        for name in _select(sel, self.config.devices, "place.devices"):
            h = self.hosts[name]
            h.services[service] = cls(h.ctx, **options)

    # -- objects ------------------------------------------------------------------------
    def owner(self, pool: str, key: str) -> str:
        p = self.config.pool(pool)
        return routing.owner(key, p.members, p.policy)

    def put(self, pool: str, key: str, tables: Any, codec: str = "none") -> Entry:
        return self.store(self.owner(pool, key)).put(pool, key, tables, codec)

    def get(self, pool: str, key: str) -> list[pa.Table]:
        return _codec.unpack(self.store(self.owner(pool, key)).get(pool, key))


class _Peers:
    """A device's view of the colony: the same devices, its own end of the links."""

    def __init__(self, colony: LocalColony, me: str) -> None:
        self._colony, self.me = colony, me

    def call(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
             **kwargs: Any) -> Any:
        return _call(self._colony, self.me, device, service, method, args, kwargs, timeout)

    def relay(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
              **kwargs: Any) -> Any:
        """A call on behalf of the client: the result's large parts cross ``device``'s link to
        the client, not through this device (as on Ray, where the client fetches them)."""
        return _call(self._colony, self.me, device, service, method, args, kwargs, timeout, to=CLIENT)

    def call_async(self, device: str, service: str, method: str, *args: Any, **kwargs: Any) -> Future:
        return _settled(lambda: self.call(device, service, method, *args, **kwargs))

    def pull(self, device: str, pool: str, key: str):
        """A stored object of ``device`` read from here (the host pulling a push-back's
        objects), charged on ``device``'s link to this end."""
        buf = self._colony.store(device).get(pool, key)
        self._colony.links[device].out(buf.size, self.me)
        return buf

    def __getattr__(self, name: str):
        return getattr(self._colony, name)


class _Threads:
    """Daemon threads that run calls and stay for the next one: a call may start a process
    tied to its thread's life (the query worker's PR_SET_PDEATHSIG), and a hung call must
    not keep the interpreter from exiting."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn) -> Future:
        fut: Future = Future()
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._loop, name="colony-local-call", daemon=True).start()
        self._q.put((fn, fut))
        return fut

    def _loop(self) -> None:
        while True:
            fn, fut = self._q.get()
            try:
                fut.set_result(fn())
            except BaseException as e:   # noqa: BLE001 - handed to the caller
                fut.set_exception(e)
            del fn, fut
            with self._lock:
                self._idle += 1


_THREADS = _Threads()


def _call(colony: LocalColony, me: str, device: str, service: str, method: str, args: tuple, kwargs: dict,
          timeout: float | None, to: str | None = None) -> Any:
    """One call from ``me`` to ``device`` over their link, in a daemon thread, waited for at
    most ``timeout`` seconds (default ``runtime.call_timeout_s``)."""
    host = colony.host(device)
    link = colony.links[device]
    deadline = colony.config.runtime.call_timeout_s if timeout is None else timeout
    ctx = contextvars.copy_context()

    def run():
        out = link.call(me, lambda *a, **k: host.call(service, method, *a, **k), args, kwargs, to,
                        stream=calls_stream(service))
        # a relayed result's large parts wait for the client (it takes them in LocalColony.call)
        return out if to is None else stash_large(out, colony._stash, device)
    fut = _THREADS.submit(lambda: ctx.run(run))
    try:
        return fut.result(deadline)
    except TimeoutError:
        if fut.done():
            return fut.result()
        raise DeadlineExceeded(f"device {device!r} did not answer {service}.{method} within its deadline of "
                               f"{deadline} s; it may be hung: pass a longer timeout= (the call goes on in the "
                               f"background)", device, deadline) from None


def _settled(fn) -> Future:
    """Run ``fn`` now, in this thread, and return its settled future."""
    fut: Future = Future()
    try:
        fut.set_result(fn())
    except BaseException as e:   # noqa: BLE001 - handed to the caller by wait()
        fut.set_exception(e)
    return fut
