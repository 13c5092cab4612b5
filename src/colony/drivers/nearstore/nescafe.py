"""NESCAFE-like file layer: files spread over CSDs, computational-storage operations
registered on an open file, and run at I/O time.

    fs = Nescafe(colony, ["csd0", "csd1"], host_gbps=1)
    fs.create("data", records)                 # striped, record-aligned, one part per device
    with fs.open("data") as f:
        f.register("mergesort", mode="d2d")    # the thesis' ioctl
        sorted_bytes = f.read()                # sorts on the devices, returns sorted data

The host side owns the host link: every byte it moves to or from a device is paced by
its host link and counted per phase. Device-to-device bytes are paced and counted by
the devices themselves.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from typing import Any, Callable

from colony.errors import NearStoreError, UnknownOperation
from colony.nearstore.address import Extent, decode
from colony.services.protocol import Colony
from colony.nearstore.ops import DEFAULT_CHUNK
from colony.pacing import Link, LinkModel

# An offload: (fs, file, params) -> (extent holding the result, report)
Offload = Callable[["Nescafe", "NFile", dict], tuple[Extent, dict]]
_OFFLOADS: dict[str, Offload] = {}


def register_offload(name: str, fn: Offload) -> None:
    """Make a computational-storage command available to ``NFile.register``."""
    _OFFLOADS[name] = fn


def offload_names() -> list[str]:
    return sorted(_OFFLOADS)


class Nescafe:
    def __init__(self, client: Colony, devices: list[str], host_gbps: float | None = None,
                 chunk_size: int = DEFAULT_CHUNK, record_size: int = 100, duplex: str = "full",
                 copy: str = "pipelined") -> None:
        if not devices:
            raise NearStoreError("Nescafe needs at least one csd device")
        self.client = client
        self.devices = list(devices)
        self.chunk_size = int(chunk_size)
        self.record_size = int(record_size)
        self.directory: dict[int, str] = {}
        for d in self.devices:
            info = client.call(d, "nearstore", "info")
            if info["device_id"] in self.directory:
                raise NearStoreError(f"devices {self.directory[info['device_id']]!r} and {d!r} share "
                                     f"device id {info['device_id']}; give each a unique device_id")
            self.directory[info["device_id"]] = d
        if duplex not in ("full", "half"):
            raise NearStoreError(f"duplex={duplex!r}: use 'full' (a bucket per direction) or 'half' (one shared)")
        if copy not in ("pipelined", "store-and-forward"):
            raise NearStoreError(f"copy={copy!r}: use 'pipelined' or 'store-and-forward'")
        self.duplex, self.copy = duplex, copy
        self._set_host(host_gbps)
        self.files: dict[str, list[Extent]] = {}
        self._lock = threading.Lock()
        self._host_bytes: dict[str, int] = defaultdict(int)

    # -- links -------------------------------------------------------------------
    def set_links(self, host_gbps: float | None = None, d2d_gbps: float | None = None) -> None:
        """Pace the host link (here) and every device's device-to-device link (None = unpaced)."""
        self._set_host(host_gbps)
        for d in self.devices:
            self.client.call(d, "nearstore", "configure", d2d_gbps=d2d_gbps,
                             chunk_size=self.chunk_size, directory=self.directory)

    def _set_host(self, host_gbps: float | None) -> None:
        # the host's port: device->host (rx) and host->device (tx); full duplex = one bucket each
        if host_gbps is not None and not host_gbps > 0:
            raise NearStoreError(f"link rate {host_gbps} Gbit/s must be positive (None = unpaced)")
        self.host_link = Link("host", "devices", LinkModel.gbps(host_gbps, duplex=self.duplex != "half",
                                                                 burst=64 << 10))
        self.host_gbps = host_gbps

    def reset_counters(self) -> None:
        with self._lock:
            self._host_bytes.clear()
        for d in self.devices:
            self.client.call(d, "nearstore", "reset_stats")

    def counters(self) -> dict:
        """Bytes per phase: over the host link (host side) and device to device (devices)."""
        with self._lock:
            host = dict(self._host_bytes)
        d2d: dict[str, int] = defaultdict(int)
        for d in self.devices:
            for phase, kinds in self.client.call(d, "nearstore", "stats")["bytes"].items():
                d2d[phase] += kinds.get("d2d_out", 0)
        return {"host_link": host, "d2d": dict(d2d)}

    def _device(self, ext: Extent) -> str:
        return self.directory[decode(ext.addr)[0]]

    def host_read(self, ext: Extent, offset: int, length: int, phase: str) -> bytes:
        t0 = time.monotonic()
        data = self.client.call(self._device(ext), "nearstore", "read", ext, offset, length, phase=phase)
        # the call already crossed the runtime's (possibly paced) link to the device: the host
        # port waits only for what that did not take, so the slower link sets the pace, once
        self.host_link.transfer(len(data), "devices", "host", credit_s=time.monotonic() - t0)
        with self._lock:
            self._host_bytes[phase] += len(data)
        return data

    def host_write(self, ext: Extent, data: bytes, offset: int, phase: str) -> None:
        t0 = time.monotonic()
        self.client.call(self._device(ext), "nearstore", "write", ext, data, offset, phase=phase)
        self.host_link.transfer(len(data), "host", "devices", credit_s=time.monotonic() - t0)
        with self._lock:
            self._host_bytes[phase] += len(data)

    def host_copy(self, src: Extent, dst: Extent, phase: str) -> None:
        """device -> host -> device in chunks. ``pipelined`` (default) reads the next chunk
        while the previous one is written, as cp does with page-cache write-back;
        ``store-and-forward`` reads then writes each chunk."""
        offs = [(o, min(self.chunk_size, src.nbytes - o)) for o in range(0, src.nbytes, self.chunk_size)]
        if self.copy == "store-and-forward":
            for off, n in offs:
                self.host_write(dst, self.host_read(src, off, n, phase), off, phase)
            return
        q: queue.Queue = queue.Queue(maxsize=2)
        err: list[BaseException] = []

        def reader() -> None:
            try:
                for off, n in offs:
                    q.put((off, self.host_read(src, off, n, phase)))
            except BaseException as e:  # noqa: BLE001 - handed to the writer
                err.append(e)
            finally:
                q.put(None)
        t = threading.Thread(target=reader, name="nescafe-copy", daemon=True)
        t.start()
        while (item := q.get()) is not None:
            self.host_write(dst, item[1], item[0], phase)
        t.join()
        if err:
            raise err[0]

    def read_extents(self, exts: list[Extent], phase: str) -> bytes:
        out = bytearray()
        for ext in exts:
            off = 0
            while off < ext.nbytes:
                n = min(self.chunk_size, ext.nbytes - off)
                out += self.host_read(ext, off, n, phase)
                off += n
        return bytes(out)

    # -- files ---------------------------------------------------------------------
    def create(self, name: str, data: bytes, devices: list[str] | None = None) -> "NFile":
        """Write ``data`` striped over ``devices``: part i (whole records) on device i."""
        devs = list(devices or self.devices)
        rs = self.record_size
        if len(data) % rs:
            raise NearStoreError(f"file {name!r}: {len(data)} bytes is not a whole number of "
                                 f"{rs}-byte records")
        n = len(data) // rs
        parts = []
        mv = memoryview(data)
        for i, d in enumerate(devs):
            lo, hi = (i * n // len(devs)) * rs, ((i + 1) * n // len(devs)) * rs
            ext = self.client.call(d, "nearstore", "allocate", hi - lo)
            off = 0
            while off < hi - lo:
                k = min(self.chunk_size, hi - lo - off)
                self.host_write(ext, bytes(mv[lo + off:lo + off + k]), off, "load")
                off += k
            parts.append(ext)
        self.files[name] = parts
        return NFile(self, name)

    def open(self, name: str) -> "NFile":
        if name not in self.files:
            raise NearStoreError(f"no file {name!r} on this NESCAFE; files: {sorted(self.files)}")
        return NFile(self, name)

    def unlink(self, name: str) -> None:
        for ext in self.files.pop(name, []):
            self.client.call(self._device(ext), "nearstore", "free", ext)

    def free(self, exts: list[Extent]) -> None:
        for ext in exts:
            self.client.call(self._device(ext), "nearstore", "free", ext)


class NFile:
    """An open NESCAFE file: its block map, an optional registered operation, a position."""

    def __init__(self, fs: Nescafe, name: str) -> None:
        self.fs, self.name = fs, name
        self.op: str | None = None
        self.params: dict = {}
        self.pos = 0
        self.result: Extent | None = None
        self.report: dict | None = None

    @property
    def size(self) -> int:
        return sum(e.nbytes for e in self.fs.files[self.name])

    def fiemap(self) -> list[Extent]:
        """The file's parts as global (device-tagged) extents, in file order."""
        return list(self.fs.files[self.name])

    def register(self, op: str, **params: Any) -> None:
        """Attach a computational-storage command (the thesis' ioctl); it runs on read."""
        if op not in _OFFLOADS:
            raise UnknownOperation(f"no offload {op!r}; registered: {offload_names()}")
        self._drop_result()
        self.op, self.params, self.pos = op, dict(params), 0

    def read(self, size: int = -1) -> bytes:
        """Read from the current position; with an operation registered, the first read
        runs it on the devices and later reads return its result."""
        if self.op is not None and self.result is None:
            t0 = time.time()
            self.result, self.report = _OFFLOADS[self.op](self.fs, self, self.params)
            self.report["offload_s"] = time.time() - t0
        exts = [self.result] if self.op is not None else self.fiemap()
        total = sum(e.nbytes for e in exts)
        end = total if size is None or size < 0 else min(total, self.pos + size)
        out = bytearray()
        base = 0
        t0 = time.time()
        for e in exts:
            lo, hi = max(self.pos, base), min(end, base + e.nbytes)
            off = lo
            while off < hi:
                n = min(self.fs.chunk_size, hi - off)
                out += self.fs.host_read(e, off - base, n, "readback")
                off += n
            base += e.nbytes
        self.pos = end
        if self.report is not None:
            self.report["readback_s"] = self.report.get("readback_s", 0.0) + time.time() - t0
            self.report["link_bytes"] = self.fs.counters()
        return bytes(out)

    def seek(self, pos: int) -> None:
        self.pos = max(0, int(pos))

    def _drop_result(self) -> None:
        if self.result is not None:
            self.fs.free([self.result])
        self.result, self.report = None, None

    def close(self) -> None:
        self._drop_result()

    def __enter__(self) -> "NFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
