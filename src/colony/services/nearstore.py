"""The computational-storage device (CSD) service: a block store on the device's disk,
block locks, registered operations run chunk by chunk, and the device side of COSTA
that serves a block request locally or fetches it from the owning peer device directly
(``ctx.peers.call``), never through the host.

Placed on devices with role "csd". Options: ``device_id`` (0..511; default: the device's
index among its peers, sorted by name), ``block_size`` (4096), ``chunk_size`` (1 MiB),
``d2d_gbps`` (pacing of this device's device-to-device egress; None = unpaced),
``workdir`` (default: the device's workdir), ``lock_timeout_s``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from typing import Any, Iterator

from colony.errors import AddressError, NearStoreError
from colony.nearstore.address import BLOCK_BITS, MAX_DEVICES, Extent, decode
from colony.nearstore.blockstore import DEFAULT_BLOCK_SIZE, BlockStore
from colony.nearstore.locks import BlockLocks
from colony.nearstore.ops import DEFAULT_CHUNK, chunk_size_for, get_operation
from colony.pacing import Link, LinkModel, gbps_to_Bps
from colony.services.base import DeviceContext, Service, endpoint, service


@service
class NearStore(Service):
    name = "nearstore"

    def __init__(self, ctx: DeviceContext, device_id: int | None = None,
                 block_size: int = DEFAULT_BLOCK_SIZE, chunk_size: int = DEFAULT_CHUNK,
                 d2d_gbps: float | None = None, workdir: str | None = None,
                 lock_timeout_s: float = 300.0, **options: Any) -> None:
        super().__init__(ctx, **options)
        root = workdir or ctx.workdir
        if not root:
            raise NearStoreError(f"device {ctx.name!r} has no workdir for its block store; "
                                 f"set the device's workdir or the nearstore 'workdir' option")
        if device_id is not None and not 0 <= int(device_id) < MAX_DEVICES:
            raise AddressError(f"device_id {device_id} must be in 0..{MAX_DEVICES - 1}")
        self._device_id = None if device_id is None else int(device_id)
        self._root, self._block_size = root, int(block_size)
        self._store: BlockStore | None = None
        self._init_lock = threading.Lock()
        self.chunk_size = int(chunk_size)
        self.locks = BlockLocks(lock_timeout_s)
        self.d2d = _d2d_link(ctx.name, d2d_gbps)
        self.d2d_gbps = d2d_gbps
        self._directory: dict[int, str] = {}
        self._stats_lock = threading.Lock()
        self._bytes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    @property
    def device_id(self) -> int:
        """Explicit, or this device's index among all devices sorted by name (peers are
        only all known once the colony is up, hence lazily)."""
        if self._device_id is None:
            names = sorted(d.name for d in self.ctx.peers.devices()) if self.ctx.peers is not None else [self.ctx.name]
            self._device_id = names.index(self.ctx.name)
        return self._device_id

    @property
    def store(self) -> BlockStore:
        if self._store is None:
            with self._init_lock:
                if self._store is None:
                    self._store = BlockStore(os.path.join(self._root, f"{self.ctx.name}.blocks"),
                                             self.device_id, self._block_size)
        return self._store

    # -- bookkeeping -----------------------------------------------------------
    def _count(self, kind: str, phase: str, n: int) -> None:
        with self._stats_lock:
            self._bytes[phase][kind] += n

    def _blocks(self, ext: Extent, offset: int, length: int) -> tuple[int, int]:
        bs = self.store.block_size
        start = ext.block + offset // bs
        stop = ext.block + max(-(-(offset + length) // bs), offset // bs + 1)
        return start, stop

    def _owner(self, dev: int) -> str:
        name = self._directory.get(dev)
        if name is None:
            for peer in (d.name for d in self.ctx.peers.devices()):
                try:
                    info = self.ctx.peers.call(peer, "nearstore", "info")
                except Exception:
                    continue
                self._directory[info["device_id"]] = peer
            name = self._directory.get(dev)
        if name is None:
            raise NearStoreError(f"no device with id {dev} serves nearstore; known: {self._directory}")
        return name

    # -- endpoints: administration --------------------------------------------
    @endpoint
    def info(self) -> dict:
        return {"device": self.ctx.name, "device_id": self.device_id, "role": self.ctx.role,
                "block_size": self.store.block_size, "nblocks": self.store.nblocks,
                "chunk_size": self.chunk_size, "d2d_gbps": self.d2d_gbps,
                "path": str(self.store.path), "block_bits": BLOCK_BITS, "pid": os.getpid()}

    @endpoint
    def configure(self, d2d_gbps: float | None = None, chunk_size: int | None = None,
                  directory: dict[int, str] | None = None) -> dict:
        """Change the device-to-device link rate (None = unpaced) and/or the chunk size."""
        self.d2d = _d2d_link(self.ctx.name, d2d_gbps)
        self.d2d_gbps = d2d_gbps
        if chunk_size is not None:
            self.chunk_size = int(chunk_size)
        if directory:
            self._directory.update({int(k): v for k, v in directory.items()})
        return self.info()

    @endpoint
    def reset(self) -> None:
        """Empty the block store and forget locks and counters (between benchmark runs)."""
        self.store.reset()
        self.locks = BlockLocks(self.locks.timeout_s)
        self.reset_stats()

    @endpoint
    def stats(self) -> dict:
        with self._stats_lock:
            by_phase = {p: dict(k) for p, k in self._bytes.items()}
        return {"device": self.ctx.name, "bytes": by_phase, "lock_waits": self.locks.waits,
                "lock_waited_s": self.locks.waited_s, "d2d_paced_s": self.d2d.waited_s}

    @endpoint
    def reset_stats(self) -> None:
        with self._stats_lock:
            self._bytes.clear()

    # -- endpoints: blocks ------------------------------------------------------
    @endpoint
    def allocate(self, nbytes: int) -> Extent:
        return self.store.allocate(int(nbytes))

    @endpoint
    def free(self, ext: Extent) -> None:
        self.store.free(ext)

    @endpoint
    def write(self, ext: Extent, data: bytes, offset: int = 0, phase: str = "load",
              requester: str | None = None) -> int:
        """Host -> device write (the host paces its own link)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise NearStoreError(f"write needs bytes, got {type(data).__name__}")
        self.locks.wait(*self._blocks(ext, offset, len(data)), requester)
        self.store.write(ext, data, offset)
        self._count("host_in", phase, len(data))
        return len(data)

    @endpoint
    def read(self, ext: Extent, offset: int = 0, length: int | None = None,
             phase: str = "readback", requester: str | None = None) -> bytes:
        """Device -> host read; waits while another holder has the blocks locked."""
        length = ext.nbytes - offset if length is None else length
        self.locks.wait(*self._blocks(ext, offset, length), requester)
        data = self.store.read(ext, offset, length)
        self._count("host_out", phase, len(data))
        return data

    @endpoint
    def peer_read(self, ext: Extent, offset: int, length: int, phase: str = "merge",
                  requester: str | None = None, peer: str | None = None) -> bytes:
        """Device -> device read, paced by this device's device-to-device egress; the runtime's
        link to ``peer`` (the reading device) charges the same bytes when it has a rate, so
        the egress waits only for what that does not cover: paced once, at the slower rate."""
        self.locks.wait(*self._blocks(ext, offset, length), requester)
        data = self.store.read(ext, offset, length)
        rt = gbps_to_Bps(self.ctx.link_gbps(peer or PEERS))
        self.d2d.transfer(len(data), self.ctx.name, PEERS, credit_s=len(data) / rt if rt else 0.0)
        self._count("d2d_out", phase, len(data))
        return data

    @endpoint
    def lock(self, ext: Extent, holder: str) -> None:
        self.locks.check_holder(holder)
        self.locks.lock(*self._blocks(ext, 0, ext.nbytes), holder)

    @endpoint
    def unlock(self, holder: str, ext: Extent | None = None) -> int:
        if ext is None:
            return self.locks.unlock(holder)
        return self.locks.unlock(holder, *self._blocks(ext, 0, ext.nbytes))

    @endpoint
    def locked(self) -> list[tuple[int, int, str]]:
        return self.locks.held()

    # -- COSTA, device side: fetch a byte range of any global extent --------------
    def fetch(self, ext: Extent, offset: int, length: int, requester: str, phase: str) -> bytes:
        dev = decode(ext.addr)[0]
        if dev == self.device_id:
            self.locks.wait(*self._blocks(ext, offset, length), requester)
            data = self.store.read(ext, offset, length)
            self._count("local_read", phase, len(data))
            return data
        data = self.ctx.peers.call(self._owner(dev), "nearstore", "peer_read", ext, offset,
                                   length, phase=phase, requester=requester, peer=self.ctx.name)
        self._count("d2d_in", phase, len(data))
        return data

    def _chunks(self, ext: Extent, chunk: int, requester: str, phase: str) -> Iterator[bytes]:
        off = 0
        while off < ext.nbytes:
            n = min(chunk, ext.nbytes - off)
            yield self.fetch(ext, off, n, requester, phase)
            off += n

    # -- endpoints: operations ---------------------------------------------------
    @endpoint
    def run(self, op_id: str, op: str, inputs: list[Extent], output: Extent | None = None,
            params: dict | None = None, phase: str = "op",
            directory: dict[int, str] | None = None, unlock_on_complete: bool = False) -> dict:
        """Run a registered operation on global input extents, chunk by chunk; its output goes
        to ``output`` (a local extent; in place for in-place operations, else allocated)."""
        if directory:
            self._directory.update({int(k): v for k, v in directory.items()})
        operation = get_operation(op, **(params or {}))
        if operation.arity is not None and len(inputs) != operation.arity:
            raise NearStoreError(f"operation {op!r} takes {operation.arity} input(s), got {len(inputs)}")
        if operation.in_place:
            if output is not None and output != inputs[0]:
                raise NearStoreError(f"{op!r} runs in place; leave output unset")
            output = inputs[0]
        if output is None:
            output = self.store.allocate(operation.output_size([e.nbytes for e in inputs]))
        if decode(output.addr)[0] != self.device_id:
            raise NearStoreError(f"output {output} is not on device {self.device_id}; "
                                 f"an operation writes only to its own device")
        chunk = chunk_size_for(operation, self.chunk_size)
        t_issued = time.time()
        offset = 0

        def emit(data: bytes) -> None:
            nonlocal offset
            self.locks.wait(*self._blocks(output, offset, len(data)), op_id)
            self.store.write(output, data, offset)
            self._count("local_write", phase, len(data))
            offset += len(data)

        starts: list[float] = []     # when the first chunk arrived (before it: lock waiting)
        streams = [_timed(self._chunks(e, chunk, op_id, phase), lambda: _set_once(starts))
                   for e in inputs]
        ctx = operation.run(streams, emit)
        t_end = time.time()
        if offset != output.nbytes:
            raise NearStoreError(f"{op!r} wrote {offset} bytes into a {output.nbytes}-byte output")
        if unlock_on_complete:
            self.locks.unlock(op_id)
        return {"op_id": op_id, "op": op, "device": self.ctx.name, "output": output,
                "issued": t_issued, "started": starts[0] if starts else t_issued, "ended": t_end,
                "chunks": (ctx or {}).get("chunks") if isinstance(ctx, dict) else None}


def _set_once(starts: list) -> None:
    if not starts:
        starts.append(time.time())


def _timed(it: Iterator[bytes], on_first) -> Iterator[bytes]:
    first = True
    for x in it:
        if first:
            on_first()
            first = False
        yield x


PEERS = "peers"   # the far end of a device's device-to-device link


def _d2d_link(device: str, gbit_per_s: float | None) -> Link:
    """This device's device-to-device egress (None = unpaced, counted only); the burst is
    one socket buffer (64 KiB) so tiny control messages are not charged a sleep each."""
    if gbit_per_s is not None and not gbit_per_s > 0:
        raise NearStoreError(f"link rate {gbit_per_s} Gbit/s must be positive (None = unpaced)")
    return Link(device, PEERS, LinkModel.gbps(gbit_per_s, burst=64 << 10))
