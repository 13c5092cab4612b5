"""Per-device object storage and pool routing (pure; no Ray)."""

from colony.store.objects import Entry, ObjectStore, ObjectTooLarge, StoreError, UnknownKey, UnknownPool
from colony.store.routing import POLICIES, RoutingError, key_tag, owner, owner_index, stable_hash

__all__ = ["Entry", "ObjectStore", "ObjectTooLarge", "StoreError", "UnknownKey", "UnknownPool", "POLICIES",
           "RoutingError", "key_tag", "owner", "owner_index", "stable_hash"]
