"""The job store as a FUSE file system (the BeeOND client's role): plain POSIX tools write
and read checkpoints; the bytes go through :class:`JobStore` and so through the Colony
interface. It uses NESCAFE's FUSE layer (the same ``mfusepy`` binding, probe and mount
conventions: :mod:`colony.drivers.nearstore.fusefs`).

Semantics (checkpoint style, like the seeds' IOR/BeeOND runs): a file is written
sequentially after create/truncate and published atomically when it is closed (flush);
a failed commit makes close() fail with EIO and leaves the previous version. Readers see
only committed files. Directories are implied by the paths ("ckpt/0001").
"""

from __future__ import annotations

import errno
import stat
import threading
import time

from colony.errors import ColonyError, NoSuchFile
from colony.drivers.jobstore.client import JobStore, Writer
from colony.drivers.nearstore.fusefs import binding, fuse_status

__all__ = ["operations_class", "mount", "fuse_status"]


def operations_class():
    """The mfusepy Operations subclass."""
    fuse = binding()

    class JobStoreFS(fuse.Operations):
        use_ns = False

        def __init__(self, js: JobStore) -> None:
            self.js = js
            self.lock = threading.Lock()
            self.writers: dict[int, tuple[str, Writer, list[int]]] = {}   # fh -> (path, writer, [size])
            self.readers: dict[int, tuple[dict, dict]] = {}              # fh -> (manifest, chunk cache)
            self.dirs: set[str] = set()
            self.next_fh = 1
            self.t0 = time.time()

        # -- names -------------------------------------------------------------
        def _names(self) -> list[str]:
            return [m["path"] for m in self.js.list()]

        def _is_dir(self, p: str) -> bool:
            return p == "" or p in self.dirs or any(n.startswith(p + "/") for n in self._names())

        def _attr(self, mode: int, size: int = 0, mtime: float | None = None) -> dict:
            t = mtime or self.t0
            return {"st_mode": mode, "st_nlink": 2 if mode & stat.S_IFDIR else 1, "st_size": size,
                    "st_ctime": t, "st_mtime": t, "st_atime": t}

        def getattr(self, path, fh=None):
            p = path.strip("/")
            with self.lock:
                for wp, _, size in self.writers.values():
                    if wp == p:
                        return self._attr(stat.S_IFREG | 0o644, size[0])
            try:
                m = self.js.stat(p)
                return self._attr(stat.S_IFREG | 0o644, m["size"], m["committed"])
            except NoSuchFile:
                pass
            if self._is_dir(p):
                return self._attr(stat.S_IFDIR | 0o755)
            raise fuse.FuseOSError(errno.ENOENT)

        def readdir(self, path, fh):
            p = path.strip("/")
            pre = p + "/" if p else ""
            kids = {n[len(pre):].split("/")[0] for n in self._names() if n.startswith(pre)}
            kids |= {d[len(pre):].split("/")[0] for d in self.dirs if d.startswith(pre) and d != p}
            return [".", ".."] + sorted(kids)

        def mkdir(self, path, mode):
            self.dirs.add(path.strip("/"))
            return 0

        def rmdir(self, path):
            p = path.strip("/")
            if any(n.startswith(p + "/") for n in self._names()):
                raise fuse.FuseOSError(errno.ENOTEMPTY)
            self.dirs.discard(p)
            return 0

        # -- writing -----------------------------------------------------------
        def _new_fh(self) -> int:
            fh = self.next_fh
            self.next_fh += 1
            return fh

        def create(self, path, mode, fi=None):
            p = path.strip("/")
            try:
                w = self.js.open_write(p)
            except ColonyError:
                raise fuse.FuseOSError(errno.EIO) from None
            with self.lock:
                fh = self._new_fh()
                self.writers[fh] = (p, w, [0])
            return fh

        def open(self, path, flags):
            p = path.strip("/")
            if flags & (0o1 | 0o2):          # O_WRONLY | O_RDWR: a new version, written from the start
                if not flags & 0o1000:       # O_TRUNC: appending or patching a committed file is not supported
                    raise fuse.FuseOSError(errno.EOPNOTSUPP)
                return self.create(path, 0o644)
            try:
                m = self.js.stat(p)
            except NoSuchFile:
                raise fuse.FuseOSError(errno.ENOENT) from None
            with self.lock:
                fh = self._new_fh()
                self.readers[fh] = (m, {})
            return fh

        def truncate(self, path, length, fh=None):
            if length != 0:
                raise fuse.FuseOSError(errno.EOPNOTSUPP)
            return 0

        def write(self, path, data, offset, fh):
            entry = self.writers.get(fh)
            if entry is None:
                raise fuse.FuseOSError(errno.EBADF)
            _, w, size = entry
            if offset != size[0]:
                raise fuse.FuseOSError(errno.EOPNOTSUPP)   # checkpoint files are written in order
            try:
                w.write(bytes(data))
            except ColonyError:
                raise fuse.FuseOSError(errno.EIO) from None
            size[0] += len(data)
            return len(data)

        def flush(self, path, fh):
            entry = self.writers.get(fh)
            if entry is None or entry[1]._done:
                return 0
            try:
                entry[1].commit()          # publish atomically on close
            except ColonyError:
                raise fuse.FuseOSError(errno.EIO) from None
            return 0

        def release(self, path, fh):
            with self.lock:
                entry = self.writers.pop(fh, None)
                self.readers.pop(fh, None)
            if entry is not None and not entry[1]._done:
                entry[1].abort()
            return 0

        # -- reading -----------------------------------------------------------
        def read(self, path, size, offset, fh):
            r = self.readers.get(fh)
            if r is None:
                raise fuse.FuseOSError(errno.EBADF)
            m, cache = r
            cs, end = m["chunk_size"], min(m["size"], offset + size)
            out = bytearray()
            try:
                for i in range(offset // cs, (end - 1) // cs + 1 if end > offset else offset // cs):
                    if i not in cache:
                        cache.clear()                # keep one chunk per descriptor
                        cache[i] = self.js.read_chunk(m, i)
                    buf = memoryview(cache[i])
                    lo, hi = max(offset, i * cs) - i * cs, min(end, (i + 1) * cs) - i * cs
                    out += buf[lo:hi]
            except ColonyError:
                raise fuse.FuseOSError(errno.EIO) from None
            return bytes(out)

        def unlink(self, path):
            try:
                self.js.unlink(path.strip("/"))
            except NoSuchFile:
                raise fuse.FuseOSError(errno.ENOENT) from None
            return 0

    return JobStoreFS, fuse


def mount(js: JobStore, mountpoint: str, foreground: bool = True) -> None:
    """Serve ``js`` at ``mountpoint`` until unmounted (fusermount3 -u MOUNTPOINT)."""
    cls, fuse = operations_class()
    fuse.FUSE(cls(js), mountpoint, foreground=foreground, nothreads=False, ro=False,
              fsname=f"jobstore-{js.job}", default_permissions=False)
