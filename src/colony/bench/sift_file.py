"""A TrackML-layout CSV of any size, written in chunks (for `colony sift run --input` at scale)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from colony.data.loaders import TRACKML_LAYOUT


def write_trackml_csv(path: str | Path, target_bytes: int, n_particles: int = 1_000_000, seed: int = 0,
                      chunk_rows: int = 500_000) -> int:
    """Write hits until the file reaches ``target_bytes``; returns the row count."""
    rng = np.random.default_rng(seed)
    path = Path(path)
    rows = 0
    with pa.OSFile(str(path), "wb") as sink:
        writer = None
        while writer is None or sink.tell() < target_bytes:
            n = chunk_rows
            cols = {"hit_id": np.arange(rows + 1, rows + n + 1, dtype=np.uint64),
                    "particle_id": rng.integers(1, n_particles + 1, n, dtype=np.uint64)}
            for c in ("x", "y", "z", "tpx", "tpy", "tpz"):
                cols[c] = np.round(rng.normal(0, 300, n), 3)
            cols["weight"] = np.round(rng.random(n) * 1e-5, 9)
            cols["volume_id"] = rng.integers(7, 19, n, dtype=np.int32)
            t = pa.table(cols).cast(pa.schema(TRACKML_LAYOUT.items()))
            if writer is None:
                writer = pcsv.CSVWriter(sink, t.schema)
            writer.write_table(t)
            rows += n
        writer.close()
    return rows
