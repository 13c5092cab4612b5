"""The ``--data`` layout writer: each table's file whole or not at all."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from colony.data import layout


def test_tables_are_written_one_file_each_and_read_back(tmp_path):
    t = pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]})
    out = layout.write_tables(str(tmp_path), {"one": t, "two": t.slice(1)})
    assert sorted(os.listdir(tmp_path)) == ["one.parquet", "two.parquet"]
    assert pq.read_table(out["two"]).equals(t.slice(1))


def test_a_failed_write_leaves_no_temporary_file_and_keeps_the_old_table(tmp_path, monkeypatch):
    good = pa.table({"a": [1, 2]})
    layout.write_tables(str(tmp_path), {"t": good})

    def cut(table, path):                 # a write that dies halfway (a full disk, a kill)
        with open(path, "wb") as f:
            f.write(b"PAR1 half a file")
        raise OSError("No space left on device")
    monkeypatch.setattr(layout.pq, "write_table", cut)
    with pytest.raises(OSError, match="No space"):
        layout.write_tables(str(tmp_path), {"t": pa.table({"a": [9]})})
    assert os.listdir(tmp_path) == ["t.parquet"]
    assert pq.read_table(tmp_path / "t.parquet").equals(good)
