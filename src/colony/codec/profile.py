"""Measure what each codec costs on a device: serialize/deserialize throughput and ratio.

Measured inside a device under its thread budget, on every compression engine present
(software always; nvCOMP where a GPU is), as part of the device's one calibration record
(``colony.cost.suite.device_suite``, key ``codecs``); :mod:`colony.codec.advise` ranks
codecs for a link from these profiles. Nothing here is assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from colony.timing import best_of
from colony.codec.container import CODECS, pack, resolve_codec, unpack
from colony.codec.engines import PRODUCER_IDS
from colony.codec.registry import available_engines, get_engine


@dataclass(frozen=True)
class CodecProfile:
    codec: str
    threads: int
    serialize_mbps: float     # raw MB per second
    deserialize_mbps: float
    ratio: float              # stored bytes / raw bytes
    engine: str = "software"


def engines_present() -> list[str]:
    """Compression engines usable here (the ones a producer id exists for)."""
    return [n for n, s in available_engines().items() if s == "available" and n in PRODUCER_IDS]


def candidates() -> list[tuple[str, str]]:
    """(codec, engine) pairs to calibrate: uncompressed and inner codecs once, each outer
    codec on every engine present that makes it."""
    out = []
    for name in CODECS:
        outer = resolve_codec(name)[1]
        engines = [e for e in engines_present() if outer in get_engine(e).codecs] if outer != "none" else []
        out += [(name, e) for e in engines] or [(name, "software")]
    return out


def measure(table: pa.Table, codec: str, threads: int, repeats: int = 3, engine: str = "software") -> CodecProfile:
    """Time pack and unpack (with checksum verification) of ``table``; best of ``repeats``."""
    raw = table.nbytes
    buf = pack(table, codec, threads=threads, engine=engine)
    ser = best_of(lambda: pack(table, codec, threads=threads, engine=engine), repeats)
    de = best_of(lambda: unpack(buf, threads=threads, engine=engine), repeats)
    return CodecProfile(codec, threads, raw / ser / 1e6, raw / de / 1e6, len(buf) / raw, engine)


def calibrate(table: pa.Table | None = None, threads: int | None = None, repeats: int = 3,
              progress=None) -> list[CodecProfile]:
    if table is None:
        from colony.data import uniform
        table = uniform(1_000_000, seed=0).combine_chunks()
    threads = threads or 1
    out = []
    for name, engine in candidates():
        out.append(measure(table, name, threads, repeats, engine))
        if progress:
            progress(f"{name}/{engine}")
    return out


def profiles(record: dict) -> list[CodecProfile]:
    """The codec profiles of a device's calibration record ([] when it has none)."""
    return [CodecProfile(**p) for p in record.get("codecs", [])]
