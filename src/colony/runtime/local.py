"""An in-process colony: every device a DeviceHost in this process (tests, no Ray).

It implements the whole :class:`colony.services.protocol.Colony` interface from the same
:class:`colony.config.ColonyConfig` the Ray runtime reads, so a driver or a service runs
unchanged on both. Devices are not weakened here (no thread budgets, no paced link, no
memory budget unless ``budgets=True``), but every call crosses the same links as on Ray
(:mod:`colony.runtime.links`): paced at the devices' ``link_gbps`` (or the rates given
to ``links_gbps``), counted always. Device-to-device calls and push-back to the host go
over the link between those two devices, never through the caller. ``budgets=True``
gives each store its device's memory/disk budget and spill directory, so data larger
than memory streams through (``colony sift run --input``).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Mapping, Sequence

import pyarrow as pa

from colony import codec as _codec
from colony.config import ColonyConfig
from colony.config.schema import _select, resolve
from colony.errors import UnknownDevice
from colony.runtime.fingerprint import fingerprint
from colony.services.base import DeviceContext, service_class
from colony.services.host import DeviceHost
from colony.services.protocol import DeviceInfo
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
        for name, spec in self.config.devices.items():
            self.links[name] = Links(self.config, name)
            if links_gbps and name in links_gbps:
                self.links[name].set_gbps(links_gbps[name])
            store = (ObjectStore(name, memory_budget=spec.memory, spill_dir=spec.spill_dir, disk_budget=spec.disk)
                     if budgets else ObjectStore(name))
            for pool in self.config.device_pools(name):
                store.create_pool(pool)
            ctx = DeviceContext(name=name, role=spec.role, threads=spec.threads, store=store,
                                peers=_Peers(self, name),
                                workdir=spec.spill_dir if spec.spill_explicit else None, fingerprint=fingerprint(spec, "local"))
            self.hosts[name] = DeviceHost(ctx, {"objects": {}, **self.config.device_services(name)})

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
        """Runs in this thread, crossing the link between the caller and ``device``. (An
        in-process call cannot be abandoned: ``timeout`` is accepted for the interface.)"""
        host = self.host(device)
        return self.links[device].call(self.me, lambda *a, **k: host.call(service, method, *a, **k), args, kwargs)

    def set_link(self, device: str, gbps: float | None) -> None:
        """Pace every link of ``device`` at ``gbps`` Gbit/s from now on (None: unpaced)."""
        self.host(device)
        self.links[device].set_gbps(gbps)

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
        host = self._colony.host(device)
        return self._colony.links[device].call(self.me, lambda *a, **k: host.call(service, method, *a, **k),
                                               args, kwargs)

    def call_async(self, device: str, service: str, method: str, *args: Any, **kwargs: Any) -> Future:
        return _settled(lambda: self.call(device, service, method, *args, **kwargs))

    def __getattr__(self, name: str):
        return getattr(self._colony, name)


def _settled(fn) -> Future:
    """Run ``fn`` now, in this thread, and return its settled future."""
    fut: Future = Future()
    try:
        fut.set_result(fn())
    except BaseException as e:   # noqa: BLE001 - handed to the caller by wait()
        fut.set_exception(e)
    return fut
