"""The ``--data DIR`` layout: one Parquet file per table, table name = file name."""

from __future__ import annotations

import contextlib
import os
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq


def write_tables(directory: str, tables: dict[str, pa.Table]) -> dict[str, str]:
    """``<directory>/<name>.parquet`` for each table; each file written whole or not at all
    (a cut write leaves no half file that a later ``--data`` run would read)."""
    os.makedirs(directory, exist_ok=True)
    out = {}
    for name, t in tables.items():
        out[name] = os.path.join(directory, f"{name}.parquet")
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        os.close(fd)
        try:
            os.chmod(tmp, 0o644)
            pq.write_table(t, tmp)
            os.replace(tmp, out[name])
        except BaseException:          # a failed or interrupted write leaves nothing behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return out
