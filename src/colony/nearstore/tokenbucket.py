"""Link pacing for nearstore: the host link and each device's device-to-device link.

Links are :class:`colony.pacing.TokenBucket` s; rates are in Gbit/s with ``None`` meaning
unpaced (the link then only counts bytes). The burst is 10 ms of traffic but at least
64 KiB (one socket buffer), so tiny control messages are not charged a sleep each.
"""

from __future__ import annotations

from colony.errors import NearStoreError
from colony.pacing import TokenBucket


def link(gbit_per_s: float | None, **kw) -> TokenBucket:
    """A paced link of ``gbit_per_s`` Gbit/s, or an unpaced one for None."""
    if gbit_per_s is None:
        return TokenBucket(None, **kw)
    if not gbit_per_s > 0:
        raise NearStoreError(f"link rate {gbit_per_s} Gbit/s must be positive (None = unpaced)")
    rate = gbit_per_s * 1e9 / 8
    return TokenBucket(rate, kw.pop("burst", max(64 << 10, rate * 0.01)), **kw)
