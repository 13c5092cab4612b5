"""Pick the codec, and the compression engine, that move data fastest over a given link.

:func:`advise` ranks (codec, engine) pairs by serialize + transfer + deserialize time per
raw byte, from a device's measured profiles (:mod:`colony.codec.profile`). Nothing here is
assumed: a device with a slow CPU and a fast link will be told to send uncompressed data,
and an engine is chosen by measurement, never by a flag the user must know.
"""

from __future__ import annotations

from dataclasses import dataclass

from colony.codec.profile import CodecProfile
from colony.pacing import gbps_to_Bps
from colony.errors import ColonyError


@dataclass(frozen=True)
class Advice:
    codec: str
    seconds: float            # for ``nbytes`` raw bytes
    serialize_s: float
    transfer_s: float
    deserialize_s: float
    engine: str = "software"


def advise(link_gbps: float, profiles: list[CodecProfile], nbytes: int = 1 << 30) -> list[Advice]:
    """(codec, engine) pairs ranked by total time to move ``nbytes`` raw bytes over a ``link_gbps`` link."""
    if not link_gbps > 0:
        raise ColonyError(f"link rate must be > 0 Gbit/s, got {link_gbps}")
    link_bps = gbps_to_Bps(link_gbps)
    ranked = []
    for p in profiles:
        s = nbytes / (p.serialize_mbps * 1e6)
        t = nbytes * p.ratio / link_bps
        d = nbytes / (p.deserialize_mbps * 1e6)
        ranked.append(Advice(p.codec, s + t + d, s, t, d, p.engine))
    return sorted(ranked, key=lambda a: a.seconds)
