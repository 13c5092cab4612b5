"""Compression engines for outer (whole-buffer, segmented) compression, shaped like hardware.

A hardware engine (BlueField's DEFLATE engine through DOCA, a GPU through nvCOMP) takes a
batch of descriptors - input address and length, preallocated output address and
capacity - and signals completion later; a few batches in flight keep its queues full,
and past a couple of submitting threads it stops scaling (Bitar). Every engine here has
that shape: :meth:`Engine.submit` takes a :class:`Batch` and returns a :class:`Completion`;
:func:`run_batches` keeps at most :meth:`Engine.in_flight` batches outstanding and never
uses more submitting threads than ``max_useful_threads``.

The ``software`` engine is the default and the reference: zstd, lz4 (raw LZ4 block) and
DEFLATE as a standard zlib stream, decoded straight into the caller's output through
:mod:`colony.codec.native`. Accelerator engines are detected at run time by
:mod:`colony.codec.registry`. Engines that emit standard streams
are interchangeable; a format only its producer decodes (nvCOMP's GDeflate) is recorded
in the object header and refused by other engines with :class:`EngineMismatch`.
"""

from __future__ import annotations

import ctypes
import threading
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import crc32c as _crc
import lz4.block
import numpy as np
import zstandard
from isal import isal_zlib

from colony.codec import native
from colony.errors import ChecksumMismatch, CodecError, CorruptObject, EngineMismatch

OUTER_CODECS = ("lz4", "zstd", "deflate")
DEFAULT_LEVEL = {"lz4": 0, "zstd": 1, "deflate": 1, "gdeflate": 1}
#: engine ids recorded in the object header (flags, low byte) as the segments' producer
PRODUCER_IDS = {"software": 0, "nvcomp": 1, "doca": 2}
PRODUCER_NAMES = {v: k for k, v in PRODUCER_IDS.items()}
DEFAULT_BATCH = 64          # segments per submission (4 MiB of 64 KiB segments)


@dataclass
class Batch:
    """One submission: segment k is read from ``src[k]`` (``src_len[k]`` bytes) and written
    to ``dst[k]`` (at most ``dst_cap[k]`` bytes). Addresses, like a hardware descriptor
    ring; ``keep`` holds the buffers they point into until the batch completes."""

    op: str                                   # "compress" or "decompress"
    codec: str
    src: list[int]
    src_len: list[int]
    dst: list[int]
    dst_cap: list[int]
    level: int = 0
    crc: list[int] | None = None              # decompress: expected CRC32C of each input, checked first
    first: int = 0                            # object index of segment 0, for error messages
    keep: tuple = ()
    out_len: list[int] = field(default_factory=list)   # filled: bytes written per segment
    out_crc: list[int] = field(default_factory=list)   # compress: CRC32C of each output

    def __len__(self) -> int:
        return len(self.src)


class Completion:
    """Handle on a submitted batch; :meth:`wait` returns it filled or raises its error."""

    def __init__(self, batch: Batch, future: Future | None = None, error: BaseException | None = None):
        self.batch, self._future, self._error = batch, future, error

    @classmethod
    def run_now(cls, work: Callable[[Batch], None], batch: Batch) -> "Completion":
        try:
            work(batch)
        except Exception as e:   # reported at wait(), as an asynchronous engine would
            return cls(batch, error=e)
        return cls(batch)

    def done(self) -> bool:
        return self._future is None or self._future.done()

    def wait(self, timeout: float | None = None) -> Batch:
        if self._future is not None:
            self._future.result(timeout)
        elif self._error is not None:
            raise self._error
        return self.batch


@lru_cache(maxsize=8)
def pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="colony-codec")


_from_memory = ctypes.pythonapi.PyMemoryView_FromMemory
_from_memory.argtypes, _from_memory.restype = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int], ctypes.py_object
_PYBUF_READ = 0x100


def view_at(addr: int, n: int) -> memoryview:
    """A read-only byte view of memory the caller keeps alive (no ctypes type per length)."""
    return _from_memory(addr, n, _PYBUF_READ)


def span(addrs: list[int], lens: list[int]) -> tuple[int, memoryview]:
    """One byte view covering every (address, length) pair, for checksums and the Python
    fallback: slicing it costs no copy."""
    if not addrs:
        return 0, memoryview(b"")
    lo = min(addrs)
    return lo, view_at(lo, max(a + n for a, n in zip(addrs, lens)) - lo)


def check_crc(b: Batch, base: int, view: memoryview, k: int) -> None:
    off = b.src[k] - base
    if _crc.crc32c(view[off:off + b.src_len[k]]) != b.crc[k]:
        raise ChecksumMismatch(f"segment {b.first + k} checksum mismatch: the object body is corrupt "
                               "(re-fetch or re-create the object)")


class Engine:
    """Compresses and decompresses batches of independent segments."""

    name: str = "?"
    #: submitting threads beyond which the engine stops scaling (hardware queues saturate early)
    max_useful_threads: int | None = None
    #: batches outstanding per submitting thread
    batches_per_thread: int = 2
    codecs: tuple[str, ...] = OUTER_CODECS

    def workers(self, threads: int) -> int:
        return max(1, min(threads, self.max_useful_threads or threads))

    def in_flight(self, threads: int) -> int:
        return self.batches_per_thread * self.workers(threads)

    def submit(self, batch: Batch, threads: int = 1) -> Completion:
        raise NotImplementedError

    def bound(self, codec: str, n: int) -> int:
        """Output capacity that always holds ``n`` bytes compressed."""
        return n + n // 64 + 1024

    def check_decodable(self, codec: str, producer: str) -> None:
        """Refuse, before any work, segments this engine cannot decode."""
        if codec not in self.codecs:
            raise EngineMismatch(f"outer codec {codec!r} (produced by engine {producer!r}) cannot be decoded "
                                 f"by engine {self.name!r}; unpack with engine={producer!r} on a machine "
                                 "that has it")

    # one-segment conveniences over the batched API
    def compress(self, codec: str, data, level: int) -> bytes:
        src = np.frombuffer(data, dtype=np.uint8)
        out = np.empty(self.bound(codec, src.size), dtype=np.uint8)
        b = Batch("compress", codec, [src.ctypes.data], [src.size], [out.ctypes.data], [out.size],
                  level=level, keep=(src, out))
        self.submit(b).wait()
        return out[:b.out_len[0]].tobytes()

    def decompress(self, codec: str, data, raw_len: int) -> bytes:
        src = np.frombuffer(data, dtype=np.uint8)
        out = np.empty(raw_len, dtype=np.uint8)
        b = Batch("decompress", codec, [src.ctypes.data], [src.size], [out.ctypes.data], [raw_len], keep=(src, out))
        self.submit(b).wait()
        return out[:b.out_len[0]].tobytes()


def run_batches(engine: Engine, batches, threads: int) -> None:
    """Submit every batch, at most ``engine.in_flight(threads)`` outstanding; return when all
    are done (even after an error, so no engine still writes into the caller's buffers)."""
    pending: deque[Completion] = deque()
    error: BaseException | None = None
    limit = engine.in_flight(threads)

    def settle(c: Completion) -> BaseException | None:
        try:
            c.wait()
        except BaseException as e:  # noqa: BLE001 - re-raised below once every batch is settled
            return e
        return None

    for b in batches:
        if len(pending) >= limit:
            error = error or settle(pending.popleft())
            if error:
                break
        pending.append(engine.submit(b, threads))
    for c in pending:
        e = settle(c)
        error = error or e
    if error:
        raise error


def inflate_any(data) -> bytes:
    """Inflate a zlib (RFC 1950) stream, or a raw DEFLATE (RFC 1951) stream as hardware
    engines often emit; whichever the first bytes say it is."""
    b = bytes(data[:2])
    wrapped = len(b) == 2 and (b[0] & 0x0F) == 8 and ((b[0] << 8) | b[1]) % 31 == 0
    return isal_zlib.decompress(data, wbits=15 if wrapped else -15)


_DECODE_ERRORS = (ValueError, zstandard.ZstdError, lz4.block.LZ4BlockError, zlib.error, isal_zlib.error)


class SoftwareEngine(Engine):
    """The CPU reference engine: a thread pool working through batches, each segment
    decoded in place through :mod:`colony.codec.native` (``native=False``: the Python
    packages' bytes API plus one copy, the route Colony used before)."""

    name = "software"

    def __init__(self, native_routes: bool = True) -> None:
        self.native = native_routes
        self._local = threading.local()  # zstd contexts are costly and not thread-safe

    def submit(self, batch: Batch, threads: int = 1) -> Completion:
        n = self.workers(threads)
        if n <= 1:
            return Completion.run_now(self._work, batch)
        return Completion(batch, pool(n).submit(self._work, batch))

    def _work(self, b: Batch) -> None:
        if b.codec not in OUTER_CODECS:
            raise CodecError(f"engine 'software' has no codec {b.codec!r}; choose one of {OUTER_CODECS}")
        route = native.route(b.codec) if self.native else None
        (self._decompress if b.op == "decompress" else self._compress)(b, route)

    def _decompress(self, b: Batch, route) -> None:
        loops = native.batch_loops() if route is not None else None
        if loops is not None:                       # the whole batch in C, GIL released once
            b.out_len, k, why, detail = loops.decode(route, b.src, b.src_len, b.dst, b.dst_cap, b.crc)
            if k >= 0:
                if why == native.FAIL_CRC:
                    raise ChecksumMismatch(f"segment {b.first + k} checksum mismatch: the object body is corrupt "
                                           "(re-fetch or re-create the object)")
                raise CorruptObject(f"segment {b.first + k}: {b.codec} segment does not decompress "
                                    f"({route.library} error {detail})")
            return
        base, view = span(b.src, b.src_len) if (b.crc is not None or route is None) else (0, None)
        out = b.out_len = [0] * len(b)
        for k in range(len(b)):
            if b.crc is not None:
                check_crc(b, base, view, k)
            s, n, d, cap = b.src[k], b.src_len[k], b.dst[k], b.dst_cap[k]
            try:
                if route is not None:
                    out[k] = route.decompress(s, n, d, cap)
                else:
                    data = self._py_decompress(b.codec, view[s - base:s - base + n], cap)
                    if len(data) > cap:
                        raise ValueError(f"inflates past its {cap}-byte output")
                    ctypes.memmove(d, data, len(data))
                    out[k] = len(data)
            except _DECODE_ERRORS as e:
                raise CorruptObject(f"segment {b.first + k}: {b.codec} segment does not decompress: {e}") from e

    def _compress(self, b: Batch, route) -> None:
        loops = native.batch_loops() if route is not None and route.compress is not None else None
        if loops is not None:
            b.out_len, b.out_crc, k, why, detail = loops.encode(route, b.src, b.src_len, b.dst, b.dst_cap, b.level)
            if k >= 0:
                raise CodecError(f"segment {b.first + k} did not compress into its {b.dst_cap[k]}-byte output "
                                 f"({route.library} error {detail}); this is a bug in the engine's bound()")
            return
        base, view = span(b.src, b.src_len)
        out = b.out_len = [0] * len(b)
        crcs = b.out_crc = [0] * len(b)
        for k in range(len(b)):
            s, n, d, cap = b.src[k], b.src_len[k], b.dst[k], b.dst_cap[k]
            if route is not None and route.compress is not None:
                m = route.compress(s, n, d, cap, b.level)
            else:
                data = self._py_compress(b.codec, view[s - base:s - base + n], b.level)
                m = len(data) if len(data) <= cap else 0
                if m:
                    ctypes.memmove(d, data, m)
            if not m:
                raise CodecError(f"segment {b.first + k} did not fit its {cap}-byte output; "
                                 "this is a bug in the engine's bound()")
            out[k] = m
            crcs[k] = _crc.crc32c(view_at(d, m))

    def bound(self, codec: str, n: int) -> int:
        route = native.route(codec) if self.native else None
        return route.bound(n) if route is not None else super().bound(codec, n)

    def _zstd_c(self, level: int) -> zstandard.ZstdCompressor:
        cache = self._local.__dict__.setdefault("c", {})
        if level not in cache:
            cache[level] = zstandard.ZstdCompressor(level=level)
        return cache[level]

    def _py_compress(self, codec: str, data, level: int) -> bytes:
        if codec == "zstd":
            return self._zstd_c(level).compress(data)
        if codec == "lz4":
            return lz4.block.compress(data, store_size=False, mode="fast", acceleration=max(1, level))
        return isal_zlib.compress(data, level)     # deflate: ISA-L, the fastest DEFLATE encoder

    def _py_decompress(self, codec: str, data, raw_len: int) -> bytes:
        if codec == "zstd":
            d = getattr(self._local, "d", None) or _setattr(self._local, "d", zstandard.ZstdDecompressor())
            return d.decompress(data, max_output_size=raw_len)
        if codec == "lz4":
            return lz4.block.decompress(data, uncompressed_size=raw_len)
        return inflate_any(data)


def _setattr(obj, name, value):
    setattr(obj, name, value)
    return value
