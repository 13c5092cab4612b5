"""An in-process colony: every device a DeviceHost in this process (tests, no Ray)."""

from __future__ import annotations

from typing import Any

from colony.errors import ColonyError
from colony.services.base import DeviceContext
from colony.services.host import DeviceHost
from colony.store import ObjectStore


class LocalColony:
    """Devices by name; ``call`` goes straight to the device's DeviceHost.

    ``devices`` maps name -> dict(role=..., threads=..., services={name: options}, pools=[...],
    memory_budget=..., spill_dir=..., disk_budget=...) (budgets in bytes; see ObjectStore).
    """

    def __init__(self, devices: dict[str, dict]) -> None:
        self.hosts: dict[str, DeviceHost] = {}
        for name, spec in devices.items():
            store = ObjectStore(name, memory_budget=spec.get("memory_budget", 0), spill_dir=spec.get("spill_dir"),
                                disk_budget=spec.get("disk_budget", 0))
            for pool in spec.get("pools", ()):
                store.create_pool(pool)
            ctx = DeviceContext(name=name, role=spec.get("role", "smartnic"),
                                threads=spec.get("threads", 1), store=store, peers=self,
                                workdir=spec.get("workdir"))
            self.hosts[name] = DeviceHost(ctx, spec.get("services", {}))

    def devices(self) -> list[str]:
        return list(self.hosts)

    def host(self, device: str) -> DeviceHost:
        try:
            return self.hosts[device]
        except KeyError:
            raise ColonyError(f"unknown device {device!r}; devices: {sorted(self.hosts)}") from None

    def call(self, device: str, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.host(device).call(service, method, *args, **kwargs)

    def store(self, device: str) -> ObjectStore:
        return self.host(device).ctx.store
