"""Which member of a pool owns a key: tag-folding (TFT) or hashing (DHT).

TFT takes the integer tag at the end of the key modulo the pool size, so a producer
that numbers its keys spreads them evenly by construction. A hash spreads random keys
evenly but skews on small sets of similar keys (the seeds' observation for sifting keys).
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

from colony.errors import RoutingError

POLICIES = ("tft", "hash")
_TAG = re.compile(r"(\d+)$")


def key_tag(key: str) -> int:
    """The integer at the end of ``key`` (TFT tag)."""
    m = _TAG.search(key)
    if not m:
        raise RoutingError(f"key {key!r} has no integer tag at its end; TFT pools need keys like 'name/17'")
    return int(m.group(1))


def stable_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


def owner_index(key: str, pool_size: int, policy: str = "tft") -> int:
    if pool_size < 1:
        raise RoutingError("a pool needs at least one member")
    if policy == "tft":
        return key_tag(key) % pool_size
    if policy == "hash":
        return stable_hash(key) % pool_size
    raise RoutingError(f"unknown pool policy {policy!r}; choose one of {POLICIES}")


def owner(key: str, members: Sequence[str], policy: str = "tft") -> str:
    """The member device that owns ``key``."""
    return members[owner_index(key, len(members), policy)]
