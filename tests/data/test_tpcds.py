"""The TPC-DS generator accepts only the pinned DuckDB wheel; its query file is what the
benchmark reads (one statement a line, a family header above each)."""

import os
from importlib import resources

import pytest

from colony.bench.query_families import read_families
from colony.data import tpcds
from colony.errors import DataError


def test_a_cached_wheel_with_another_hash_is_refused_and_removed(tmp_path):
    bad = tmp_path / tpcds.WHEEL
    bad.write_bytes(b"not the release")
    with pytest.raises(DataError, match="pinned"):
        tpcds.generate(0.01, str(tmp_path))
    assert not os.path.exists(bad)


def test_query_file_folds_each_query_to_one_line_under_its_family():
    text = tpcds.query_file(["select 1 -- one\nfrom t;", "with a as (select 2)\n  select * from a"])
    qs = text.splitlines()
    assert qs[2:] == ["-- family: q1", "select 1 from t", "-- family: q2", "with a as (select 2) select * from a"]


def test_the_committed_query_file_holds_the_99_queries():
    path = resources.files("colony.bench") / "queries" / "tpcds" / "queries.sql"
    qs = read_families(str(path))
    assert [q["family"] for q in qs] == [f"q{i}" for i in range(1, 100)]
    assert all(q["sql"].lower().startswith(("select", "with", "(")) for q in qs)
