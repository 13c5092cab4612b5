"""`colony sift run --input FILE --format ...`: users' own CSV/Parquet files, streamed in chunks
with device memory bounded by spilling (issue 14). Through the real entry point."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from colony.bench.sift_file import write_trackml_csv
from colony.data import iter_particles, load_trackml, sample_path, uniform
from colony.errors import DataError

COLONY = Path(sys.executable).with_name("colony")


def _sift(tmp_path, *args):
    out = tmp_path / "out.json"
    r = subprocess.run([str(COLONY), "sift", "run", *args, "--json", str(out)], capture_output=True, text=True,
                       env={**os.environ, "HOME": str(tmp_path)}, timeout=300)
    return r, (json.loads(out.read_text()) if r.returncode == 0 else None)


def test_larger_than_device_memory_file_streams_through_and_spills(tmp_path):
    f = tmp_path / "hits.csv"
    rows = write_trackml_csv(f, 6 << 20, n_particles=5000, chunk_rows=50_000)
    r, res = _sift(tmp_path, "--input", str(f), "--format", "trackml", "--chunk", "1MiB",
                   "--device-memory", "1MiB", "--threshold-rows", "20000", "--track", "42")
    assert r.returncode == 0, r.stderr
    assert res["rows"] == rows and res["bin_rows_total"] == rows and res["chunks"] > 4
    assert res["spilled_bytes"] > 0                      # devices held more than their memory budget
    full = load_trackml(f)
    assert res["track_rows"] == pc.sum(pc.equal(full["particle_id"], 42)).as_py()


def test_parquet_and_particles_format(tmp_path):
    t = uniform(30_000, seed=3, n_particles=1000)
    f = tmp_path / "p.parquet"
    pq.write_table(t, f, row_group_size=4000)
    r, res = _sift(tmp_path, "--input", str(f), "--format", "particles", "--chunk", "64KiB", "--track", "7")
    assert r.returncode == 0, r.stderr
    assert res["rows"] == 30_000 == res["bin_rows_total"] and res["chunks"] > 1
    assert res["track_rows"] == pc.sum(pc.equal(t["particle_id"], 7)).as_py()


def test_chunks_keep_global_ids_and_match_the_whole_file_loader():
    chunks = list(iter_particles(sample_path("opensky"), "opensky", chunk_bytes=16 << 10))
    assert len(chunks) > 1
    whole = pa.concat_tables(chunks)
    assert whole["id"].to_pylist() == list(range(whole.num_rows))
    from colony.data import load_opensky
    ref = load_opensky()
    assert whole.select(ref.column_names[1:]).equals(ref.select(ref.column_names[1:]))


@pytest.mark.parametrize("args, says", [
    (["--format", "csv2"], "unknown --format 'csv2'"),
    (["--input", "nosuch.csv"], "nosuch.csv does not exist"),
])
def test_bad_input_is_two_lines_exit_2(tmp_path, args, says):
    if "--input" not in args:
        args = ["--input", str(sample_path("ais"))] + args
    r, _ = _sift(tmp_path, *args)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) <= 2


def test_wrong_layout_is_a_data_error(tmp_path):
    f = tmp_path / "ais.csv"
    f.write_bytes(sample_path("ais").read_bytes())
    with pytest.raises(DataError, match="missing columns"):
        list(iter_particles(f, "trackml"))
