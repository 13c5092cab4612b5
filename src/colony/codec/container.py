"""The Colony object: one or more Arrow tables in one contiguous, checksummed buffer.

Layout (little-endian; the same bytes in memory, on the wire and in spill files)::

    fixed header   magic "CLNYOBJ\\0", version, outer codec, inner codec, flags,
                   header length, table count, segment count, segment size,
                   body length (raw), stored length, header CRC32C
    table dir      per table: offset, length (in the raw body), rows
    segment table  per segment: stored offset, stored length, raw length, CRC32C of stored bytes
    padding        to a 64-byte boundary, so Arrow buffers in the body stay aligned
    body           the Arrow IPC streams of the tables, back to back (each 8-byte aligned),
                   stored as is (outer codec none) or as independently compressed segments

Inner compression is Arrow IPC's own per-buffer LZ4_FRAME / ZSTD. Outer compression cuts
the raw body into segments (64 KiB by default, like BlueField's engine) and compresses
them in parallel; each segment is a standard stream of its codec, so any engine can
decode any other engine's output.

Decoding an uncompressed object with ``verify=False`` is zero-copy and touches only the
header: constant time whatever the row count. ``verify=True`` (the default) also checks
every segment checksum and Arrow's full validation, so corrupt input raises a typed
:mod:`colony.errors` error instead of returning wrong data.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from itertools import chain
from typing import Iterable, Sequence

import crc32c as _crc
import numpy as np
import pyarrow as pa

from colony.codec.engines import (DEFAULT_BATCH, DEFAULT_LEVEL, PRODUCER_IDS, PRODUCER_NAMES, Batch, pool,
                                  run_batches)
from colony.codec.registry import get_engine
from colony.errors import (BadLength, BadMagic, ChecksumMismatch, CodecError, CorruptHeader, CorruptObject,
                           EngineMismatch, ObjectTooBig, TruncatedObject, UnsupportedVersion)

MAGIC = b"CLNYOBJ\0"
VERSION = 1
DEFAULT_SEGMENT = 64 * 1024
MAX_SEGMENT = 1 << 30
MAX_BODY = 1 << 44          # 16 TiB: anything larger is a corrupt length field
#: most raw bytes one stored byte can inflate to, per outer codec (LZ4 ~255:1, DEFLATE 1032:1,
#: zstd RLE blocks 128 KiB per 4 bytes), plus a frame's fixed overhead: a header that claims
#: more is forged, and is refused before anything is allocated
MAX_RATIO = {"lz4": 256, "deflate": 1032, "gdeflate": 1032, "zstd": 32768}   # best case of each format
ALIGN = 64

_FIXED = struct.Struct("<8sHBBHIIIIQQI")
_TABLE = struct.Struct("<QQQ")
_SEGMENT = struct.Struct("<QIII")
_SEGMENT_DTYPE = np.dtype([("off", "<u8"), ("slen", "<u4"), ("rlen", "<u4"), ("crc", "<u4")])
_CRC_AT = _FIXED.size - 4

OUTER_IDS = {"none": 0, "lz4": 1, "zstd": 2, "deflate": 3, "gdeflate": 4}   # gdeflate: nvCOMP only
INNER_IDS = {"none": 0, "lz4": 1, "zstd": 2}
_OUTER_NAMES = {v: k for k, v in OUTER_IDS.items()}
_INNER_NAMES = {v: k for k, v in INNER_IDS.items()}
_INNER_ARROW = {"none": None, "lz4": "lz4", "zstd": "zstd"}

#: named presets: (inner, outer)
CODECS = {
    "none": ("none", "none"),
    "inner-lz4": ("lz4", "none"),
    "inner-zstd": ("zstd", "none"),
    "outer-lz4": ("none", "lz4"),
    "outer-zstd": ("none", "zstd"),
    "outer-deflate": ("none", "deflate"),
}


@dataclass(frozen=True)
class ObjectInfo:
    """What the header says about an object (read without touching the body)."""

    version: int
    inner: str
    outer: str
    tables: tuple[tuple[int, int, int], ...]   # (offset, length, rows) in the raw body
    segments: np.ndarray      # structured: off, slen, rlen, crc (stored offset/len, raw len, CRC32C)
    segment_size: int
    body_len: int
    stored_len: int
    header_len: int

    @property
    def rows(self) -> int:
        return sum(t[2] for t in self.tables)

    @property
    def nbytes(self) -> int:
        return self.header_len + self.stored_len

    @property
    def codec(self) -> str:
        for name, pair in CODECS.items():
            if pair == (self.inner, self.outer):
                return name
        return f"inner-{self.inner}+outer-{self.outer}"


def resolve_codec(codec: str) -> tuple[str, str]:
    """'outer-zstd' -> ('none', 'zstd'); also accepts 'inner-X+outer-Y'."""
    if codec in CODECS:
        return CODECS[codec]
    parts = dict(p.split("-", 1) for p in codec.split("+") if "-" in p)
    inner, outer = parts.get("inner", "none"), parts.get("outer", "none")
    if set(parts) - {"inner", "outer"} or inner not in INNER_IDS or outer not in OUTER_IDS \
            or not parts or len(codec.split("+")) != len(parts):
        raise CodecError(f"unknown codec {codec!r}; choose one of {list(CODECS)} "
                         f"or 'inner-{{lz4,zstd}}+outer-{{lz4,zstd,deflate}}'")
    return inner, outer


def _threads(threads: int | None) -> int:
    return max(1, threads if threads is not None else (os.cpu_count() or 1))


def _pmap(fn, items: Sequence, threads: int) -> list:
    if threads <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    chunk = max(1, len(items) // (threads * 4))
    groups = [items[i:i + chunk] for i in range(0, len(items), chunk)]
    out: list = []
    for part in pool(threads).map(lambda g: [fn(i) for i in g], groups):
        out.extend(part)
    return out


def _as_tables(tables: pa.Table | pa.RecordBatch | Iterable) -> list[pa.Table]:
    if isinstance(tables, (pa.Table, pa.RecordBatch)):
        tables = [tables]
    out = []
    for t in tables:
        if isinstance(t, pa.RecordBatch):
            t = pa.Table.from_batches([t])
        if not isinstance(t, pa.Table):
            raise CodecError(f"can only pack Arrow tables or record batches, got {type(t).__name__}")
        out.append(t)
    return out


def _write_ipc(table: pa.Table, sink, options: pa.ipc.IpcWriteOptions) -> None:
    with pa.ipc.new_stream(sink, table.schema, options=options) as w:
        w.write_table(table)


_IPC_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def _has_dictionary(schema: pa.Schema) -> bool:
    return any(pa.types.is_dictionary(f.type) for f in schema)


def _ipc_pieces(tables: list[pa.Table], n_threads: int) -> tuple[list[pa.Buffer], list[tuple[int, int, int]]]:
    """Each table as a valid IPC stream made of separately serialized messages (schema,
    record batches, end-of-stream), the batches serialized in parallel: no serial copy of
    the whole body stands before parallel compression."""
    pieces, tables_dir, off = [], [], 0
    for t in tables:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, t.schema):
            pass
        schema_msg = sink.getvalue()
        schema_msg = schema_msg.slice(0, schema_msg.size - len(_IPC_EOS))
        rows_per = max(1024, -(-t.num_rows // (4 * n_threads)))
        msgs = _pmap(lambda b: b.serialize(), t.to_batches(max_chunksize=rows_per), n_threads)
        table_pieces = [schema_msg, *msgs, pa.py_buffer(_IPC_EOS)]
        n = sum(p.size for p in table_pieces)
        tables_dir.append((off, n, t.num_rows))
        pieces += table_pieces
        off += n
    return pieces, tables_dir


def _header(inner, outer, tables_dir, segments, segment_size, body_len, stored_len, flags=0) -> bytes:
    """``flags`` low byte: id of the engine that produced the segments (engines.PRODUCER_IDS)."""
    n_t, n_s = len(tables_dir), len(segments)
    raw_len = _FIXED.size + n_t * _TABLE.size + n_s * _SEGMENT.size
    header_len = -(-raw_len // ALIGN) * ALIGN
    parts = [_FIXED.pack(MAGIC, VERSION, OUTER_IDS[outer], INNER_IDS[inner], flags, header_len,
                         n_t, n_s, segment_size, body_len, stored_len, 0)]
    parts += [_TABLE.pack(*t) for t in tables_dir]
    parts += [_SEGMENT.pack(*s) for s in segments]
    head = bytearray(b"".join(parts).ljust(header_len, b"\0"))
    struct.pack_into("<I", head, _CRC_AT, _crc.crc32c(head))
    return bytes(head)


def pack(tables, codec: str = "none", *, level: int | None = None,
         segment_size: int = DEFAULT_SEGMENT, threads: int | None = None,
         engine: str = "software", batch: int = DEFAULT_BATCH) -> pa.Buffer:
    """Serialize tables into one Colony object.

    ``threads`` drives both Arrow's inner compression and the outer segment pool
    (default: all cores); ``engine`` compresses outer segments, ``batch`` of them per
    submission. Returns a pyarrow Buffer (bytes-like, zero-copy to Ray/NumPy).
    """
    inner, outer = resolve_codec(codec)
    if not 4096 <= segment_size <= MAX_SEGMENT:
        raise CodecError(f"segment_size must be within 4 KiB..1 GiB, got {segment_size}")
    tables = _as_tables(tables)
    n_threads = _threads(threads)
    batch = _check_batch(batch)
    opts = pa.ipc.IpcWriteOptions(compression=_INNER_ARROW[inner], use_threads=n_threads > 1)

    if inner == "none" and outer == "none":
        return _pack_plain(tables, opts, segment_size, n_threads)

    if outer != "none" and inner == "none" and not any(_has_dictionary(t.schema) for t in tables):
        pieces, tables_dir = _ipc_pieces(tables, n_threads)
    else:
        sink = pa.BufferOutputStream()
        tables_dir = []
        for t in tables:
            start = sink.tell()
            _write_ipc(t, sink, opts)
            tables_dir.append((start, sink.tell() - start, t.num_rows))
        pieces = [sink.getvalue()]
    body_len = sum(p.size for p in pieces)
    # segments never straddle pieces, so raw lengths are <= segment_size (shorter at piece ends)
    bounds = [(p, o, min(segment_size, p.size - o)) for p in pieces for o in range(0, p.size, segment_size)]
    if outer == "none":
        sealed = _pmap(lambda c: (c, _crc.crc32c(c)), [memoryview(p)[o:o + n] for p, o, n in bounds], n_threads)
        stored, flags = None, 0
        slens, crcs = [len(c) for c, _ in sealed], [c for _, c in sealed]
    else:
        eng = get_engine(engine)
        stored, slens, crcs = _compress(eng, outer, bounds, DEFAULT_LEVEL[outer] if level is None else level,
                                        n_threads, batch)
        flags = PRODUCER_IDS.get(eng.name, 0)
    segments, pos = [], 0
    for (_, _, n), slen, crc in zip(bounds, slens, crcs):
        segments.append((pos, slen, n, crc))
        pos += slen
    head = _header(inner, outer, tables_dir, segments, segment_size, body_len, pos, flags)
    out = pa.allocate_buffer(len(head) + pos)
    dst = np.frombuffer(out, dtype=np.uint8)
    dst[:len(head)] = np.frombuffer(head, dtype=np.uint8)
    base = len(head)

    def place(i):                                     # numpy copies release the GIL
        off = base + segments[i][0]
        if stored is None:
            p, o, n = bounds[i]
            dst[off:off + n] = np.frombuffer(p, dtype=np.uint8, count=n, offset=o)
        else:
            src_off, slen = stored[1][i], segments[i][1]
            dst[off:off + slen] = stored[0][src_off:src_off + slen]
    _pmap(place, range(len(segments)), n_threads)
    return out


def _compress(eng, outer: str, bounds, level: int, n_threads: int, batch: int):
    """Compress every segment through the engine's batched API into slots of one scratch
    buffer (each sized to the engine's bound); returns (scratch, slot offsets), stored
    lengths and CRC32Cs."""
    if outer not in eng.codecs:
        raise EngineMismatch(f"engine {eng.name!r} cannot produce outer codec {outer!r} "
                             f"(it makes {', '.join(eng.codecs)}); choose another codec or engine")
    caps = [eng.bound(outer, n) for _, _, n in bounds]
    slots = np.cumsum(caps, dtype=np.int64) - np.asarray(caps, dtype=np.int64)
    scratch = pa.allocate_buffer(int(slots[-1] + caps[-1]) if caps else 0)
    src = [p.address + o for p, o, _ in bounds]
    lens = [n for _, _, n in bounds]
    dst = (slots + scratch.address).tolist()
    keep = (bounds, scratch)
    batches = [Batch("compress", outer, src[i:i + batch], lens[i:i + batch], dst[i:i + batch], caps[i:i + batch],
                     level=level, first=i, keep=keep) for i in range(0, len(src), batch)]
    run_batches(eng, batches, n_threads)
    slens = list(chain.from_iterable(b.out_len for b in batches))
    crcs = list(chain.from_iterable(b.out_crc for b in batches))
    return (np.frombuffer(scratch, dtype=np.uint8), slots.tolist()), slens, crcs


def _pack_plain(tables, opts, segment_size, n_threads) -> pa.Buffer:
    """Uncompressed: size the IPC streams first, then write them once, in place."""
    sizes = []
    for t in tables:
        mock = pa.MockOutputStream()
        _write_ipc(t, mock, opts)
        sizes.append(mock.size())
    body_len = sum(sizes)
    tables_dir, off = [], 0
    for t, n in zip(tables, sizes):
        tables_dir.append((off, n, t.num_rows))
        off += n
    bounds = [(o, min(segment_size, body_len - o)) for o in range(0, body_len, segment_size)]
    # the header length does not depend on the checksums, so size it with placeholders
    placeholder = [(o, n, n, 0) for o, n in bounds]
    head_len = len(_header("none", "none", tables_dir, placeholder, segment_size, body_len, body_len))
    buf = pa.allocate_buffer(head_len + body_len)
    writer = pa.FixedSizeBufferWriter(buf)
    writer.write(bytes(head_len))  # placeholder; the real header goes in once checksums exist
    for t in tables:
        _write_ipc(t, writer, opts)
    view = memoryview(buf)[head_len:]
    crcs = _pmap(lambda b: _crc.crc32c(view[b[0]:b[0] + b[1]]), bounds, n_threads)
    segments = [(o, n, n, c) for (o, n), c in zip(bounds, crcs)]
    head = _header("none", "none", tables_dir, segments, segment_size, body_len, body_len)
    pa.FixedSizeBufferWriter(buf).write(head)
    return buf


def stream_size(schema: pa.Schema, batches) -> int:
    """Bytes of the uncompressed IPC stream of ``batches`` (counted, nothing copied): what a
    producer announces so a receiver can pack the batches in flight (:class:`ObjectWriter`)."""
    mock = pa.MockOutputStream()
    with pa.ipc.new_stream(mock, schema) as w:
        for b in batches:
            w.write_batch(b)
    return mock.size()


class ObjectWriter:
    """Packs one uncompressed table into a Colony object batch by batch, as the batches
    arrive (serialization in flight): each batch is written once, straight into its final
    place, and checksummed right after (still in cache); ``finish`` adds the header.
    ``body_len`` is :func:`stream_size` of exactly the batches that will be written."""

    def __init__(self, schema: pa.Schema, body_len: int, rows: int, segment_size: int = DEFAULT_SEGMENT) -> None:
        if body_len <= 0 or body_len > MAX_BODY:
            raise BadLength(f"announced stream length {body_len} is impossible; send stream_size() of the batches")
        self.segment_size, self.body_len, self.rows = segment_size, body_len, rows
        self._bounds = [(o, min(segment_size, body_len - o)) for o in range(0, body_len, segment_size)]
        placeholder = [(o, n, n, 0) for o, n in self._bounds]
        self._head_len = len(_header("none", "none", [(0, body_len, rows)], placeholder, segment_size,
                                     body_len, body_len))
        self.buf = pa.allocate_buffer(self._head_len + body_len)
        self._sink = pa.FixedSizeBufferWriter(self.buf)
        self._sink.write(bytes(self._head_len))   # the header goes in once the checksums exist
        self._w = pa.ipc.new_stream(self._sink, schema)
        self._rows = 0
        self._view = memoryview(self.buf)[self._head_len:]
        self._crcs: list[int] = []        # of the segments written so far
        self._crc, self._crc_at = 0, 0    # running checksum of the open segment, and where it stopped

    def write(self, batch: pa.RecordBatch) -> None:
        if self._sink.tell() >= self._head_len + self.body_len:
            raise BadLength("more batches arrived than the announced stream length holds")
        self._w.write_batch(batch)
        self._rows += batch.num_rows
        self._checksum()

    def _checksum(self) -> None:
        """Checksum what was just written while it is still in cache (one pass, not a second
        read of the whole body in ``finish``); segment by segment, continuing across writes."""
        upto = min(self._sink.tell() - self._head_len, self.body_len)
        while self._crc_at < upto:
            seg_end = min((len(self._crcs) + 1) * self.segment_size, self.body_len)
            stop = min(upto, seg_end)
            self._crc = _crc.crc32c(self._view[self._crc_at:stop], self._crc)
            self._crc_at = stop
            if stop == seg_end:
                self._crcs.append(self._crc)
                self._crc = 0

    def finish(self) -> pa.Buffer:
        self._w.close()
        written = self._sink.tell() - self._head_len
        if written != self.body_len or self._rows != self.rows:
            raise BadLength(f"announced {self.body_len} bytes / {self.rows} rows, received {written} bytes / "
                            f"{self._rows} rows; the producer must announce stream_size() of what it sends")
        self._checksum()
        crcs = self._crcs
        segments = [(o, n, n, c) for (o, n), c in zip(self._bounds, crcs)]
        head = _header("none", "none", [(0, self.body_len, self.rows)], segments, self.segment_size,
                       self.body_len, self.body_len)
        pa.FixedSizeBufferWriter(self.buf).write(head)
        return self.buf


def read_info(buf) -> ObjectInfo:
    """Parse and check the header only (constant time for a given table/segment count)."""
    mv = memoryview(buf).cast("B")
    n = len(mv)
    if n < 8 or bytes(mv[:8]) != MAGIC:
        if n < 8 and MAGIC.startswith(bytes(mv[:n])):
            raise TruncatedObject(f"object is {n} bytes, shorter than its magic; the buffer was cut off")
        raise BadMagic(f"not a Colony object: magic is {bytes(mv[:8])!r}, expected {MAGIC!r}")
    if n < _FIXED.size:
        raise TruncatedObject(f"object is {n} bytes, shorter than the {_FIXED.size}-byte fixed header")
    (_, version, outer_id, inner_id, _flags, header_len, n_t, n_s, segment_size,
     body_len, stored_len, crc) = _FIXED.unpack_from(mv, 0)
    if version != VERSION:
        raise UnsupportedVersion(f"object format version {version}; this Colony reads version {VERSION}")
    if header_len < _FIXED.size or header_len % ALIGN:
        raise CorruptHeader(f"header length field {header_len} is not a whole number of {ALIGN}-byte "
                            "blocks: the object header is corrupt")
    if n < header_len:
        raise TruncatedObject(f"object is {n} bytes but its header alone is {header_len}")
    # the checksum first: a flipped count or length bit is a corrupt header, not a huge object
    head = bytearray(mv[:header_len])
    struct.pack_into("<I", head, _CRC_AT, 0)
    if _crc.crc32c(head) != crc:
        raise CorruptHeader("header checksum mismatch: the object header is corrupt")
    expect = -(-(_FIXED.size + n_t * _TABLE.size + n_s * _SEGMENT.size) // ALIGN) * ALIGN
    if header_len != expect:
        raise BadLength(f"header length field {header_len} does not match {n_t} tables and "
                        f"{n_s} segments ({expect} bytes expected)")
    if outer_id not in _OUTER_NAMES or inner_id not in _INNER_NAMES:
        raise CorruptObject(f"unknown codec ids outer={outer_id} inner={inner_id}")
    if body_len > MAX_BODY or stored_len > MAX_BODY or not 0 < segment_size <= MAX_SEGMENT:
        raise BadLength(f"implausible lengths: body {body_len}, stored {stored_len}, segment {segment_size}")
    if n < header_len + stored_len:
        raise TruncatedObject(f"object is {n} bytes, header says {header_len + stored_len}: "
                              "the buffer was cut off")
    if n > header_len + stored_len:
        raise BadLength(f"object is {n} bytes, header says {header_len + stored_len}: "
                        "trailing bytes after the body")
    tables = tuple(_TABLE.unpack_from(mv, _FIXED.size + i * _TABLE.size) for i in range(n_t))
    seg_at = _FIXED.size + n_t * _TABLE.size
    segments = np.frombuffer(mv, dtype=_SEGMENT_DTYPE, count=n_s, offset=seg_at)
    info = ObjectInfo(version, _INNER_NAMES[inner_id], _OUTER_NAMES[outer_id], tables, segments,
                      segment_size, body_len, stored_len, header_len)
    _check_layout(info)
    return info


def _check_layout(info: ObjectInfo) -> None:
    """Vectorized: a 1 GiB object has 16 Ki segments and must still decode in well under 1 ms."""
    seg = info.segments
    slen = seg["slen"].astype(np.uint64)
    starts = np.cumsum(slen, dtype=np.uint64) - slen
    if len(seg) and (not np.array_equal(seg["off"], starts) or (seg["rlen"] > info.segment_size).any()
                     or (info.outer == "none" and not np.array_equal(seg["slen"], seg["rlen"]))):
        raise BadLength("segment table has inconsistent offset/length fields")
    stored, raw = int(slen.sum()), int(seg["rlen"].astype(np.uint64).sum())
    if stored != info.stored_len or raw != info.body_len:
        raise BadLength(f"segments cover {stored}/{raw} bytes, header says {info.stored_len}/{info.body_len}")
    if info.outer != "none" and len(seg):
        ratio = MAX_RATIO[info.outer]
        over = np.flatnonzero(seg["rlen"].astype(np.uint64) > slen * np.uint64(ratio) + np.uint64(4096))
        if over.size:
            raise ObjectTooBig(f"segment {int(over[0])} claims to inflate more than {info.outer} can ({ratio}:1): "
                               "the header's lengths are forged or corrupt")
        avail = _available_memory()
        if info.body_len > avail:
            raise ObjectTooBig(f"object inflates to {info.body_len} bytes, more than the {avail} bytes of memory "
                               "available here; split it into smaller objects")
    end = 0
    for i, (off, length, _rows) in enumerate(info.tables):
        if off != end or off % 8 or length % 8 or off + length > info.body_len:
            raise BadLength(f"table {i} lies outside the body or is misaligned")
        end = off + length
    if end != info.body_len:
        raise BadLength("table directory does not cover the body")


def _available_memory() -> int:
    import psutil
    return int(psutil.virtual_memory().available)


def verify(buf) -> ObjectInfo:
    """Check the header and every segment checksum without decoding (spill read-back, recovery)."""
    info = read_info(buf)
    view = memoryview(buf).cast("B")[info.header_len:info.header_len + info.stored_len]
    for i, (off, slen, _rlen, crc) in enumerate(info.segments.tolist()):
        if _crc.crc32c(view[off:off + slen]) != crc:
            raise ChecksumMismatch(f"segment {i} checksum mismatch: the object body is corrupt")
    return info


def _read_stream(body: pa.Buffer, off: int, length: int, rows: int, verify: bool) -> pa.Table:
    try:
        table = pa.ipc.open_stream(body.slice(off, length)).read_all()
        if verify:
            table.validate(full=True)
    except (pa.ArrowInvalid, pa.ArrowException, OSError) as e:
        raise CorruptObject(f"table at body offset {off} is not a valid Arrow IPC stream: {e}") from e
    if table.num_rows != rows:
        raise CorruptObject(f"table at body offset {off} has {table.num_rows} rows, directory says {rows}")
    return table


def unpack(buf, *, verify: bool = True, threads: int | None = None, engine: str = "software",
           batch: int = DEFAULT_BATCH) -> list[pa.Table]:
    """Decode an object into its tables.

    Uncompressed objects are zero-copy views of ``buf`` (keep it alive); with
    ``verify=False`` decoding is constant-time. Compressed objects are inflated by
    ``engine``, ``batch`` segments per submission, in parallel and straight into one
    preallocated 64-byte-aligned body; with ``verify`` each segment's checksum is checked
    just before it is decoded.
    """
    info = read_info(buf)
    whole = buf if isinstance(buf, pa.Buffer) else pa.py_buffer(buf)
    stored = whole.slice(info.header_len, info.stored_len)
    n_threads = _threads(threads)
    if info.outer == "none":
        if verify:
            sview = memoryview(stored)
            bad = [i for i, ok in enumerate(_pmap(lambda s: _crc.crc32c(sview[s[0]:s[0] + s[1]]) == s[3],
                                                  info.segments.tolist(), n_threads)) if not ok]
            if bad:
                raise ChecksumMismatch(f"segment {bad[0]} checksum mismatch ({len(bad)} corrupt "
                                       f"segment(s) of {len(info.segments)}): the object body is corrupt")
        body = stored
    else:
        body = _inflate(info, stored, get_engine(engine), producer(whole), n_threads, verify, _check_batch(batch))
    return [_read_stream(body, off, length, rows, verify) for off, length, rows in info.tables]


def producer(buf) -> str:
    """Name of the engine that produced an object's segments (header flags, low byte)."""
    flags = _FIXED.unpack_from(memoryview(buf).cast("B"), 0)[4]
    if (flags & 0xFF) not in PRODUCER_NAMES:
        raise CorruptObject(f"unknown producer engine id {flags & 0xFF} in the object header")
    return PRODUCER_NAMES[flags & 0xFF]


def _check_batch(batch: int) -> int:
    if not isinstance(batch, int) or batch < 1:
        raise CodecError(f"batch must be a positive number of segments, got {batch!r}")
    return batch


def _inflate(info: ObjectInfo, stored: pa.Buffer, eng, made_by: str, n_threads: int, verify: bool,
             batch: int) -> pa.Buffer:
    """Every segment decoded by the engine into its slice of one fresh body: no per-segment
    Python bytes, no second copy."""
    eng.check_decodable(info.outer, made_by)
    seg = info.segments
    body = pa.allocate_buffer(info.body_len)       # Arrow's pool: 64-byte aligned, reused across calls
    rlen = seg["rlen"].astype(np.int64)
    src = (seg["off"].astype(np.int64) + stored.address).tolist()
    dst = (np.cumsum(rlen) - rlen + body.address).tolist()
    slen, rl = seg["slen"].tolist(), rlen.tolist()
    crc = seg["crc"].tolist() if verify else None
    keep = (stored, body)
    batches = [Batch("decompress", info.outer, src[i:i + batch], slen[i:i + batch], dst[i:i + batch],
                     rl[i:i + batch], crc=crc[i:i + batch] if verify else None, first=i, keep=keep)
               for i in range(0, len(src), batch)]
    run_batches(eng, batches, n_threads)
    got = np.fromiter(chain.from_iterable(b.out_len for b in batches), dtype=np.int64, count=len(src))
    short = np.flatnonzero(got != rlen)
    if short.size:
        i = int(short[0])
        raise CorruptObject(f"segment {i} inflates to {got[i]} bytes, header says {rl[i]}")
    return body


def unpack_one(buf, **kw) -> pa.Table:
    """Decode an object holding exactly one table."""
    tables = unpack(buf, **kw)
    if len(tables) != 1:
        raise CodecError(f"object holds {len(tables)} tables, expected 1; use unpack()")
    return tables[0]
