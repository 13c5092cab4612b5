"""The links of one endpoint (a device): one :class:`colony.pacing.Link` per peer, built
from the configuration, charged by the device for every byte it receives or sends.

Both runtimes use it: the Ray device actor and the in-process ``LocalColony``, so a link
means the same on both (rate, latency, duplex, burst; paced when it has a rate, counted
always). A link's rate is its device's ``link_gbps``; between two devices, the slower of
the two; the client and host devices (no rate) never slow a link down.
"""

from __future__ import annotations

import threading

from colony.config import ColonyConfig
from colony.pacing import Link, LinkModel, payload_bytes
from colony.runtime.flight import large_bytes

CLIENT = "client"     # the link end of whoever drives the colony (a producer, a query client)


_CONFIGURED = object()


def link_model(config: ColonyConfig, device: str, peer: str, gbps: float | None = None,
               peer_gbps=_CONFIGURED) -> LinkModel:
    """The model of the link between ``device`` and ``peer`` (``gbps``, ``peer_gbps``: their
    rates when they differ from the configuration, e.g. after ``set_link``)."""
    rates = [config.devices[device].link_gbps if gbps is None else gbps]
    if peer in config.devices:
        rates.append(config.devices[peer].link_gbps if peer_gbps is _CONFIGURED else peer_gbps)
    rates = [r for r in rates if r]
    if not rates:
        return LinkModel(latency_s=0.0)
    return LinkModel.gbps(min(rates), latency_s=config.runtime.link_latency_s)


class Links:
    """``device``'s links, one per peer, made on first use."""

    def __init__(self, config: ColonyConfig, device: str) -> None:
        self.config, self.device = config, device
        self.gbps = config.devices[device].link_gbps
        self._links: dict[str, Link] = {}
        self._peer_gbps: dict[str, float | None] = {}    # peers' rates changed at run time
        self._lock = threading.Lock()

    def link(self, peer: str) -> Link:
        ln = self._links.get(peer)
        if ln is None:
            with self._lock:
                ln = self._links.get(peer)
                if ln is None:
                    ln = self._links[peer] = Link(peer, self.device, self._model(peer))
        return ln

    def _model(self, peer: str) -> LinkModel:
        return link_model(self.config, self.device, peer, self.gbps, self._peer_gbps.get(peer, _CONFIGURED))

    def gbps_to(self, peer: str) -> float | None:
        """The rate the link to ``peer`` is paced at (None: unpaced), without making the link."""
        return self._model(peer).gbit_per_s

    def into(self, nbytes: int, peer: str = CLIENT, seconds: float | None = None, stream: bool = True) -> float:
        """``nbytes`` arriving from ``peer``: paced and counted; returns the seconds waited.
        ``stream=False``: a message of its own (see :class:`colony.pacing.Link`)."""
        return self.link(peer).transfer(nbytes, peer, self.device, seconds, stream=stream)

    def out(self, nbytes: int, peer: str = CLIENT, seconds: float | None = None, stream: bool = True) -> float:
        """``nbytes`` leaving for ``peer``."""
        return self.link(peer).transfer(nbytes, self.device, peer, seconds, stream=stream)

    def call(self, peer: str, fn, args: tuple, kwargs: dict, to: str | None = None, stream: bool = True):
        """Run a service call from ``peer``: its arguments cross the link in, its result out.
        ``to`` (a relayed call: ``peer`` works for ``to``, the client): the result's large
        parts (from ``RESULT_FLIGHT_BYTES``) leave on the link to ``to`` instead, the way
        they travel (the caller of a relayed call fetches them from here, see runtime.flight).
        ``stream=False`` (a service whose calls are messages, ``Service.calls_stream``): its
        arguments and result never ride on an earlier transfer's stream."""
        self.into(payload_bytes(args) + payload_bytes(kwargs), peer, stream=stream)
        out = fn(*args, **kwargs)
        direct = large_bytes(out) if to is not None and to != peer else 0
        if direct:
            self.out(direct, to, stream=stream)
        self.out(payload_bytes(out) - direct, peer, stream=stream)
        return out

    def set_gbps(self, gbps: float | None) -> None:
        """Change this device's rate from now on (every link to it; counters are kept)."""
        with self._lock:
            self.gbps = gbps or None
            for peer, ln in self._links.items():
                ln.set_model(self._model(peer))

    def set_peer_gbps(self, peer: str, gbps: float | None) -> None:
        """``peer`` changed its rate (its own ``set_gbps``): the link to it follows, so both
        ends of a device-to-device link (a push-back to the host) pace alike."""
        with self._lock:
            self._peer_gbps[peer] = gbps or None
            if peer in self._links:
                self._links[peer].set_model(self._model(peer))

    def stats(self) -> list[dict]:
        return [ln.stats() for ln in list(self._links.values())]
