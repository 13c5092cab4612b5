"""The key/object service every device runs: put / get / list / drop / info on its store.

The runtime places it on every device, so clients and peers (device to device) reach a
device's pools the same way they reach any other service.
"""

from __future__ import annotations

import pyarrow as pa

from colony.services.base import Service, endpoint, service


@service
class Objects(Service):
    name = "objects"

    @endpoint
    def put(self, pool: str, key: str, obj, codec: str = "none"):
        return self.ctx.store.put(pool, key, obj, codec)

    @endpoint
    def get(self, pool: str, key: str):
        return self.ctx.store.get(pool, key)

    @endpoint
    def list(self, pool: str, prefix: str = "") -> list[str]:
        return self.ctx.store.list(pool, prefix)

    @endpoint
    def entries(self, pool: str, prefix: str = ""):
        return self.ctx.store.entries(pool, prefix)

    @endpoint
    def lost(self, pool: str, prefix: str = "") -> list[str]:
        """Keys reported lost here (a get raises ObjectLost; drop forgets them)."""
        return self.ctx.store.lost_keys(pool, prefix)

    @endpoint
    def drop(self, pool: str, key: str) -> None:
        self.ctx.store.drop(pool, key)

    @endpoint
    def info(self) -> dict:
        return self.ctx.store.info()

    @endpoint
    def pools(self) -> list[str]:
        return self.ctx.store.pools()

    @endpoint
    def fetch(self, device: str, pool: str, key: str):
        """An object from a peer device, fetched device to device (not through a client)."""
        return self.ctx.peers.call(device, "objects", "get", pool, key)

    @endpoint
    def copy_from(self, device: str, pool: str, key: str, dest_pool: str | None = None):
        """Copy a peer's object into this device's store, device to device."""
        buf = self.ctx.peers.call(device, "objects", "get", pool, key)
        # own the bytes: a runtime may hand a view of shared transfer memory
        return self.ctx.store.put(dest_pool or pool, key, pa.py_buffer(memoryview(buf).tobytes()))
