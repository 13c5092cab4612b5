"""Block (de)compressors that read and write caller memory by address, without Python bytes.

The pinned Python packages (zstandard, lz4, isal) return a new ``bytes`` per call, so
decoding through them costs an allocation and a second copy per segment. The same
libraries' C entry points take ``(src, n, dst, capacity)``: called through :mod:`ctypes`
(which releases the GIL for the call) they decode straight into a slice of one
preallocated body. Where each function comes from, first found wins:

* zstd: the ``zstandard`` wheel's own bundled libzstd (its ``_cffi`` module exports the
  C API; zstd 1.5.7, about 10 % faster than Debian's 1.5.4 here), else ``libzstd.so.1``.
* lz4: ``liblz4.so.1`` (Debian's apt itself needs it), else the ``lz4`` wheel's module,
  which exports the LZ4 block API.
* DEFLATE decode: ``libdeflate.so.0`` (``scripts/sysdeps.sh`` installs it). DEFLATE
  encode stays on ISA-L (python-isal), the fastest DEFLATE compressor there is.

:func:`route` returns ``None`` for a codec with no library, and the software engine
then falls back to the Python packages (bytes plus one copy): slower, never wrong.
docs/codec.md has the measured comparison of these routes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

_P, _SZ, _I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int


@dataclass(frozen=True)
class Route:
    """One codec's address-based entry points. ``decompress`` returns the bytes written or
    raises ``ValueError``; ``compress`` returns the compressed length (0 if it did not fit).
    ``c`` carries the raw function addresses for the C batch loops (:class:`BatchLoops`)
    and ``dctx``/``cctx`` give this thread's codec context (0 where none is needed)."""

    codec: str
    library: str
    decompress: Callable[[int, int, int, int], int]
    compress: Callable[[int, int, int, int, int], int] | None
    bound: Callable[[int], int]
    c: dict = field(default_factory=dict)
    dctx: Callable[[], int] = lambda: 0
    cctx: Callable[[], int] = lambda: 0


def _module_file(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec and spec.origin and spec.origin.endswith(".so") else None


def _load(candidates: list[str | None], symbol: str) -> tuple[ctypes.CDLL, str] | None:
    for path in candidates:
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)
            getattr(lib, symbol)
        except (OSError, AttributeError):
            continue
        return lib, path
    return None


def _addr(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


def _zstd() -> Route | None:
    found = _load([_module_file("zstandard._cffi"), "libzstd.so.1", ctypes.util.find_library("zstd")],
                  "ZSTD_decompressDCtx")
    if found is None:
        return None
    lib, path = found
    lib.ZSTD_createDCtx.restype = _P
    lib.ZSTD_createCCtx.restype = _P
    lib.ZSTD_isError.argtypes, lib.ZSTD_isError.restype = [_SZ], ctypes.c_uint
    lib.ZSTD_getErrorName.argtypes, lib.ZSTD_getErrorName.restype = [_SZ], ctypes.c_char_p
    lib.ZSTD_compressBound.argtypes, lib.ZSTD_compressBound.restype = [_SZ], _SZ
    dec = lib.ZSTD_decompressDCtx
    dec.argtypes, dec.restype = [_P, _P, _SZ, _P, _SZ], _SZ
    enc = lib.ZSTD_compressCCtx
    enc.argtypes, enc.restype = [_P, _P, _SZ, _P, _SZ, _I], _SZ
    local = threading.local()     # contexts are not thread-safe: one per thread, kept for reuse
    is_error, name = lib.ZSTD_isError, lib.ZSTD_getErrorName

    lib.ZSTD_freeDCtx.argtypes = lib.ZSTD_freeCCtx.argtypes = [_P]

    def dctx():
        return _per_thread(local, "d", lib.ZSTD_createDCtx, lib.ZSTD_freeDCtx)

    def cctx():
        return _per_thread(local, "c", lib.ZSTD_createCCtx, lib.ZSTD_freeCCtx)

    def decompress(src, n, dst, cap):
        r = dec(dctx(), dst, cap, src, n)
        if is_error(r):
            raise ValueError(name(r).decode())
        return r

    def compress(src, n, dst, cap, level):
        r = enc(cctx(), dst, cap, src, n, level)
        return 0 if is_error(r) else r

    return Route("zstd", path, decompress, compress, lib.ZSTD_compressBound,
                 {"kind": 2, "decode": _addr(dec), "encode": _addr(enc), "is_error": _addr(is_error)}, dctx, cctx)


class _Owned:
    """A C context owned by one thread: freed when the thread's locals go (no leak per thread)."""

    def __init__(self, ptr: int, free) -> None:
        self.ptr, self._free = ptr, free

    def __del__(self) -> None:
        if self.ptr:
            self._free(self.ptr)


def _per_thread(local: threading.local, attr: str, make, free) -> int:
    owned = getattr(local, attr, None)
    if owned is None:
        owned = _Owned(make(), free)
        setattr(local, attr, owned)
    return owned.ptr


def _lz4() -> Route | None:
    found = _load(["liblz4.so.1", ctypes.util.find_library("lz4"), _module_file("lz4.block._block")],
                  "LZ4_decompress_safe")
    if found is None:
        return None
    lib, path = found
    dec = lib.LZ4_decompress_safe
    dec.argtypes, dec.restype = [_P, _P, _I, _I], _I
    enc = lib.LZ4_compress_fast
    enc.argtypes, enc.restype = [_P, _P, _I, _I, _I], _I

    def decompress(src, n, dst, cap):
        r = dec(src, dst, n, cap)
        if r < 0:
            raise ValueError(f"LZ4 block is malformed (error at input byte {-r - 1})")
        return r

    def compress(src, n, dst, cap, level):
        return enc(src, dst, n, cap, max(1, level))

    return Route("lz4", path, decompress, compress, lambda n: n + n // 255 + 16,
                 {"kind": 1, "decode": _addr(dec), "encode": _addr(enc)})


_LIBDEFLATE_ERRORS = {1: "bad data", 2: "short output", 3: "insufficient space"}


def _deflate() -> Route | None:
    found = _load(["libdeflate.so.0", ctypes.util.find_library("deflate")], "libdeflate_zlib_decompress")
    if found is None:
        return None
    lib, path = found
    lib.libdeflate_alloc_decompressor.restype = _P
    zlib_dec, raw_dec = lib.libdeflate_zlib_decompress, lib.libdeflate_deflate_decompress
    for f in (zlib_dec, raw_dec):
        f.argtypes, f.restype = [_P, _P, _SZ, _P, _SZ, _P], _I
    local = threading.local()
    out = threading.local()

    lib.libdeflate_free_decompressor.argtypes = [_P]

    def dctx():
        return _per_thread(local, "d", lib.libdeflate_alloc_decompressor, lib.libdeflate_free_decompressor)

    def decompress(src, n, dst, cap):
        """zlib stream (RFC 1950) or raw DEFLATE (RFC 1951, as hardware engines emit),
        whichever the first two bytes say."""
        ctx = dctx()
        got = getattr(out, "n", None)
        if got is None:
            got = out.n = ctypes.c_size_t()
        head = ctypes.string_at(src, 2) if n >= 2 else b""
        wrapped = len(head) == 2 and (head[0] & 0x0F) == 8 and ((head[0] << 8) | head[1]) % 31 == 0
        r = (zlib_dec if wrapped else raw_dec)(ctx, src, n, dst, cap, ctypes.byref(got))
        if r:
            raise ValueError(f"DEFLATE stream does not inflate ({_LIBDEFLATE_ERRORS.get(r, r)})")
        return got.value

    return Route("deflate", path, decompress, None, lambda n: n + n // 1000 + 64,
                 {"kind": 3, "decode": _addr(zlib_dec), "decode_raw": _addr(raw_dec)}, dctx)


@lru_cache(maxsize=None)
def route(codec: str) -> Route | None:
    """The address-based route for ``codec``, or None when no library provides it here."""
    make = {"zstd": _zstd, "lz4": _lz4, "deflate": _deflate}.get(codec)
    return make() if make else None


def describe() -> dict[str, str]:
    """codec -> the library file each route uses ('python package fallback' if none), and
    whether whole batches run in the C loops."""
    out = {c: (r.library if (r := route(c)) else "python package fallback (bytes + copy)")
           for c in ("lz4", "zstd", "deflate")}
    out["batch loops"] = "C (_batch.c), GIL released per batch" if batch_loops() else \
        "Python, per segment (no compiled _batch module)"
    return out


class _CRoute(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("decode", _P), ("decode_raw", _P), ("encode", _P),
                ("is_error", _P), ("crc", _P)]


FAIL_CRC, FAIL_CODEC, FAIL_SPACE = 1, 2, 3


def _crc_address() -> int | None:
    """python-crc32c's hardware CRC32C routine, used only if it agrees with crc32c.crc32c."""
    import crc32c
    path = _module_file("crc32c._crc32c")
    found = _load([path], "_crc32c_hw_adler") if crc32c.hardware_based else None
    if found is None:
        return None
    fn = found[0]._crc32c_hw_adler
    fn.argtypes, fn.restype = [ctypes.c_uint32, ctypes.c_char_p, _SZ], ctypes.c_uint32
    probe = bytes(range(256)) * 67 + b"colony"
    ok = all((fn(0xFFFFFFFF, probe[:n], n) ^ 0xFFFFFFFF) == crc32c.crc32c(probe[:n]) for n in (0, 1, 7, 4096, len(probe)))
    return _addr(fn) if ok else None


class BatchLoops:
    """The C loops of ``_batch.c``: a whole batch per call, GIL released once (ctypes)."""

    def __init__(self, lib: ctypes.CDLL, crc: int | None):
        self.lib, self.crc = lib, crc
        dec = lib.colony_decode_batch
        dec.argtypes = [_P, _P, ctypes.c_long] + [_P] * 8
        dec.restype = ctypes.c_long
        enc = lib.colony_encode_batch
        enc.argtypes = [_P, _P, _I, ctypes.c_long] + [_P] * 8
        enc.restype = ctypes.c_long
        self._dec, self._enc = dec, enc
        self._routes: dict[str, _CRoute] = {}

    def _route(self, r: Route) -> _CRoute:
        if r.codec not in self._routes:
            self._routes[r.codec] = _CRoute(r.c["kind"], r.c.get("decode"), r.c.get("decode_raw"),
                                            r.c.get("encode"), r.c.get("is_error"), self.crc)
        return self._routes[r.codec]

    def decode(self, r: Route, src, slen, dst, cap, crc=None) -> tuple[list[int], int, int, int]:
        """-> (bytes written per segment, failing index or -1, why, library detail)."""
        n = len(src)
        a = np.array((src, slen, dst, cap), dtype=np.uint64)
        c = np.asarray(crc, dtype=np.uint32) if crc is not None else None
        out = np.zeros(n, dtype=np.int64)
        why, detail = ctypes.c_int(0), ctypes.c_int64(0)
        k = self._dec(ctypes.byref(self._route(r)), r.dctx(), n, a[0].ctypes.data, a[1].ctypes.data,
                      a[2].ctypes.data, a[3].ctypes.data, None if c is None else c.ctypes.data, out.ctypes.data,
                      ctypes.byref(why), ctypes.byref(detail))
        return out.tolist(), k, why.value, detail.value

    def encode(self, r: Route, src, slen, dst, cap, level) -> tuple[list[int], list[int], int, int, int]:
        """-> (compressed lengths, their CRC32Cs, failing index or -1, why, library detail)."""
        n = len(src)
        a = np.array((src, slen, dst, cap), dtype=np.uint64)
        out = np.zeros(n, dtype=np.int64)
        crcs = np.zeros(n, dtype=np.uint32)
        why, detail = ctypes.c_int(0), ctypes.c_int64(0)
        k = self._enc(ctypes.byref(self._route(r)), r.cctx(), level, n, a[0].ctypes.data, a[1].ctypes.data,
                      a[2].ctypes.data, a[3].ctypes.data, out.ctypes.data, crcs.ctypes.data,
                      ctypes.byref(why), ctypes.byref(detail))
        return out.tolist(), crcs.tolist(), k, why.value, detail.value


@lru_cache(maxsize=None)
def batch_loops() -> BatchLoops | None:
    """The compiled batch loops, or None (no compiler at install time, or no CRC32C routine
    to verify with: then the engine loops per segment in Python)."""
    path = _module_file("colony.codec._batch")
    found = _load([path], "colony_decode_batch") if path else None
    crc = _crc_address()
    return BatchLoops(found[0], crc) if found and crc else None
