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

CLIENT = "client"     # the link end of whoever drives the colony (a producer, a query client)


def link_model(config: ColonyConfig, device: str, peer: str, gbps: float | None = None) -> LinkModel:
    """The model of the link between ``device`` and ``peer`` (``gbps``: ``device``'s rate
    when it differs from the configuration, e.g. after ``set_link``)."""
    rates = [config.devices[device].link_gbps if gbps is None else gbps]
    if peer in config.devices:
        rates.append(config.devices[peer].link_gbps)
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
        self._lock = threading.Lock()

    def link(self, peer: str) -> Link:
        ln = self._links.get(peer)
        if ln is None:
            with self._lock:
                ln = self._links.get(peer)
                if ln is None:
                    ln = self._links[peer] = Link(peer, self.device,
                                                  link_model(self.config, self.device, peer, self.gbps))
        return ln

    def gbps_to(self, peer: str) -> float | None:
        """The rate the link to ``peer`` is paced at (None: unpaced), without making the link."""
        return link_model(self.config, self.device, peer, self.gbps).gbit_per_s

    def into(self, nbytes: int, peer: str = CLIENT, seconds: float | None = None) -> float:
        """``nbytes`` arriving from ``peer``: paced and counted; returns the seconds waited."""
        return self.link(peer).transfer(nbytes, peer, self.device, seconds)

    def out(self, nbytes: int, peer: str = CLIENT, seconds: float | None = None) -> float:
        """``nbytes`` leaving for ``peer``."""
        return self.link(peer).transfer(nbytes, self.device, peer, seconds)

    def call(self, peer: str, fn, args: tuple, kwargs: dict):
        """Run a service call from ``peer``: its arguments cross the link in, its result out."""
        self.into(payload_bytes(args) + payload_bytes(kwargs), peer)
        out = fn(*args, **kwargs)
        self.out(payload_bytes(out), peer)
        return out

    def set_gbps(self, gbps: float | None) -> None:
        """Change this device's rate from now on (every link to it; counters are kept)."""
        with self._lock:
            self.gbps = gbps or None
            for peer, ln in self._links.items():
                ln.set_model(link_model(self.config, self.device, peer, self.gbps))

    def stats(self) -> list[dict]:
        return [ln.stats() for ln in list(self._links.values())]
