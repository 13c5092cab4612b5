"""The one interface through which anything reaches a colony's devices.

Services call their peers through it (device to device), and client-side drivers (query
client, sift driver, COSTA) call devices through it. The Ray runtime's ``Colony``, its
device-side peers and the in-process ``LocalColony`` all implement every method; nobody
needs to test what a colony can do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import pyarrow as pa

from colony.store import Entry


@dataclass(frozen=True)
class DeviceInfo:
    """What a caller may know about a device: facts of the configuration, never measurements."""

    name: str
    role: str                          # host | smartnic | csd
    label: str                         # e.g. "emulated bluefield2"; shown in every output
    services: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()
    threads: int = 1


class Colony(Protocol):
    """Calls, placement and objects on a colony's devices."""

    def call(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
             **kwargs: Any) -> Any:
        """Call an endpoint of a service placed on ``device`` and wait for its result, at most
        ``timeout`` seconds (None: the colony's default deadline); a device that does not
        answer in time raises :class:`colony.errors.DeadlineExceeded` naming it."""

    def relay(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
              **kwargs: Any) -> Any:
        """As :meth:`call`, made by a device on behalf of the client it serves: the large parts
        of the result go from ``device`` straight to that client (over the ``device`` ->
        client link), never through the calling device; the caller gets the small rest."""

    def call_async(self, device: str, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Start a call; returns a future for :meth:`wait`."""

    def wait(self, futures: Any, timeout: float | None = None) -> Any:
        """The result of one future from :meth:`call_async`, or the list of results of a list."""

    def devices(self) -> list[DeviceInfo]:
        """Every device of the colony."""

    def place(self, service: str, devices: str | Sequence[str] = "all", **options: Any) -> None:
        """Place a registered service on devices ("all", "role:<role>", or names) at run time."""

    def put(self, pool: str, key: str, tables: Any, codec: str = "none") -> Entry:
        """Store Arrow data (one table or a list) as one object on the key's owner in ``pool``."""

    def get(self, pool: str, key: str) -> list[pa.Table]:
        """The tables of the object under ``key`` in ``pool``."""
