"""DeviceHost: one device's store and services, and the only way into them.

The Ray device actor wraps exactly one DeviceHost; tests use it in-process. Dispatch
only reaches methods marked @endpoint on services placed on this device.
"""

from __future__ import annotations

from typing import Any

from colony.services.base import DeviceContext, Service, service_class
from colony.errors import ServiceError


class DeviceHost:
    def __init__(self, ctx: DeviceContext, services: dict[str, dict] | list[str] = ()) -> None:
        self.ctx = ctx
        specs = services if isinstance(services, dict) else {s: {} for s in services}
        self.services: dict[str, Service] = {
            name: service_class(name)(ctx, **(opts or {})) for name, opts in specs.items()}

    def call(self, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        svc = self.services.get(service)
        if svc is None:
            raise ServiceError(f"service {service!r} is not placed on device {self.ctx.name!r}; "
                               f"placed: {sorted(self.services)}")
        fn = getattr(type(svc), method, None)
        if method.startswith("_") or fn is None or not getattr(fn, "__colony_endpoint__", False):
            raise ServiceError(f"{service}.{method} is not an endpoint of service {service!r}")
        return fn(svc, *args, **kwargs)
