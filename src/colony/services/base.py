"""How services live on a device, independent of the runtime that hosts them.

A service is a class registered by name. A device instantiates the services its
configuration places on it (never code a client sends), and clients reach them only
through methods marked :func:`endpoint`. The runtime (Ray actors in production,
:class:`colony.runtime.local.LocalColony` in tests) supplies the device's peers: a
:class:`colony.services.protocol.Colony` through which one device calls another directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from colony.errors import ServiceError
from colony.services.protocol import Colony
from colony.store import ObjectStore


def _unpaced(peer: str) -> float | None:
    return None


@dataclass
class DeviceContext:
    """What a service may use on its device."""

    name: str
    role: str = "smartnic"            # host | smartnic | csd
    threads: int = 1                  # thread budget for Arrow / DataFusion work
    store: ObjectStore = field(default_factory=ObjectStore)
    peers: Colony | None = None
    calibration: dict = field(default_factory=dict)   # persisted calibration results, if any
    workdir: str | None = None        # local disk for spill files / block stores
    fingerprint: str = ""             # set by the runtime; calibrations are valid for it (opaque here)
    # the rate (Gbit/s) at which the runtime paces this device's link to a peer (None: unpaced):
    # a service with links of its own (nearstore) charges only what the runtime does not
    link_gbps: Callable[[str], float | None] = _unpaced
    record_dir: str | None = None     # where the runtime keeps this device's calibration record
    own_process: bool = False         # the device runs in a process of its own (its cores' load is measurable)


class Service:
    """Base class: subclasses set ``name`` and mark callable methods with @endpoint."""

    name: ClassVar[str] = ""
    # True: successive calls may form one stream on a link (a sifting run's deliveries), so
    # the gap between them is their own transport (colony.pacing.Link); False: each call is a
    # message of its own (a query and its push-back), which never rides on another's stream
    calls_stream: ClassVar[bool] = True

    def __init__(self, ctx: DeviceContext, **options: Any) -> None:
        self.ctx = ctx
        self.options = options

    def rekeyed(self) -> None:
        """The runtime changed this device's fingerprint at run time (a new link rate): a
        service that keeps calibrated state reloads it from ``ctx.calibration``, the record for
        the new fingerprint (empty when the device was never calibrated so)."""


_SERVICES: dict[str, type[Service]] = {}

# The built-in services by name, with the module that registers each. Naming a service needs no
# import (validating a config is what every CLI command does first, and importing the query
# service's module costs seconds: DataFusion, scipy); placing one imports its module.
BUILTIN: dict[str, str] = {
    "device": "colony.services.device",
    "jobstore": "colony.services.jobstore",
    "nearstore": "colony.services.nearstore",
    "objects": "colony.services.objects",
    "query": "colony.services.query",
    "sift": "colony.services.sift",
}


def service(cls: type[Service]) -> type[Service]:
    """Class decorator: make a service placeable by its ``name``."""
    if not cls.name:
        raise ServiceError(f"{cls.__name__} needs a non-empty class attribute 'name'")
    _SERVICES[cls.name] = cls
    return cls


def endpoint(fn: Callable) -> Callable:
    """Mark a method as callable by clients and peers."""
    fn.__colony_endpoint__ = True
    return fn


def service_names() -> list[str]:
    """Every placeable service's name: the built-in ones and any registered since."""
    return sorted(set(BUILTIN) | set(_SERVICES))


def calls_stream(name: str) -> bool:
    """Whether the calls of service ``name`` may continue a stream on a link. Asked on every
    call, so a dict lookup: it is asked where the call is served, and a service served there
    is placed there, hence registered (unknown: True, and the call fails on its own)."""
    cls = _SERVICES.get(name)
    return True if cls is None else cls.calls_stream


def service_class(name: str) -> type[Service]:
    if name not in _SERVICES and name in BUILTIN:
        import importlib
        importlib.import_module(BUILTIN[name])
    try:
        return _SERVICES[name]
    except KeyError:
        raise ServiceError(f"unknown service {name!r}; known services: {service_names()}") from None
