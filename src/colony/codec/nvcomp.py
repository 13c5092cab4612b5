"""nvCOMP (NVIDIA GPU) compression engine, through NVIDIA's Python package.

Optional: ``pip install 'colony[gpu]'`` (``nvidia-nvcomp-cu13``); this module is imported
only when engine ``nvcomp`` is asked for and :func:`gpu_present` says a GPU is usable,
so ``colony.codec`` imports and runs without it. It needs no CuPy: device views are
plain CUDA Array Interface objects.

Scatter/gather. nvCOMP's batched calls take a ``BatchArray``: one contiguous buffer
carved by an offset table (``nvcomp.as_arrays(buffer, offsets, sizes)``). A batch's input
segments lie in one host range (an object's stored region, or the IPC body being
packed), so when they sit at nvCOMP's required alignment that range is carved as is and
goes to the GPU in one host-to-device copy; otherwise (compressed segments start at any
byte) they are gathered into aligned slots of a staging buffer first. The results come
back as one batch (``.cpu()``) and each entry is copied into the caller's preallocated
slot. Decoding straight into a device-resident body (``decode(..., out=BatchArray)``)
is the next step once a GPU run shows where the time goes.

Formats. Segments use nvCOMP's RAW bitstreams (no nvCOMP header): an LZ4 block, a zstd
frame, a raw DEFLATE stream - the same formats the software engine reads and writes, so
either engine decodes the other's output. Software DEFLATE segments are zlib streams:
their 2-byte header and 4-byte Adler-32 trailer are stripped before nvCOMP sees them
(integrity is the segment CRC32C's job). GDeflate is nvCOMP's own format: objects made
with it record producer ``nvcomp`` and the software engine refuses them
(:class:`colony.errors.EngineMismatch`).
"""

from __future__ import annotations

import ctypes
import threading

import crc32c
import numpy as np
import pyarrow as pa

from colony.codec.engines import Batch, Completion, Engine, check_crc, pool, span
from colony.errors import CodecError, CorruptObject

_ALGORITHM = {"lz4": "LZ4", "zstd": "Zstd", "deflate": "Deflate", "gdeflate": "GDeflate"}
#: nvCOMP's largest chunk per codec (its batched DEFLATE/GDeflate kernels take 64 KiB)
MAX_SEGMENT = {"lz4": 1 << 24, "zstd": 1 << 24, "deflate": 1 << 16, "gdeflate": 1 << 16}


def gpu_present() -> str | None:
    """None when nvCOMP can reach a CUDA device, else why not."""
    from nvidia import nvcomp
    try:
        on_gpu = nvcomp.as_array(np.zeros(16, dtype=np.uint8)).cuda()
    except Exception as e:    # no driver, no device, wrong CUDA: all mean "not here"
        return f"no usable CUDA device: {e}"
    return None if on_gpu is not None else "no CUDA device visible"


def _zlib_wrapped(head: bytes) -> bool:
    return len(head) >= 2 and (head[0] & 0x0F) == 8 and ((head[0] << 8) | head[1]) % 31 == 0 \
        and not head[1] & 0x20        # FDICT streams need a preset dictionary nvCOMP lacks


class NvcompEngine(Engine):
    name = "nvcomp"
    codecs = ("lz4", "zstd", "deflate", "gdeflate")
    #: submitting threads (one CUDA stream each) past which a GPU gains nothing: a default
    #: until `colony bench codec --engines all` on a GPU measures the knee
    max_useful_threads = 2

    def __init__(self, device_id: int = 0) -> None:
        from nvidia import nvcomp
        self._nv = nvcomp
        self.device_id = device_id
        self._local = threading.local()     # nvCOMP codecs own a CUDA stream: one per thread

    def bound(self, codec: str, n: int) -> int:
        return n + n // 4 + 4096

    def submit(self, batch: Batch, threads: int = 1) -> Completion:
        return Completion(batch, pool(self.workers(threads)).submit(self._work, batch))

    def _codec(self, codec: str, level: int):
        cache = self._local.__dict__.setdefault("codecs", {})
        key = (codec, level)
        if key not in cache:
            opts = {"algorithm": _ALGORITHM[codec], "bitstream_kind": self._nv.BitstreamKind.RAW,
                    "device_id": self.device_id}
            if codec in ("deflate", "gdeflate"):
                opts["algorithm_type"] = min(max(level, 0), 5)
            cache[key] = self._nv.Codec(**opts)
        return cache[key]

    def _work(self, b: Batch) -> None:
        if b.codec not in self.codecs:
            raise CodecError(f"engine 'nvcomp' has no codec {b.codec!r}; choose one of {self.codecs}")
        limit = MAX_SEGMENT[b.codec]
        if max(b.src_len if b.op == "compress" else b.dst_cap, default=0) > limit:
            raise CodecError(f"nvCOMP {b.codec} takes segments of at most {limit} bytes; "
                             f"pack with segment_size<={limit} or use engine 'software'")
        base, view = span(b.src, b.src_len)
        src, lens = list(b.src), list(b.src_len)
        if b.crc is not None:
            for k in range(len(b)):
                check_crc(b, base, view, k)
        if b.op == "decompress" and b.codec == "deflate":
            for k in range(len(b)):       # zlib stream -> the raw DEFLATE inside it
                off = src[k] - base
                if _zlib_wrapped(bytes(view[off:off + 2])):
                    src[k], lens[k] = src[k] + 2, lens[k] - 6
        codec = self._codec(b.codec, b.level)
        align = (codec.get_required_decompression_alignment() if b.op == "decompress"
                 else codec.get_required_compression_alignment())
        host, offsets = _stage(view, base, src, lens, max(1, align))
        try:
            on_gpu = self._nv.as_arrays(host, offsets, lens).cuda()     # one host-to-device copy
            done = (codec.decode(on_gpu) if b.op == "decompress" else codec.encode(on_gpu)).cpu()
            sizes = done.buffer_sizes
        except (RuntimeError, ValueError) as e:
            if b.op == "decompress":
                raise CorruptObject(f"segments {b.first}..{b.first + len(b) - 1}: nvCOMP cannot decode "
                                    f"these {b.codec} streams: {e}") from e
            raise CodecError(f"nvCOMP {b.codec} encode failed: {e}") from e
        b.out_len, b.out_crc = [0] * len(b), [0] * len(b)
        for k, n in enumerate(sizes):
            if n > b.dst_cap[k]:
                err = CorruptObject if b.op == "decompress" else CodecError
                raise err(f"segment {b.first + k}: nvCOMP output of {n} bytes exceeds its {b.dst_cap[k]}-byte slot")
            h = np.asarray(done[k]).view(np.uint8).reshape(-1)[:n]
            ctypes.memmove(b.dst[k], h.ctypes.data, n)
            b.out_len[k] = n
            if b.op == "compress":
                b.out_crc[k] = crc32c.crc32c(h)


def _stage(view: memoryview, base: int, src: list[int], lens: list[int], align: int):
    """The batch's inputs as (one host buffer, offsets into it): the caller's own range when
    every segment already sits at nvCOMP's alignment, else gathered into aligned slots."""
    if base % align == 0 and all((s - base) % align == 0 for s in src):
        return np.frombuffer(view, dtype=np.uint8), [s - base for s in src]
    slots = [-(-n // align) * align for n in lens]
    offsets = (np.cumsum(slots) - np.asarray(slots)).tolist()
    staging = np.frombuffer(pa.allocate_buffer(max(1, sum(slots))), dtype=np.uint8)   # 64-byte aligned
    raw = np.frombuffer(view, dtype=np.uint8)
    for s, n, o in zip(src, lens, offsets):
        staging[o:o + n] = raw[s - base:s - base + n]
    return staging, offsets
