"""NESCAFE over FUSE: register mergesort with an xattr, read the file, get sorted data.
Skipped where FUSE is not usable (no /dev/fuse, libfuse3 or the mfusepy binding)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from colony.drivers.nearstore.fusefs import fuse_status, wait_mounted
from colony.nearstore import records as R

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not fuse_status()["usable"], reason="FUSE not usable on this machine")


def test_fuse_mount_sorts_on_read(tmp_path):
    mnt = tmp_path / "mnt"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.Popen([sys.executable, "-m", "colony", "nearstore", "mount", str(mnt), "--devices", "3",
                          "--size", "1MiB", "--seed", "5"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        f = mnt / "records"
        if not wait_mounted(mnt, p):
            p.kill()
            pytest.fail("mount did not come up: " + (p.stdout.read() if p.stdout else ""))
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
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
