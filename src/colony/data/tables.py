"""Tables as benchmarks and `colony query --data` load them: a directory with one Parquet file
or folder per table (table name = file name), each table stored as a few parts."""

from __future__ import annotations

import os

import pyarrow as pa

from colony.errors import DataError


def read_dir(path: str) -> dict[str, pa.Table]:
    """Every ``NAME.parquet`` file or ``NAME`` folder of Parquet files under ``path``, by name."""
    import pyarrow.parquet as pq
    if not os.path.isdir(path):
        raise DataError(f"--data {path!r} is not a directory of Parquet files/folders")
    out = {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name.endswith(".parquet") or os.path.isdir(full):
            out[name.removesuffix(".parquet")] = pq.read_table(full)
    if not out:
        raise DataError(f"--data {path!r} holds no .parquet files or folders")
    return out


def parts(t: pa.Table, k: int = 4) -> list[pa.Table]:
    """A table as k objects (1 when small), like a dataset written in parts."""
    k = k if t.num_rows >= 100_000 else 1
    n = t.num_rows
    return [t.slice(i * n // k, (i + 1) * n // k - i * n // k) for i in range(k)]
