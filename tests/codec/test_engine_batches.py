"""The batched engine API (submit -> completion, bounded in flight, max_useful_threads), the
software engine's in-place decode routes, and interchangeability between producers."""

from __future__ import annotations

import threading
import time
import zlib

import numpy as np
import pyarrow as pa
import pytest

from colony import codec
from colony.codec import container, native
from colony.codec.engines import (DEFAULT_BATCH, Batch, Completion, Engine, SoftwareEngine, pool,
                                  run_batches)
from colony.codec.registry import _ENGINES
from colony.data import uniform
from colony.errors import ChecksumMismatch, CodecError, CorruptObject, EngineMismatch

OUTER = ("lz4", "zstd", "deflate")


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return uniform(40_000, seed=3).combine_chunks()       # ~2.9 MB: ~45 segments of 64 KiB


def _segments(n_segments: int = 6, size: int = 50_000) -> list[bytes]:
    rng = np.random.default_rng(0)
    return [(rng.integers(0, 40, size, dtype=np.uint8).tobytes()) for _ in range(n_segments)]


def _decompress_batch(eng: Engine, codec_name: str, blobs: list[bytes], raw_len: int, **kw) -> tuple[Batch, np.ndarray]:
    src = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    offs = np.cumsum([0] + [len(b) for b in blobs])[:-1]
    out = np.empty(raw_len * len(blobs), dtype=np.uint8)
    b = Batch("decompress", codec_name, (offs + src.ctypes.data).tolist(), [len(x) for x in blobs],
              [out.ctypes.data + i * raw_len for i in range(len(blobs))], [raw_len] * len(blobs),
              keep=(src, out), **kw)
    return b, out


# -- the API -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", OUTER)
def test_submit_returns_a_completion_and_decodes_into_the_given_slots(name):
    eng = SoftwareEngine()
    raws = _segments()
    blobs = [eng.compress(name, r, 1) for r in raws]
    b, out = _decompress_batch(eng, name, blobs, len(raws[0]))
    c = eng.submit(b, threads=2)
    assert isinstance(c, Completion)
    assert c.wait(timeout=30) is b and c.done()
    assert b.out_len == [len(r) for r in raws]
    assert out.tobytes() == b"".join(raws)


def test_errors_surface_at_wait_with_the_segment_index():
    eng = SoftwareEngine()
    raws = _segments(3)
    blobs = [eng.compress("lz4", r, 1) for r in raws]
    blobs[1] = b"\xff" * 40                       # garbage: LZ4 must refuse it, never read/write out of bounds
    b, _ = _decompress_batch(eng, "lz4", blobs, len(raws[0]), first=10)
    c = eng.submit(b, threads=1)
    with pytest.raises(CorruptObject, match="segment 11"):
        c.wait()


def test_checksums_are_checked_before_decoding():
    eng = SoftwareEngine()
    raws = _segments(2)
    blobs = [eng.compress("zstd", r, 1) for r in raws]
    crcs = [zlib.crc32(b) for b in blobs]          # deliberately the wrong polynomial
    b, _ = _decompress_batch(eng, "zstd", blobs, len(raws[0]), crc=crcs)
    with pytest.raises(ChecksumMismatch, match="segment 0 checksum"):
        eng.submit(b).wait()


class _Recording(Engine):
    """A real (software) engine that records how many batches are outstanding at once
    and which threads ran them; each batch takes a little while, like a device queue."""

    name = "recording"

    def __init__(self, max_useful_threads=None):
        self.max_useful_threads = max_useful_threads
        self.inner = SoftwareEngine()
        self.lock = threading.Lock()
        self.outstanding = self.peak = 0
        self.threads_seen: set[int] = set()

    def submit(self, batch, threads=1):
        with self.lock:
            self.outstanding += 1
            self.peak = max(self.peak, self.outstanding)

        def work(b):
            try:
                time.sleep(0.01)
                self.inner._work(b)
            finally:
                with self.lock:
                    self.outstanding -= 1
                    self.threads_seen.add(threading.get_ident())
        return Completion(batch, pool(self.workers(threads)).submit(work, batch))


def _many_batches(n: int):
    eng = SoftwareEngine()
    raw = _segments(1, 20_000)[0]
    blob = eng.compress("lz4", raw, 1)
    return [_decompress_batch(eng, "lz4", [blob], len(raw))[0] for _ in range(n)]


def test_run_batches_keeps_a_bounded_number_in_flight():
    eng = _Recording()
    batches = _many_batches(20)
    run_batches(eng, batches, threads=2)
    assert eng.in_flight(2) == 4
    assert 2 <= eng.peak <= 4
    assert all(b.out_len == [20_000] for b in batches)


def test_max_useful_threads_caps_the_submitting_threads():
    eng = _Recording(max_useful_threads=1)
    run_batches(eng, _many_batches(12), threads=8)
    assert eng.workers(8) == 1 and eng.in_flight(8) == 2
    assert len(eng.threads_seen) == 1 and eng.peak <= 2


def test_run_batches_settles_every_batch_before_raising():
    eng = _Recording()
    batches = _many_batches(10)
    batches[2].src_len[0] = 7                    # truncated stream -> decode error
    with pytest.raises(CorruptObject, match="segment 0"):
        run_batches(eng, batches, threads=2)
    assert eng.outstanding == 0                  # nothing still writes into the caller's buffers


# -- the container through the API --------------------------------------------------------------
@pytest.mark.parametrize("name", OUTER)
@pytest.mark.parametrize("batch", [1, 7, DEFAULT_BATCH, 10_000])
def test_round_trip_any_batch_size(table, name, batch):
    buf = codec.pack(table, f"outer-{name}", threads=2, batch=batch)
    for verify in (True, False):
        assert codec.unpack_one(buf, threads=2, batch=batch, verify=verify).equals(table)


def test_body_is_one_aligned_buffer_holding_every_column(table):
    """Segments decode into one fresh 64-byte-aligned body and the tables are views of it:
    no per-segment buffers, no second copy."""
    buf = codec.pack(table, "outer-zstd", threads=2)
    info = codec.read_info(buf)
    stored = buf.slice(info.header_len, info.stored_len)
    body = container._inflate(info, stored, codec.get_engine(), "software", 2, True, DEFAULT_BATCH)
    assert body.address % 64 == 0 and body.size == info.body_len
    (off, length, rows), = info.tables
    out = container._read_stream(body, off, length, rows, verify=True)
    assert out.equals(table)
    for col in out.columns:
        for chunk in col.chunks:
            for b in chunk.buffers():
                if b is not None:
                    assert body.address <= b.address and b.address + b.size <= body.address + body.size


def test_unpack_rejects_a_bad_batch(table):
    buf = codec.pack(table, "outer-lz4")
    with pytest.raises(CodecError, match="batch must be a positive"):
        codec.unpack(buf, batch=0)


def _reseal(buf: pa.Buffer, i: int, new_segment: bytes) -> bytes:
    """Replace segment i's stored bytes and fix every checksum: a well-formed object whose
    segment i is garbage, so only the decoder can notice."""
    info = codec.read_info(buf)
    segs = info.segments.tolist()
    mv = memoryview(buf)
    stored = [bytes(mv[info.header_len + o:info.header_len + o + n]) for o, n, _, _ in segs]
    stored[i] = new_segment
    import crc32c
    pos, table_segments = 0, []
    for (o, n, r, c), s in zip(segs, stored):
        table_segments.append((pos, len(s), r, crc32c.crc32c(s)))
        pos += len(s)
    head = container._header(info.inner, info.outer, info.tables, table_segments, info.segment_size,
                             info.body_len, pos)
    return head + b"".join(stored)


@pytest.mark.parametrize("name", OUTER)
def test_garbage_segment_with_valid_checksum_raises_never_crashes(table, name):
    buf = codec.pack(table, f"outer-{name}", threads=1)
    rng = np.random.default_rng(1)
    for junk in (b"", b"\x00" * 3, rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()):
        bad = _reseal(buf, 2, junk)
        with pytest.raises(CorruptObject, match="segment 2"):
            codec.unpack(bad, threads=2)


@pytest.mark.parametrize("name", OUTER)
def test_segment_that_inflates_short_is_named(table, name):
    buf = codec.pack(table, f"outer-{name}", threads=1)
    info = codec.read_info(buf)
    raw = np.frombuffer(codec.pack(table, "none"), dtype=np.uint8)[-info.body_len:]
    i = int(np.flatnonzero(info.segments["rlen"] == info.segment_size)[0])    # a full segment
    short = SoftwareEngine().compress(name, raw[:1000].tobytes(), 1)
    with pytest.raises(CorruptObject, match=f"segment {i} inflates to 1000 bytes, header says {info.segment_size}"):
        codec.unpack(_reseal(buf, i, short))


# -- interchangeability on the CPU ----------------------------------------------------------------
@pytest.fixture
def bytes_route():
    """The software engine on the Python packages' bytes API (the pre-batched route, and what
    runs where no library is found), registered under its own name for this test."""
    eng = SoftwareEngine(native_routes=False)
    eng.name = "software-bytes"
    _ENGINES[eng.name] = eng
    yield eng.name
    _ENGINES.pop(eng.name, None)


@pytest.mark.parametrize("name", OUTER)
def test_native_and_bytes_routes_decode_each_other(table, name, bytes_route):
    a = codec.pack(table, f"outer-{name}", threads=2)
    b = codec.pack(table, f"outer-{name}", threads=2, engine=bytes_route)
    for buf in (a, b):
        for eng in ("software", bytes_route):
            assert codec.unpack_one(buf, engine=eng, threads=2).equals(table)


class _RawDeflate(SoftwareEngine):
    """DEFLATE without the zlib wrapper (RFC 1951), as hardware engines emit it."""

    name = "raw-deflate"

    def _compress(self, b, route):
        super()._compress(b, None)

    def _py_compress(self, codec_name, data, level):
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()


@pytest.mark.parametrize("consumer", ["software", "software-bytes"])
def test_raw_and_zlib_deflate_objects_decode_alike(table, consumer, bytes_route):
    _ENGINES["raw-deflate"] = _RawDeflate()
    try:
        raw = codec.pack(table, "outer-deflate", engine="raw-deflate", threads=2)
    finally:
        _ENGINES.pop("raw-deflate")
    wrapped = codec.pack(table, "outer-deflate", threads=2)
    seg0 = bytes(memoryview(raw)[codec.read_info(raw).header_len:][:2])
    assert not (((seg0[0] << 8) | seg0[1]) % 31 == 0 and seg0[0] & 0x0F == 8)     # really raw
    for buf in (raw, wrapped):
        assert codec.unpack_one(buf, engine=consumer, threads=2).equals(table)


def test_native_lz4_and_zstd_streams_are_the_standard_ones():
    import lz4.block
    import zstandard
    raw = _segments(1, 100_000)[0]
    eng = SoftwareEngine()
    assert lz4.block.decompress(eng.compress("lz4", raw, 1), uncompressed_size=len(raw)) == raw
    assert zstandard.ZstdDecompressor().decompress(eng.compress("zstd", raw, 1)) == raw
    assert eng.decompress("zstd", zstandard.ZstdCompressor(level=3).compress(raw), len(raw)) == raw
    assert eng.decompress("lz4", lz4.block.compress(raw, store_size=False), len(raw)) == raw


def test_native_routes_are_found_here():
    """This machine (and CI, via scripts/sysdeps.sh) has every route; elsewhere the engine
    falls back to the bytes route, which the tests above also cover."""
    routes = native.describe()
    assert all("fallback" not in v for v in routes.values()), routes


# -- producers the software engine cannot decode ---------------------------------------------------
class _GpuOnly(_RawDeflate):
    """Stands in for an engine with a private format: it records producer 'nvcomp' and
    codec 'gdeflate' (its bytes are raw DEFLATE here, but the software engine must not try)."""

    name = "nvcomp"
    codecs = ("gdeflate",)

    def _work(self, b):
        b.codec = "deflate"
        self._compress(b, None)


def test_private_format_is_refused_with_the_producer_named(table, monkeypatch):
    monkeypatch.setitem(_ENGINES, "nvcomp", _GpuOnly())
    buf = codec.pack(table, "outer-gdeflate", engine="nvcomp", threads=1)
    assert container.producer(buf) == "nvcomp"
    assert codec.read_info(buf).outer == "gdeflate"
    with pytest.raises(EngineMismatch, match=r"produced by engine 'nvcomp'.*engine='nvcomp'"):
        codec.unpack(buf, engine="software")


def test_software_cannot_produce_gdeflate(table):
    with pytest.raises(EngineMismatch, match="cannot produce outer codec 'gdeflate'"):
        codec.pack(table, "outer-gdeflate")


def test_software_objects_record_the_software_producer(table):
    assert container.producer(codec.pack(table, "outer-lz4")) == "software"
    assert container.producer(codec.pack(table, "none")) == "software"


# -- the per-segment route (no compiled _batch loops) gives the same answers and errors ------------
@pytest.fixture
def no_c_loops(monkeypatch):
    monkeypatch.setattr(native, "batch_loops", lambda: None)


@pytest.mark.parametrize("name", OUTER)
def test_per_segment_route_round_trips_and_refuses_garbage(table, name, no_c_loops):
    buf = codec.pack(table, f"outer-{name}", threads=2)
    assert codec.unpack_one(buf, threads=2).equals(table)
    with pytest.raises(CorruptObject, match="segment 2"):
        codec.unpack(_reseal(buf, 2, b"\x00" * 3), threads=2)
    flipped = bytearray(buf)
    flipped[-3] ^= 0x10
    with pytest.raises(ChecksumMismatch, match="checksum"):
        codec.unpack(bytes(flipped), threads=2)


def test_c_loops_and_per_segment_route_write_identical_objects(table, monkeypatch):
    if native.batch_loops() is None:
        pytest.skip("the _batch extension was not built here")
    a = codec.pack(table, "outer-zstd", threads=2)
    monkeypatch.setattr(native, "batch_loops", lambda: None)
    b = codec.pack(table, "outer-zstd", threads=2)
    assert a.equals(b)
