"""Issue 14 (found by tests/fuzz): a size the disk refuses must not poison later allocations."""

import pytest

from colony.errors import BlockRangeError
from colony.nearstore.blockstore import BlockStore


def test_refused_allocation_leaves_the_store_usable(tmp_path):
    bs = BlockStore(tmp_path / "b.blocks", 0)
    with pytest.raises(BlockRangeError, match="cannot allocate"):
        bs.allocate(2 ** 62)
    a = bs.allocate(10)
    assert bs.nblocks == 1 and (tmp_path / "b.blocks").stat().st_size == 4096
    bs.free(a)
    with pytest.raises(BlockRangeError, match="double free"):
        bs.free(a)
    assert bs.allocate(100).block == a.block           # the freed run is reused once
