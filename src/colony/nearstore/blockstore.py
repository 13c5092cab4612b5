"""A device's block store: one file on the device's local disk, fixed-size blocks.

Blocks are allocated as contiguous runs (extents) so an operation streams them with
large sequential preads; freed runs go to a first-fit free list. The file is the
device's "SSD": everything an operation reads or writes goes through it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from colony.errors import BlockRangeError, NearStoreError
from colony.nearstore.address import Extent, decode, encode

DEFAULT_BLOCK_SIZE = 4096


class BlockStore:
    def __init__(self, path: str | os.PathLike, device_id: int,
                 block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        if block_size <= 0 or block_size & (block_size - 1):
            raise NearStoreError(f"block_size={block_size} must be a positive power of two")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.device_id = device_id
        self.block_size = block_size
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self._nblocks = os.fstat(self._fd).st_size // block_size
        self._free: list[tuple[int, int]] = []     # (start block, count)

    # -- allocation ----------------------------------------------------------
    @property
    def nblocks(self) -> int:
        return self._nblocks

    def allocate(self, nbytes: int) -> Extent:
        """Reserve contiguous blocks for ``nbytes`` and return their extent."""
        if nbytes < 0:
            raise NearStoreError(f"cannot allocate {nbytes} bytes")
        need = max(1, -(-nbytes // self.block_size))
        with self._lock:
            for i, (start, count) in enumerate(self._free):
                if count >= need:
                    if count == need:
                        self._free.pop(i)
                    else:
                        self._free[i] = (start + need, count - need)
                    return Extent(encode(self.device_id, start), nbytes)
            start = self._nblocks
            try:    # grow the file first: a size the disk refuses must leave the store as it was
                os.ftruncate(self._fd, (start + need) * self.block_size)
                ext = Extent(encode(self.device_id, start), nbytes)
            except (OSError, OverflowError, ValueError) as e:
                os.ftruncate(self._fd, start * self.block_size)
                raise BlockRangeError(f"cannot allocate {nbytes} bytes on device {self.device_id}: {e}") from None
            self._nblocks += need
        return ext

    def free(self, ext: Extent) -> None:
        self._check(ext, 0, 0)
        start, count = ext.block, ext.nblocks(self.block_size)
        with self._lock:
            if any(start < s + c and s < start + count for s, c in self._free):
                raise BlockRangeError(f"extent {ext} is already (partly) free: a double free")
            self._free.append((start, count))

    # -- I/O -----------------------------------------------------------------
    def _check(self, ext: Extent, offset: int, length: int) -> None:
        dev, block = decode(ext.addr)
        if dev != self.device_id:
            raise BlockRangeError(f"extent {ext} belongs to device {dev}, not to device "
                                  f"{self.device_id}; fetch it through COSTA")
        if offset < 0 or length < 0 or offset + length > ext.nbytes:
            raise BlockRangeError(f"bytes {offset}..{offset + length} fall outside extent {ext}")
        if block + ext.nblocks(self.block_size) > self._nblocks:
            raise BlockRangeError(f"extent {ext} runs past the end of device {self.device_id}'s "
                                  f"store ({self._nblocks} blocks)")

    def read(self, ext: Extent, offset: int = 0, length: int | None = None) -> bytes:
        length = ext.nbytes - offset if length is None else length
        self._check(ext, offset, length)
        pos = ext.block * self.block_size + offset
        out = os.pread(self._fd, length, pos)
        while len(out) < length:        # pread may return short on large reads
            more = os.pread(self._fd, length - len(out), pos + len(out))
            if not more:
                raise BlockRangeError(f"short read at {pos + len(out)} in {self.path}")
            out += more
        return out

    def write(self, ext: Extent, data, offset: int = 0) -> None:
        mv = memoryview(data).cast("B")
        self._check(ext, offset, len(mv))
        pos = ext.block * self.block_size + offset
        while len(mv):
            n = os.pwrite(self._fd, mv, pos)
            mv, pos = mv[n:], pos + n

    def reset(self) -> None:
        """Drop every block (truncate the file)."""
        with self._lock:
            os.ftruncate(self._fd, 0)
            self._nblocks = 0
            self._free.clear()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass
