"""A directory of Parquet tables (one file or folder per table) and a table split into the
parts it is stored as: one reader and one splitter for `colony query --data`, `colony bench
query` and `colony.bench.decision_cpu`."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from colony.data.tables import parts, read_dir
from colony.errors import DataError


def test_files_and_folders_are_tables_by_name(tmp_path):
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "one.parquet")
    (tmp_path / "two").mkdir()
    pq.write_table(pa.table({"b": [3]}), tmp_path / "two" / "p0.parquet")
    pq.write_table(pa.table({"b": [4]}), tmp_path / "two" / "p1.parquet")
    (tmp_path / "notes.txt").write_text("not a table")
    got = read_dir(str(tmp_path))
    assert sorted(got) == ["one", "two"]
    assert got["one"].column("a").to_pylist() == [1, 2]
    assert sorted(got["two"].column("b").to_pylist()) == [3, 4]


def test_a_missing_or_empty_directory_is_refused_by_name(tmp_path):
    with pytest.raises(DataError, match="is not a directory of Parquet"):
        read_dir(str(tmp_path / "nope"))
    with pytest.raises(DataError, match="holds no .parquet files or folders"):
        read_dir(str(tmp_path))


def test_parts_cover_the_table_in_order():
    t = pa.table({"v": np.arange(100_001)})
    ps = parts(t)
    assert len(ps) == 4 and sum(p.num_rows for p in ps) == t.num_rows
    assert pa.concat_tables(ps).equals(t)
    assert len(parts(pa.table({"v": np.arange(99_999)}))) == 1     # a small table stays one object
