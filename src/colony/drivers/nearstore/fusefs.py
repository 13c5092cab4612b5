"""NESCAFE as a FUSE file system (optional; needs libfuse 3 and the ``mfusepy`` binding).

Every NESCAFE file appears under the mount point. The thesis registered an operation on
a file descriptor with a custom ioctl; here a standard extended attribute does it, so
plain POSIX tools work:

    setfattr -n user.nescafe.op -v "mergesort mode=d2d" /mnt/nescafe/data
    cat /mnt/nescafe/data > sorted        # the devices sort; the read returns sorted data

Each open() gets its own NESCAFE descriptor carrying the file's registered operation;
the operation runs on the first read of that descriptor (at I/O time).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import threading
import time
from typing import Any

from colony.errors import ColonyError, NearStoreError
from colony.drivers.nearstore.nescafe import Nescafe, NFile

XATTR = "user.nescafe.op"


def parse_op(value: bytes | str) -> tuple[str, dict]:
    """'mergesort mode=d2d' -> ('mergesort', {'mode': 'd2d'})."""
    text = value.decode() if isinstance(value, (bytes, bytearray)) else value
    words = text.split()
    if not words:
        raise NearStoreError(f"{XATTR} needs an operation name, e.g. 'mergesort mode=d2d'")
    params: dict[str, Any] = {}
    for w in words[1:]:
        k, eq, v = w.partition("=")
        if not eq:
            raise NearStoreError(f"{XATTR}: parameter {w!r} must be key=value")
        params[k] = int(v) if v.isdigit() else v
    return words[0], params


def binding():
    """The mfusepy module (imported lazily: the binding is optional); NESCAFE and the job store share it."""
    try:
        import mfusepy
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise NearStoreError("FUSE needs the 'mfusepy' package and libfuse3 "
                             "(apt-get install fuse3; pip install mfusepy)") from e
    return mfusepy


def wait_mounted(mountpoint, proc, timeout_s: float = 20.0) -> bool:
    """Wait until ``mountpoint`` is mounted or the serving process ``proc`` exits."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        if os.path.ismount(mountpoint):
            return True
        time.sleep(0.05)
    return os.path.ismount(mountpoint)


def operations_class():
    """Build the mfusepy Operations subclass."""
    fuse = binding()

    class NescafeFS(fuse.Operations):
        use_ns = False

        def __init__(self, fs: Nescafe) -> None:
            self.fs = fs
            self.ops: dict[str, tuple[str, dict]] = {}
            self.fds: dict[int, NFile] = {}
            self.next_fd = 1
            self.lock = threading.Lock()
            self.t0 = time.time()

        def _name(self, path: str) -> str:
            name = path.lstrip("/")
            if name not in self.fs.files:
                raise fuse.FuseOSError(errno.ENOENT)
            return name

        def getattr(self, path, fh=None):
            now = self.t0
            if path == "/":
                return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2, "st_size": 0,
                        "st_ctime": now, "st_mtime": now, "st_atime": now}
            name = self._name(path)
            size = sum(e.nbytes for e in self.fs.files[name])
            return {"st_mode": stat.S_IFREG | 0o444, "st_nlink": 1, "st_size": size,
                    "st_ctime": now, "st_mtime": now, "st_atime": now}

        def readdir(self, path, fh):
            return [".", ".."] + sorted(self.fs.files)

        def open(self, path, flags):
            name = self._name(path)
            f = self.fs.open(name)
            if name in self.ops:
                op, params = self.ops[name]
                f.register(op, **params)
            with self.lock:
                fd = self.next_fd
                self.next_fd += 1
                self.fds[fd] = f
            return fd

        def read(self, path, size, offset, fh):
            f = self.fds.get(fh)
            if f is None:
                raise fuse.FuseOSError(errno.EBADF)
            try:
                with self.lock:        # one descriptor: its offload runs once, reads in order
                    f.seek(offset)
                    return f.read(size)
            except ColonyError:
                raise fuse.FuseOSError(errno.EIO) from None

        def release(self, path, fh):
            f = self.fds.pop(fh, None)
            if f is not None:
                f.close()
            return 0

        def getxattr(self, path, name, position=0):
            fname = self._name(path)
            if name != XATTR or fname not in self.ops:
                raise fuse.FuseOSError(errno.ENODATA)
            op, params = self.ops[fname]
            return " ".join([op] + [f"{k}={v}" for k, v in params.items()]).encode()

        def listxattr(self, path):
            return [XATTR] if self._name(path) in self.ops else []

        def setxattr(self, path, name, value, options, position=0):
            fname = self._name(path)
            if name != XATTR:
                raise fuse.FuseOSError(errno.ENOTSUP)
            try:
                op, params = parse_op(value)
                probe = self.fs.open(fname)
                probe.register(op, **params)          # validates the operation name now
            except ColonyError:
                raise fuse.FuseOSError(errno.EINVAL) from None
            self.ops[fname] = (op, params)
            return 0

        def removexattr(self, path, name):
            self.ops.pop(self._name(path), None)
            return 0

    return NescafeFS, fuse


def mount(fs: Nescafe, mountpoint: str, foreground: bool = True) -> None:
    """Serve ``fs`` at ``mountpoint`` until unmounted (fusermount3 -u MOUNTPOINT)."""
    cls, fuse = operations_class()
    fuse.FUSE(cls(fs), mountpoint, foreground=foreground, nothreads=False, ro=False,
              fsname="nescafe", default_permissions=False)


def fuse_status() -> dict:
    """Is a FUSE mount possible here? (device node, kernel support, a Python binding, libfuse)."""
    import ctypes.util
    import importlib.util
    out = {"dev_fuse": os.path.exists("/dev/fuse"),
           "kernel_fuse": False,
           "bindings": {m: importlib.util.find_spec(m) is not None for m in ("pyfuse3", "fuse", "mfusepy", "llfuse")},
           "libfuse": ctypes.util.find_library("fuse3") or ctypes.util.find_library("fuse"),
           "fusermount": shutil.which("fusermount3") or shutil.which("fusermount")}
    try:
        out["kernel_fuse"] = "fuse" in open("/proc/filesystems").read()
    except OSError:
        pass
    out["usable"] = bool(out["dev_fuse"] and out["kernel_fuse"] and any(out["bindings"].values())
                         and out["libfuse"])
    return out
