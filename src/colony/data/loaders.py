"""Map real-world-shaped particle files (CSV or Parquet) to particle tables.

A particle table from a loader has ``id`` (row number), ``time`` and ``particle_id``
(all uint64) first, then every field of the source with its own name and type (a source
field named id, time or particle_id is kept as ``source_<name>``).
Ids that are strings map to uint64 by :func:`stable_id_hash`.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from colony.errors import DataError

# Source layouts (column -> Arrow type). Field counts follow the seeds: TrackML 10 numeric
# fields, OpenSky 16 mixed fields, NOAA AIS 17 mixed fields.
TRACKML_LAYOUT = {
    "hit_id": pa.uint64(), "particle_id": pa.uint64(),
    "x": pa.float64(), "y": pa.float64(), "z": pa.float64(),
    "tpx": pa.float64(), "tpy": pa.float64(), "tpz": pa.float64(),
    "weight": pa.float64(), "volume_id": pa.int32(),
}
OPENSKY_LAYOUT = {
    "time": pa.int64(), "icao24": pa.string(), "lat": pa.float64(), "lon": pa.float64(),
    "velocity": pa.float64(), "heading": pa.float64(), "vertrate": pa.float64(),
    "callsign": pa.string(), "onground": pa.bool_(), "alert": pa.bool_(), "spi": pa.bool_(),
    "squawk": pa.string(), "baroaltitude": pa.float64(), "geoaltitude": pa.float64(),
    "lastposupdate": pa.float64(), "lastcontact": pa.float64(),
}
AIS_LAYOUT = {
    "MMSI": pa.int64(), "BaseDateTime": pa.timestamp("s"), "LAT": pa.float64(),
    "LON": pa.float64(), "SOG": pa.float64(), "COG": pa.float64(), "Heading": pa.float64(),
    "VesselName": pa.string(), "IMO": pa.string(), "CallSign": pa.string(),
    "VesselType": pa.int32(), "Status": pa.int32(), "Length": pa.float64(),
    "Width": pa.float64(), "Draft": pa.float64(), "Cargo": pa.int32(),
    "TransceiverClass": pa.string(),
}

_SAMPLES = {"trackml": "trackml_hits.csv", "opensky": "opensky_states.csv", "ais": "ais_positions.csv"}


def sample_path(kind: str) -> Path:
    """Path of the small generated sample file shipped for ``kind`` (trackml, opensky, ais)."""
    if kind not in _SAMPLES:
        raise DataError(f"unknown sample {kind!r}; choose one of {sorted(_SAMPLES)}")
    return Path(str(resources.files("colony.data") / "samples" / _SAMPLES[kind]))


def stable_id_hash(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Map an id column to uint64, the same on every machine and every run.

    Non-negative integers are kept as they are. Strings map to the first 8 bytes
    (little-endian) of BLAKE2b-64 of their UTF-8 bytes; each distinct string is hashed
    once. Nulls are refused: a particle without an identity cannot be tracked.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count:
        raise DataError(f"id column has {values.null_count} null values; drop or fill them first")
    t = values.type
    if pa.types.is_integer(t):
        if pa.types.is_signed_integer(t) and len(values) and pc.min(values).as_py() < 0:
            raise DataError("id column has negative integers; ids must be >= 0")
        return values.cast(pa.uint64())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        enc = values.dictionary_encode()
        uniq = enc.dictionary.to_pylist()
        hashed = np.fromiter(
            (int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "little")
             for s in uniq), dtype=np.uint64, count=len(uniq))
        return pa.array(hashed).take(enc.indices)
    raise DataError(f"id column has type {t}; use an integer or string column")


def _time_column(col: pa.ChunkedArray) -> pa.Array:
    col = col.combine_chunks()
    if pa.types.is_timestamp(col.type):
        col = col.cast(pa.timestamp("s")).cast(pa.int64())
    if pa.types.is_floating(col.type):
        col = pc.floor(col).cast(pa.int64())
    if col.null_count:
        raise DataError("time column has nulls; particle tracks need a time for every record")
    return col.cast(pa.uint64())


def read_table(path: str | Path, layout: dict[str, pa.DataType] | None = None) -> pa.Table:
    """Read CSV or Parquet; with a layout, CSV columns get exactly those types."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path} does not exist")
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        if layout:
            try:
                table = table.select(list(layout)).cast(pa.schema(layout.items()))
            except (KeyError, pa.ArrowInvalid) as e:
                raise DataError(f"{path}: does not match the expected layout: {e}") from e
    elif path.suffix in (".csv", ".gz"):
        opts = pcsv.ConvertOptions(column_types=layout or {}, strings_can_be_null=True)
        try:
            table = pcsv.read_csv(path, convert_options=opts)
        except pa.ArrowInvalid as e:
            raise DataError(f"{path}: cannot parse as this layout: {e}") from e
    else:
        raise DataError(f"{path}: unknown file type {path.suffix!r}; use .csv or .parquet")
    if layout:
        missing = [c for c in layout if c not in table.column_names]
        if missing:
            raise DataError(f"{path}: missing columns {missing} of the expected layout")
    return table


def to_particles(table: pa.Table, id_column: str, time_column: str | None) -> pa.Table:
    """Prefix a source table with id/time/particle_id columns (see module doc)."""
    for c in (id_column, time_column):
        if c is not None and c not in table.column_names:
            raise DataError(f"column {c!r} not in {table.column_names}")
    n = table.num_rows
    pid = stable_id_hash(table[id_column])
    time = (_time_column(table[time_column]) if time_column
            else pa.array(np.zeros(n, dtype=np.uint64)))
    reserved = ("id", "time", "particle_id")
    names = [f"source_{c}" if c in reserved else c for c in table.column_names]
    arrays = [pa.array(np.arange(n, dtype=np.uint64)), time, pid] + table.columns
    return pa.Table.from_arrays(arrays, names=list(reserved) + names)


def load_trackml(path: str | Path | None = None, id_column: str = "particle_id",
                 time_column: str | None = "hit_id") -> pa.Table:
    """TrackML hits+truth (10 numeric fields). Time is the hit order unless told otherwise."""
    return to_particles(read_table(path or sample_path("trackml"), TRACKML_LAYOUT), id_column, time_column)


def load_opensky(path: str | Path | None = None, id_column: str = "icao24",
                 time_column: str | None = "time") -> pa.Table:
    """OpenSky ADS-B state vectors (16 fields); the icao24 hex string is the particle id."""
    return to_particles(read_table(path or sample_path("opensky"), OPENSKY_LAYOUT), id_column, time_column)


def load_ais(path: str | Path | None = None, id_column: str = "MMSI",
             time_column: str | None = "BaseDateTime") -> pa.Table:
    """NOAA AIS vessel positions (17 fields); the MMSI is the particle id."""
    return to_particles(read_table(path or sample_path("ais"), AIS_LAYOUT), id_column, time_column)


# -- streaming: files larger than memory -------------------------------------------------------
FORMATS = {"trackml": (TRACKML_LAYOUT, "particle_id", "hit_id"),
           "opensky": (OPENSKY_LAYOUT, "icao24", "time"),
           "ais": (AIS_LAYOUT, "MMSI", "BaseDateTime"),
           "particles": (None, None, None)}


CSV_BLOCK = 4 << 20   # pyarrow's CSV reader reads ~25 blocks ahead: 64 MiB blocks held 2 GB (measured)


def iter_batches(path: str | Path, layout: dict[str, pa.DataType] | None = None,
                 chunk_bytes: int = 64 << 20):
    """Record batches of a CSV (optionally .gz) or Parquet file, at most about ``chunk_bytes``
    each, so a file larger than memory streams through (pyarrow's streaming readers)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path} does not exist or is not a file; pass a CSV or Parquet file")
    try:
        if path.suffix == ".parquet":
            pf = pq.ParquetFile(path)
            names = list(layout) if layout else None
            if names:
                missing = [c for c in names if c not in pf.schema_arrow.names]
                if missing:
                    raise DataError(f"{path}: missing columns {missing} of the expected layout")
            md = pf.metadata
            raw = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
            row_bytes = max(8, raw // max(1, md.num_rows))
            for b in pf.iter_batches(batch_size=max(1024, chunk_bytes // row_bytes), columns=names):
                yield b.cast(pa.schema(layout.items())) if layout else b
        elif path.suffix in (".csv", ".gz"):
            stream = pa.input_stream(str(path), compression="detect")
            reader = pcsv.open_csv(stream, read_options=pcsv.ReadOptions(block_size=min(chunk_bytes, CSV_BLOCK)),
                                   convert_options=pcsv.ConvertOptions(column_types=layout or {},
                                                                       strings_can_be_null=True))
            if layout:
                missing = [c for c in layout if c not in reader.schema.names]
                if missing:
                    raise DataError(f"{path}: missing columns {missing} of the expected layout")
            yield from reader
        else:
            raise DataError(f"{path}: unknown file type {path.suffix!r}; use .csv, .csv.gz or .parquet")
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as e:
        raise DataError(f"{path}: cannot read it as this layout: {str(e).splitlines()[0][:300]}") from e


def iter_particles(path: str | Path, fmt: str, chunk_bytes: int = 64 << 20):
    """Particle tables (see the module doc) from a file of format ``fmt``, chunk by chunk.

    ``id`` keeps counting across chunks; ``particles`` files must already have the particle
    schema (id, time, particle_id, x, y, z, vx, vy, vz)."""
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; choose one of {sorted(FORMATS)}")
    layout, id_col, time_col = FORMATS[fmt]
    if fmt == "particles":
        from colony.data.schema import PARTICLE_SCHEMA
        layout = dict(zip(PARTICLE_SCHEMA.names, PARTICLE_SCHEMA.types))
    first = 0
    for t in _chunks(iter_batches(path, layout, chunk_bytes), chunk_bytes):
        if fmt != "particles":
            t = to_particles(t, id_col, time_col)
            t = t.set_column(0, "id", pa.array(np.arange(first, first + t.num_rows, dtype=np.uint64)))
        first += t.num_rows
        yield t


def _chunks(batches, chunk_bytes: int):
    """Tables of consecutive batches, each about ``chunk_bytes`` of Arrow data."""
    held, size = [], 0
    for b in batches:
        held.append(b)
        size += b.nbytes
        if size >= chunk_bytes:
            yield pa.Table.from_batches(held)
            held, size = [], 0
    if held:
        yield pa.Table.from_batches(held)
