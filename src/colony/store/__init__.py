"""Per-device object storage and pool routing (pure; no Ray)."""

from colony.store.objects import Entry, ObjectStore
from colony.store.routing import POLICIES, key_tag, owner, owner_index, stable_hash

__all__ = ["Entry", "ObjectStore", "POLICIES", "key_tag", "owner", "owner_index", "stable_hash"]
