"""Crafted headers: typed errors, and nothing allocated for sizes a header merely claims (issue 14)."""

import tracemalloc

import crc32c
import numpy as np
import pyarrow as pa
import pytest
import zstandard

from colony import codec
from colony.codec import container
from colony.errors import BadLength, CorruptHeader, ObjectTooBig, TruncatedObject

GIB = 1 << 30


def _forged(n_segments: int, rlen: int, seg_bytes: bytes, outer: str = "zstd") -> bytes:
    """A well-checksummed object whose header claims n_segments * rlen raw bytes."""
    segs, pos = [], 0
    for _ in range(n_segments):
        segs.append((pos, len(seg_bytes), rlen, crc32c.crc32c(seg_bytes)))
        pos += len(seg_bytes)
    body = n_segments * rlen
    head = container._header("none", outer, [(0, body, 1)], segs, GIB, body, pos)
    return head + seg_bytes * n_segments


def test_small_header_claiming_64_gib_is_refused_without_allocating():
    tiny = zstandard.ZstdCompressor().compress(b"x" * 16)
    obj = _forged(64, GIB, tiny)
    assert len(obj) < 4096                     # a ~2.4 KB object
    tracemalloc.start()
    try:
        with pytest.raises(ObjectTooBig, match="inflate more than zstd can"):
            codec.unpack(obj)                  # before: MemoryError (or a 64 GiB np.empty)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_plausible_ratio_beyond_available_memory_is_refused(monkeypatch):
    monkeypatch.setattr(container, "_available_memory", lambda: 100 << 20)
    seg = bytes(64 << 10)                      # 64 KiB stored claiming 1 GiB: within zstd's ratio
    with pytest.raises(ObjectTooBig, match="more than the 104857600 bytes of memory available"):
        codec.read_info(_forged(1, GIB, seg))


@pytest.mark.parametrize("bit", [0, 5, 16, 31])
def test_flipped_table_count_bit_is_a_corrupt_header(bit):
    obj = bytearray(codec.pack([pa.table({"v": np.arange(1000)})]))
    n_t_at = 18                                # magic 8, version 2, codecs 2, flags 2, header length 4
    obj[n_t_at + bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptHeader, match="header checksum mismatch"):
        codec.read_info(bytes(obj))            # before: "65537 tables ... expected"


def test_header_length_field_must_be_aligned_and_present():
    obj = bytearray(codec.pack([pa.table({"v": np.arange(10)})]))
    obj[14] ^= 1                               # header_len becomes odd
    with pytest.raises(CorruptHeader, match="64-byte blocks"):
        codec.read_info(bytes(obj))
    obj = bytearray(codec.pack([pa.table({"v": np.arange(10)})]))
    obj[16] ^= 0x10                            # header_len claims ~1 MiB more than the object has
    with pytest.raises(TruncatedObject, match="header alone"):
        codec.read_info(bytes(obj))


@pytest.mark.parametrize("codec_name", ["outer-lz4", "outer-zstd", "outer-deflate"])
def test_real_highly_compressible_objects_pass_the_ratio_cap(codec_name):
    t = pa.table({"z": np.zeros(2_000_000), "s": pa.array(["a"] * 2_000_000)})
    for seg in (4096, 64 << 10, 16 << 20):
        buf = codec.pack([t], codec_name, segment_size=seg)
        assert codec.unpack(buf)[0].num_rows == 2_000_000


def test_segment_inflating_past_the_cap_is_bad_length():
    lz = container.get_engine("software").compress("lz4", memoryview(b"y" * 100), 1)
    with pytest.raises(BadLength):
        codec.read_info(_forged(1, 100 * 256 * len(lz) + 8192, lz, outer="lz4"))
