"""Pick the codec, and the compression engine, that move data fastest over a given link.

Each codec's serialize/deserialize throughput and compression ratio are measured once on
this machine (:func:`calibrate`), on every compression engine present here (software
always; nvCOMP where a GPU is), and cached; :func:`advise` then ranks (codec, engine)
pairs by serialize + transfer + deserialize time per raw byte. Nothing here is assumed:
a machine with a slow CPU and a fast link will be told to send uncompressed data, and
an engine is chosen by measurement, never by a flag the user must know.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path

import pyarrow as pa

from colony.timing import best_of
from colony.codec.container import CODECS, pack, resolve_codec, unpack
from colony.codec.engines import PRODUCER_IDS
from colony.codec.registry import available_engines, get_engine
from colony.pacing import gbps_to_Bps
from colony.errors import ColonyError


@dataclass(frozen=True)
class CodecProfile:
    codec: str
    threads: int
    serialize_mbps: float     # raw MB per second
    deserialize_mbps: float
    ratio: float              # stored bytes / raw bytes
    engine: str = "software"


@dataclass(frozen=True)
class Advice:
    codec: str
    seconds: float            # for ``nbytes`` raw bytes
    serialize_s: float
    transfer_s: float
    deserialize_s: float
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


def cache_dir() -> Path:
    return Path(os.environ.get("COLONY_CACHE_DIR", Path.home() / ".cache" / "colony"))


def _fingerprint(threads: int) -> str:
    engines = ",".join(engines_present())
    return f"{platform.node()}|{platform.machine()}|{os.cpu_count()}|{threads}|{version('colony')}|{engines}"


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
    threads = threads or os.cpu_count() or 1
    out = []
    for name, engine in candidates():
        out.append(measure(table, name, threads, repeats, engine))
        if progress:
            progress(f"{name}/{engine}")
    return out


def load_profiles(threads: int | None = None, refresh: bool = False, progress=None) -> list[CodecProfile]:
    """Cached calibration for this machine and thread count; measured on first use."""
    threads = threads or os.cpu_count() or 1
    path = cache_dir() / "codec-calibration.json"
    key = _fingerprint(threads)
    cache = {}
    if path.exists():
        try:
            cache = json.loads(path.read_text())
        except (OSError, ValueError):
            cache = {}
    if not refresh and key in cache:
        return [CodecProfile(**p) for p in cache[key]]
    profiles = calibrate(threads=threads, progress=progress)
    cache[key] = [asdict(p) for p in profiles]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(path)
    return profiles


def advise(link_gbps: float, profiles: list[CodecProfile], nbytes: int = 1 << 30) -> list[Advice]:
    """(codec, engine) pairs ranked by total time to move ``nbytes`` raw bytes over a ``link_gbps`` link."""
    if not link_gbps > 0:
        raise ColonyError(f"link rate must be > 0 Gbit/s, got {link_gbps}")
    link_bps = gbps_to_Bps(link_gbps)
    ranked = []
    for p in profiles:
        s = nbytes / (p.serialize_mbps * 1e6)
        t = nbytes * p.ratio / link_bps
        d = nbytes / (p.deserialize_mbps * 1e6)
        ranked.append(Advice(p.codec, s + t + d, s, t, d, p.engine))
    return sorted(ranked, key=lambda a: a.seconds)
