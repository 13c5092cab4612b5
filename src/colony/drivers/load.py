"""Load a user's file (CSV, Parquet, Arrow IPC) into a running colony as a named table.

The file is streamed in batches (``pyarrow.dataset``; Arrow IPC streams batch by batch),
never read whole, and stored as objects of about ``chunk_rows`` rows under keys
``<table>/<tag>`` in a pool; the device's store builds each object's statistics on put
(the store hook the query service reads), so the table is queryable and priced at once.
``device`` keeps every object on one member of the pool (tags chosen so the pool's
routing sends them there); otherwise the pool's routing spreads them over its members.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.dataset as ds

from colony.errors import DataError

FORMATS = {".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet", ".arrow": "ipc",
           ".feather": "ipc", ".ipc": "ipc", ".arrows": "stream"}
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_TAG = re.compile(r"/(\d+)$")


@dataclass
class LoadReport:
    table: str
    pool: str
    rows: int = 0
    objects: int = 0
    bytes: int = 0
    seconds: float = 0.0
    devices: dict[str, int] = field(default_factory=dict)      # device -> objects stored there
    schema: pa.Schema | None = None

    def to_dict(self) -> dict:
        return {"table": self.table, "pool": self.pool, "rows": self.rows, "objects": self.objects,
                "bytes": self.bytes, "seconds": self.seconds, "devices": self.devices,
                "schema": None if self.schema is None else str(self.schema)}


def file_format(path: str | Path, fmt: str | None = None) -> str:
    """csv | parquet | ipc (Arrow file/Feather) | stream (Arrow IPC stream), from ``fmt`` or the suffix."""
    if fmt:
        if fmt not in ("csv", "parquet", "ipc", "stream"):
            raise DataError(f"unknown format {fmt!r}; use csv, parquet, ipc (Arrow file) or stream (Arrow IPC stream)")
        return fmt
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    for s in reversed(suffixes):
        if s in FORMATS:
            return FORMATS[s]
    raise DataError(f"cannot tell the format of {str(p)!r} from its name; pass --format csv|parquet|ipc|stream")


def read_batches(path: str | Path, fmt: str | None = None, batch_rows: int = 65_536) -> tuple[pa.Schema,
                                                                                                Iterator[pa.RecordBatch]]:
    """The file's schema and an iterator over its record batches (streamed, never all in memory)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"no such file {str(p)!r}; give the path of a CSV, Parquet or Arrow file")
    kind = file_format(p, fmt)
    try:
        if kind == "stream":
            reader = pa.ipc.open_stream(pa.OSFile(str(p), "rb"))
            return reader.schema, iter(reader)
        dataset = ds.dataset(str(p), format="feather" if kind == "ipc" else kind)
        return dataset.schema, iter(dataset.to_batches(batch_size=batch_rows))
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as e:
        raise DataError(f"cannot read {str(p)!r} as {kind}: {str(e).splitlines()[0]}; check the file and --format") \
            from None


def _chunks(batches: Iterator[pa.RecordBatch], schema: pa.Schema, chunk_rows: int,
            chunk_bytes: int) -> Iterator[pa.Table]:
    pending: list[pa.RecordBatch] = []
    rows = nbytes = 0
    try:
        for batch in batches:
            for off in range(0, batch.num_rows, chunk_rows):          # a reader's batch may be larger
                b = batch.slice(off, chunk_rows)
                pending.append(b)
                rows += b.num_rows
                nbytes += b.nbytes
                if rows >= chunk_rows or nbytes >= chunk_bytes:
                    yield pa.Table.from_batches(pending, schema=schema)
                    pending, rows, nbytes = [], 0, 0
    except (pa.ArrowInvalid, pa.ArrowIOError) as e:   # a bad row deep in a CSV surfaces while streaming
        raise DataError(f"cannot read the file past {rows} rows of the current chunk: "
                        f"{str(e).splitlines()[0]}; fix the file or its column types") from None
    if pending:
        yield pa.Table.from_batches(pending, schema=schema)


def existing_objects(colony, pool: str, table: str) -> dict[str, list]:
    """Entries of ``table`` already stored in ``pool``, per device."""
    out: dict[str, list] = {}
    for d in colony.devices():
        if pool in d.pools:
            ents = [e for e in colony.call(d.name, "objects", "entries", pool, f"{table}/") if _TAG.search(e.key)]
            if ents:
                out[d.name] = ents
    return out


def load_file(colony, path: str | Path, pool: str, table: str, device: str | None = None, fmt: str | None = None,
              chunk_rows: int = 1 << 20, chunk_bytes: int = 64 << 20, replace: bool = False,
              schema_of=None) -> LoadReport:
    """Stream ``path`` into ``pool`` as table ``table`` (appends unless ``replace``).

    ``schema_of(table)`` (optional) returns the schema of a table of that name held
    elsewhere (another pool) so one name never means two tables.
    """
    if not _TABLE.match(table):
        raise DataError(f"table name {table!r} is not an SQL identifier; use letters, digits and '_' "
                        "(starting with a letter or '_')")
    members = [d for d in colony.devices() if pool in d.pools]
    if not members:
        pools = sorted({p for d in colony.devices() for p in d.pools})
        raise DataError(f"no device of this colony is a member of pool {pool!r}; pools: {pools}")
    names = [d.name for d in members]
    if device is not None and device not in names:
        raise DataError(f"device {device!r} is not a member of pool {pool!r}; members: {names}")
    if all(d.role == "host" for d in members) or (device and next(d for d in members if d.name == device).role == "host"):
        raise DataError(f"pool {pool!r} on the host: queries run where data is in transit (SmartNICs, CSDs); "
                        "load into a pool of those devices")
    schema, batches = read_batches(path, fmt)
    other = schema_of(table) if schema_of else None
    if other is not None:
        raise DataError(f"a table named {table!r} already lives in pool {other!r}; pick another name")
    old = existing_objects(colony, pool, table)
    if replace:                    # every object of the table, and those reported lost (dropping forgets them)
        for d in members:
            keys = [e.key for e in old.get(d.name, [])] + colony.call(d.name, "objects", "lost", pool, f"{table}/")
            for k in keys:
                colony.call(d.name, "objects", "drop", pool, k)
        old = {}
    if old:
        first = next(iter(old.items()))
        have = colony.call(first[0], "query", "describe", {table: [pool, f"{table}/*"]})[table].get("schema")
        if have and not pa.ipc.read_schema(pa.py_buffer(have)).equals(schema, check_metadata=False):
            raise DataError(f"{str(path)!r} does not have the schema of table {table!r} in pool {pool!r}; "
                            "pass --replace to start the table over, or load into another table")
    tag = 1 + max((int(_TAG.search(e.key).group(1)) for ents in old.values() for e in ents), default=-1)
    rep = LoadReport(table, pool, schema=schema)
    t0 = time.perf_counter()
    for chunk in _chunks(batches, schema, chunk_rows, chunk_bytes):
        for _ in range(1 << 16):                     # TFT: within pool-size steps; hash: a few
            if device is None or colony.owner(pool, f"{table}/{tag:06d}") == device:
                break
            tag += 1
        key = f"{table}/{tag:06d}"
        entry = colony.put(pool, key, chunk)
        owner = colony.owner(pool, key)
        rep.devices[owner] = rep.devices.get(owner, 0) + 1
        rep.rows += chunk.num_rows
        rep.objects += 1
        rep.bytes += entry.nbytes
        tag += 1
    rep.seconds = time.perf_counter() - t0
    if rep.objects == 0:
        raise DataError(f"{str(path)!r} holds no rows; nothing loaded")
    return rep
