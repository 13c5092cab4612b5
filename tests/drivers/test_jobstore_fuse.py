"""The job store through a FUSE mount (`colony jobstore mount --local 3`): plain file writes
are striped, published on close and read back byte for byte. Skipped where FUSE is not
usable (then the API round trip in test_jobstore.py is the only one)."""

import os

import pytest

from colony.drivers.nearstore.fusefs import fuse_status

pytestmark = pytest.mark.skipif(not fuse_status()["usable"], reason="FUSE not usable on this machine")


def test_fuse_round_trip_publishes_on_close(tmp_path, colony_mount):
    mnt = tmp_path / "mnt"
    colony_mount(mnt, "jobstore", "mount", str(mnt), "--job", "fusejob", "--local", "3", "--chunk-size", "65536")
    data = os.urandom(300_000)                       # 5 chunks over 3 devices
    (mnt / "ckpt").mkdir()
    f = mnt / "ckpt" / "rank0"
    with open(f, "wb") as fh:
        fh.write(data[:100_000])
        fh.write(data[100_000:])
        fh.flush()
    assert f.stat().st_size == len(data)
    assert f.read_bytes() == data
    with open(f, "rb") as fh:                        # a read in the middle of a chunk
        fh.seek(70_000)
        assert fh.read(1000) == data[70_000:71_000]
    f.write_bytes(b"v2" * 10)                        # a new version replaces the old on close
    assert f.read_bytes() == b"v2" * 10
    assert os.listdir(mnt) == ["ckpt"] and os.listdir(mnt / "ckpt") == ["rank0"]
    with pytest.raises(OSError):
        with open(f, "r+b") as fh:                   # patching a committed checkpoint: not supported
            fh.write(b"x")
    os.remove(f)
    assert not f.exists()
