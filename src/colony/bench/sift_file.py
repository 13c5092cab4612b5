"""`colony sift run --input` at scale (``python -m colony.bench.sift_file`` -> bench/results/sift_file.json).

Each run is a fresh `colony` process (the real entry point); its peak RSS comes from the
kernel (wait4 ru_maxrss). Same settings for both sizes: bounded memory means the peak does
not grow with the file. The CSVs are generated under /tmp (never committed) and reused."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from colony.bench.common import spread
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

COLONY = str(Path(sys.executable).with_name("colony"))
SIZES = {"0.5GB": 500_000_000, "2GB": 2_000_000_000}
ARGS = ["--format", "trackml", "--device-memory", "128MiB", "--chunk", "64MiB", "--devices", "4"]



def one(path: Path) -> dict:
    out = Path(tempfile.mktemp(suffix=".json"))
    t0 = time.perf_counter()
    pid = os.spawnv(os.P_NOWAIT, COLONY, [COLONY, "sift", "run", "--input", str(path), *ARGS, "--json", str(out)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    assert os.waitstatus_to_exitcode(status) == 0
    res = json.loads(out.read_text())
    out.unlink()
    return {"wall_s": wall, "peak_rss_bytes": ru.ru_maxrss * 1024, "rows": res["rows"],
            "bin_rows_total": res["bin_rows_total"], "spilled_bytes": res["spilled_bytes"],
            "file_bytes": res["file_bytes"], "chunks": res["chunks"]}




if __name__ == "__main__":
    from colony.bench.common import entry, write_json
    entry("colony.bench.sift_file", __doc__)
    from colony.machine import describe
    repeats = int(os.environ.get("REPEATS", 3))
    files = {}
    for name, size in SIZES.items():
        p = Path(f"/tmp/colony-sift-bench-{name}.csv")
        if not p.exists() or p.stat().st_size < size:
            write_trackml_csv(p, size, n_particles=2_000_000)
        files[name] = p
    runs = {name: [] for name in files}
    for _ in range(repeats):                 # interleaved sizes
        for name, p in files.items():
            runs[name].append(one(p))
    res = {"machine": describe(), "args": ARGS, "runs": runs,
           "summary": {name: {"file_bytes": rs[0]["file_bytes"], "rows": rs[0]["rows"],
                              "peak_rss_mib": spread([r["peak_rss_bytes"] / 2**20 for r in rs]),
                              "wall_s": spread([r["wall_s"] for r in rs]),
                              "rows_per_s_median": rs[0]["rows"] / statistics.median(r["wall_s"] for r in rs),
                              "spilled_mib": rs[0]["spilled_bytes"] / 2**20,
                              "all_rows_placed": all(r["rows"] == r["bin_rows_total"] for r in rs)}
                       for name, rs in runs.items()}}
    write_json("bench/results/sift_file.json", res)
    print(json.dumps(res["summary"], indent=1))
