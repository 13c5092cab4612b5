"""Compression engines for outer (whole-buffer, segmented) compression.

The ``software`` engine is the default and the reference: zstd (zstandard), lz4
(raw LZ4 block) and DEFLATE as a standard zlib stream (ISA-L, byte-compatible with
zlib). Accelerator engines (BlueField DOCA/DPDK compress, NVIDIA nvCOMP) are detected
at run time; asking for one this machine lacks raises :class:`EngineUnavailable`.
Every engine must produce output the software engine decodes, and decode what the
software engine produced: that is what makes hardware and software interchangeable.
"""

from __future__ import annotations

import ctypes.util
import importlib.util
import os
import threading
import zlib
from dataclasses import dataclass
from typing import Callable

import lz4.block
import zstandard
from isal import isal_zlib

from colony.errors import CorruptObject, EngineUnavailable

OUTER_CODECS = ("lz4", "zstd", "deflate")
DEFAULT_LEVEL = {"lz4": 0, "zstd": 1, "deflate": 1}


class Engine:
    """Compresses and decompresses independent segments; must release the GIL in native code."""

    name: str = "?"
    #: submitting threads beyond which the engine stops scaling (hardware queues saturate early)
    max_useful_threads: int | None = None

    def compress(self, codec: str, data: memoryview, level: int) -> bytes:
        raise NotImplementedError

    def decompress(self, codec: str, data: memoryview, raw_len: int) -> bytes:
        raise NotImplementedError


def inflate_any(data: memoryview | bytes) -> bytes:
    """Inflate a zlib (RFC 1950) stream, or a raw DEFLATE (RFC 1951) stream as hardware
    engines often emit; whichever the first bytes say it is."""
    b = bytes(data[:2])
    wrapped = len(b) == 2 and (b[0] & 0x0F) == 8 and ((b[0] << 8) | b[1]) % 31 == 0
    return isal_zlib.decompress(data, wbits=15 if wrapped else -15)


class SoftwareEngine(Engine):
    name = "software"

    def __init__(self) -> None:
        # zstd contexts are costly to create and not thread-safe: one per thread and level
        self._local = threading.local()

    def _zstd_c(self, level: int) -> zstandard.ZstdCompressor:
        cache = self._local.__dict__.setdefault("c", {})
        if level not in cache:
            cache[level] = zstandard.ZstdCompressor(level=level)
        return cache[level]

    def _zstd_d(self) -> zstandard.ZstdDecompressor:
        d = getattr(self._local, "d", None)
        if d is None:
            d = self._local.d = zstandard.ZstdDecompressor()
        return d

    def compress(self, codec: str, data: memoryview, level: int) -> bytes:
        if codec == "zstd":
            return self._zstd_c(level).compress(data)
        if codec == "lz4":
            return lz4.block.compress(data, store_size=False, mode="fast", acceleration=max(1, level))
        if codec == "deflate":
            return isal_zlib.compress(data, level)
        raise ValueError(f"unknown outer codec {codec!r}")

    def decompress(self, codec: str, data: memoryview, raw_len: int) -> bytes:
        try:
            if codec == "zstd":
                return self._zstd_d().decompress(data, max_output_size=raw_len)
            if codec == "lz4":
                return lz4.block.decompress(data, uncompressed_size=raw_len)
            if codec == "deflate":
                return inflate_any(data)
        except (zstandard.ZstdError, lz4.block.LZ4BlockError, zlib.error, isal_zlib.error) as e:
            raise CorruptObject(f"{codec} segment does not decompress: {e}") from e
        raise CorruptObject(f"unknown outer codec {codec!r} in object header")


@dataclass(frozen=True)
class _Probe:
    name: str
    detect: Callable[[], str | None]   # returns None when present, else why it is absent
    hint: str


def _doca_absent() -> str | None:
    if ctypes.util.find_library("doca_compress") or os.path.exists("/opt/mellanox/doca/lib"):
        return ("DOCA libraries were found but Colony has no DOCA compress binding yet; "
                "use engine 'software'")
    return "no DOCA compress library (libdoca_compress) on this machine"


def _nvcomp_absent() -> str | None:
    if importlib.util.find_spec("nvidia") is None or importlib.util.find_spec("nvidia.nvcomp") is None:
        return "the nvidia-nvcomp Python package is not installed"
    try:
        from nvidia import nvcomp  # noqa: F401
        import cupy  # noqa: F401
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device visible"
    except Exception as e:  # any import or driver failure means: not usable here
        return f"nvCOMP present but not usable: {e}"
    return None


_ACCELERATORS = {
    "doca": _Probe("doca", _doca_absent, "runs on BlueField DPUs with DOCA installed"),
    "nvcomp": _Probe("nvcomp", _nvcomp_absent, "needs an NVIDIA GPU, cupy and nvidia-nvcomp"),
}
_ENGINES: dict[str, Engine] = {"software": SoftwareEngine()}


def register_engine(engine: Engine) -> None:
    """Make an engine selectable by name (used by accelerator plug-ins)."""
    _ENGINES[engine.name] = engine


def available_engines() -> dict[str, str]:
    """name -> 'available' or the reason it is not, for every known engine."""
    out = {name: "available" for name in _ENGINES}
    for name, probe in _ACCELERATORS.items():
        if name not in _ENGINES:
            out[name] = f"absent: {probe.detect() or 'detected, but no binding registered'}"
    return out


def get_engine(name: str = "software") -> Engine:
    if name in _ENGINES:
        return _ENGINES[name]
    if name in _ACCELERATORS:
        why = _ACCELERATORS[name].detect() or "detected, but no Colony binding is registered"
        raise EngineUnavailable(f"compression engine {name!r} is not available: {why} "
                                f"({_ACCELERATORS[name].hint}); use engine 'software'")
    raise EngineUnavailable(f"unknown compression engine {name!r}; known: {sorted(set(_ENGINES) | set(_ACCELERATORS))}")
