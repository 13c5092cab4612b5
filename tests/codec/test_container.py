import struct

import crc32c
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from colony import codec
from colony.codec.container import _CRC_AT, _FIXED, MAGIC
from colony.codec.engines import SoftwareEngine, inflate_any
from colony.data import load_ais, load_opensky, uniform
from colony.errors import (BadLength, BadMagic, ChecksumMismatch, CodecError, EngineUnavailable,
                           TruncatedObject, UnsupportedVersion)

ALL = list(codec.CODECS)

# -- random schemas ---------------------------------------------------------------------
_types = st.sampled_from([pa.int8(), pa.int64(), pa.uint64(), pa.float32(), pa.float64(), pa.bool_(),
                          pa.string(), pa.binary(), pa.large_string(), pa.timestamp("s"),
                          pa.list_(pa.int32())])


@st.composite
def tables(draw):
    n_cols = draw(st.integers(0, 5))
    n_rows = draw(st.sampled_from([0, 1, 7, 300]))
    cols, names = [], []
    for i in range(n_cols):
        t = draw(_types)
        seed = draw(st.integers(0, 2**16))
        rng = np.random.default_rng(seed)
        null_p = draw(st.sampled_from([0.0, 0.3, 1.0]))
        mask = rng.random(n_rows) < null_p
        if pa.types.is_integer(t) or pa.types.is_timestamp(t):
            vals = rng.integers(0, 100, n_rows).tolist()
        elif pa.types.is_floating(t):
            vals = rng.standard_normal(n_rows).tolist()
        elif pa.types.is_boolean(t):
            vals = (rng.random(n_rows) < 0.5).tolist()
        elif pa.types.is_list(t):
            vals = [list(range(int(k))) for k in rng.integers(0, 4, n_rows)]
        elif pa.types.is_binary(t):
            vals = [bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 9, n_rows)]
        else:
            vals = ["é" * int(k) + str(k) for k in rng.integers(0, 9, n_rows)]
        vals = [None if m else v for v, m in zip(vals, mask)]
        cols.append(pa.array(vals, type=t))
        names.append(f"c{i}")
    return pa.table(cols, names=names) if cols else pa.table({})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tables(), min_size=1, max_size=4), st.sampled_from(ALL), st.sampled_from([1, 2]),
       st.sampled_from([4096, 65536]))
def test_roundtrip_random_schemas(ts, name, threads, segment):
    buf = codec.pack(ts, name, threads=threads, segment_size=segment)
    out = codec.unpack(buf, threads=threads)
    assert len(out) == len(ts)
    for a, b in zip(ts, out):
        assert a.equals(b) and a.schema == b.schema
    info = codec.read_info(buf)
    assert info.codec == name and info.rows == sum(t.num_rows for t in ts)
    assert info.nbytes == len(buf)


def test_roundtrip_real_shaped_data_all_codecs():
    ts = [uniform(20_000, seed=1), load_ais(), load_opensky()]
    for name in ALL:
        out = codec.unpack(codec.pack(ts, name))
        assert all(a.equals(b) for a, b in zip(ts, out)), name


def test_compression_actually_compresses_particles():
    t = uniform(100_000, seed=2)
    plain = len(codec.pack(t))
    for name in ("inner-zstd", "outer-zstd", "outer-deflate", "outer-lz4"):
        assert len(codec.pack(t, name)) < 0.85 * plain, name


def test_combined_inner_and_outer_codec():
    t = uniform(10_000)
    buf = codec.pack(t, "inner-lz4+outer-zstd")
    assert codec.read_info(buf).inner == "lz4" and codec.read_info(buf).outer == "zstd"
    assert codec.unpack_one(buf).equals(t)


@pytest.mark.parametrize("bad", ["gzip", "inner-gzip", "outer-none+x-y", "inner-lz4+inner-zstd"])
def test_unknown_codec_names(bad):
    with pytest.raises(CodecError, match="unknown codec"):
        codec.pack(uniform(10), bad)


# -- zero copy, constant time -------------------------------------------------------------
@pytest.mark.parametrize("rows", [1_000, 2_000_000])
def test_uncompressed_decode_is_zero_copy_and_allocates_nothing(rows):
    t = uniform(rows, seed=3).combine_chunks()
    buf = codec.pack(t)
    lo, hi = buf.address, buf.address + buf.size
    before = pa.total_allocated_bytes()
    (out,) = codec.unpack(buf, verify=False)
    # no Arrow allocation proportional to rows: every column buffer points into the object
    assert pa.total_allocated_bytes() - before < 4096
    for col in out.columns:
        for b in col.chunk(0).buffers():
            if b is not None and b.size:
                assert lo <= b.address and b.address + b.size <= hi
    assert out.equals(t)


def test_header_only_read_is_independent_of_body():
    buf = codec.pack(uniform(100_000))
    info = codec.read_info(buf)
    assert info.header_len % 64 == 0 and info.body_len == info.stored_len
    assert len(info.segments) == -(-info.body_len // codec.DEFAULT_SEGMENT)


# -- corruption -----------------------------------------------------------------------------
def _reheader(buf: bytes, **fields) -> bytes:
    """Rewrite fixed-header fields and fix the header CRC, as a careful forger would."""
    names = ["magic", "version", "outer", "inner", "flags", "header_len", "n_tables", "n_segments",
             "segment_size", "body_len", "stored_len", "crc"]
    vals = dict(zip(names, _FIXED.unpack_from(buf, 0)))
    vals.update(fields, crc=0)
    head_len = vals["header_len"] if "header_len" not in fields else _FIXED.unpack_from(buf, 0)[5]
    out = bytearray(buf)
    _FIXED.pack_into(out, 0, *[vals[n] for n in names])
    struct.pack_into("<I", out, _CRC_AT, crc32c.crc32c(bytes(out[:head_len])))
    return bytes(out)


@pytest.fixture(scope="module", params=["none", "outer-zstd", "inner-lz4"])
def obj(request):
    return bytes(codec.pack([uniform(3_000, seed=5), load_ais().slice(0, 500)], request.param,
                            segment_size=4096))


def test_truncated(obj):
    for cut in (0, 3, 10, _FIXED.size + 5, len(obj) // 2, len(obj) - 1):
        with pytest.raises(TruncatedObject):
            codec.unpack(obj[:cut])


def test_wrong_magic(obj):
    with pytest.raises(BadMagic, match="not a Colony object"):
        codec.unpack(b"PAR1" + obj[4:])


def test_wrong_version(obj):
    with pytest.raises(UnsupportedVersion, match="version 9"):
        codec.unpack(_reheader(obj, version=9))


@pytest.mark.parametrize("field, value", [("body_len", 1 << 50), ("stored_len", (1 << 62)),
                                          ("segment_size", 0), ("n_tables", 10**6)])
def test_oversized_or_inconsistent_lengths(obj, field, value):
    with pytest.raises((BadLength, TruncatedObject)):
        codec.unpack(_reheader(obj, **{field: value}))


def test_trailing_bytes(obj):
    with pytest.raises(BadLength, match="trailing"):
        codec.unpack(obj + b"\0" * 8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_single_bit_flip_is_detected(obj, data):
    pos = data.draw(st.integers(0, len(obj) - 1))
    bit = data.draw(st.integers(0, 7))
    bad = bytearray(obj)
    bad[pos] ^= 1 << bit
    with pytest.raises(CodecError):
        codec.unpack(bytes(bad))


def test_body_flip_names_the_segment(obj):
    info = codec.read_info(obj)
    bad = bytearray(obj)
    bad[info.header_len + info.stored_len - 2] ^= 0xFF
    with pytest.raises(ChecksumMismatch, match=f"segment {len(info.segments) - 1} checksum"):
        codec.unpack(bytes(bad))


def test_garbage_never_crashes():
    rng = np.random.default_rng(0)
    for n in (0, 1, 8, 64, 1000):
        junk = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        with pytest.raises(CodecError):
            codec.unpack(MAGIC + junk)


# -- engines ---------------------------------------------------------------------------------
def test_deflate_is_standard_zlib_both_ways():
    import zlib
    data = uniform(20_000).to_batches()[0].column(3).buffers()[1].to_pybytes()[:200_000]
    eng = SoftwareEngine()
    assert zlib.decompress(eng.compress("deflate", memoryview(data), 1)) == data      # ours -> stock zlib
    assert eng.decompress("deflate", memoryview(zlib.compress(data, 6)), len(data)) == data  # stock -> ours
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)                                  # raw DEFLATE (hardware style)
    stream = raw.compress(data) + raw.flush()
    assert inflate_any(stream) == data


def test_accelerator_engines_fail_clearly_when_absent():
    engines = codec.available_engines()
    assert engines["software"] == "available"
    for name in ("doca", "nvcomp"):
        if engines[name] != "available":
            with pytest.raises(EngineUnavailable, match=f"engine '{name}' is not available"):
                codec.pack(uniform(10), "outer-zstd", engine=name)
    with pytest.raises(EngineUnavailable, match="unknown compression engine"):
        codec.get_engine("quantum")
