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
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

_P, _SZ, _I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int


@dataclass(frozen=True)
class Route:
    """One codec's address-based entry points. ``decompress`` returns the bytes written or
    raises ``ValueError``; ``compress`` returns the compressed length (0 if it did not fit)."""

    codec: str
    library: str
    decompress: Callable[[int, int, int, int], int]
    compress: Callable[[int, int, int, int, int], int] | None
    bound: Callable[[int], int]


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

    def decompress(src, n, dst, cap):
        ctx = getattr(local, "d", None) or _set(local, "d", lib.ZSTD_createDCtx())
        r = dec(ctx, dst, cap, src, n)
        if is_error(r):
            raise ValueError(name(r).decode())
        return r

    def compress(src, n, dst, cap, level):
        ctx = getattr(local, "c", None) or _set(local, "c", lib.ZSTD_createCCtx())
        r = enc(ctx, dst, cap, src, n, level)
        return 0 if is_error(r) else r

    return Route("zstd", path, decompress, compress, lib.ZSTD_compressBound)


def _set(obj, attr, value):
    setattr(obj, attr, value)
    return value


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

    return Route("lz4", path, decompress, compress, lambda n: n + n // 255 + 16)


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

    def decompress(src, n, dst, cap):
        """zlib stream (RFC 1950) or raw DEFLATE (RFC 1951, as hardware engines emit),
        whichever the first two bytes say."""
        ctx = getattr(local, "d", None) or _set(local, "d", lib.libdeflate_alloc_decompressor())
        got = getattr(out, "n", None) or _set(out, "n", ctypes.c_size_t())
        head = ctypes.string_at(src, 2) if n >= 2 else b""
        wrapped = len(head) == 2 and (head[0] & 0x0F) == 8 and ((head[0] << 8) | head[1]) % 31 == 0
        r = (zlib_dec if wrapped else raw_dec)(ctx, src, n, dst, cap, ctypes.byref(got))
        if r:
            raise ValueError(f"DEFLATE stream does not inflate ({_LIBDEFLATE_ERRORS.get(r, r)})")
        return got.value

    return Route("deflate", path, decompress, None, lambda n: n + n // 1000 + 64)


@lru_cache(maxsize=None)
def route(codec: str) -> Route | None:
    """The address-based route for ``codec``, or None when no library provides it here."""
    make = {"zstd": _zstd, "lz4": _lz4, "deflate": _deflate}.get(codec)
    return make() if make else None


def describe() -> dict[str, str]:
    """codec -> the library file each route uses ('python package fallback' if none)."""
    return {c: (r.library if (r := route(c)) else "python package fallback (bytes + copy)")
            for c in ("lz4", "zstd", "deflate")}
