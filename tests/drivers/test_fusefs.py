"""NESCAFE over FUSE: register mergesort with an xattr, read the file, get sorted data.
Skipped where FUSE is not usable (no /dev/fuse, libfuse3 or the mfusepy binding)."""

import os

import pytest

from colony.drivers.nearstore.fusefs import fuse_status
from colony.nearstore import records as R

pytestmark = pytest.mark.skipif(not fuse_status()["usable"], reason="FUSE not usable on this machine")


def test_fuse_mount_sorts_on_read(tmp_path, colony_mount):
    mnt = tmp_path / "mnt"
    colony_mount(mnt, "nearstore", "mount", str(mnt), "--devices", "3", "--size", "1MiB", "--seed", "5")
    f = mnt / "records"
    data = R.generate((1 << 20) // 100, seed=5)
    assert f.stat().st_size == len(data)
    assert f.read_bytes() == data                       # no operation: the file as written
    os.setxattr(f, "user.nescafe.op", b"mergesort mode=d2d")
    assert os.getxattr(f, "user.nescafe.op") == b"mergesort mode=d2d"
    assert f.read_bytes() == R.host_sort(data)          # sorted on the devices at read time
    os.setxattr(f, "user.nescafe.op", b"mergesort mode=host")
    assert f.read_bytes() == R.host_sort(data)
    with pytest.raises(OSError):
        os.setxattr(f, "user.nescafe.op", b"nosuchop")
