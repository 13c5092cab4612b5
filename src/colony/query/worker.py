"""Query execution in a worker process that is killed at its deadline.

datafusion-python checks for interrupts only on the main thread (datafusion-python issue
1141) and device queries run in service threads, so a deadline checked between output
batches cannot stop an aggregate or a join that emits nothing until it is done. Here each
query runs in a child process (``python -m colony.query.worker``): the caller waits for
the answer until the deadline and then kills the child, so the work provably stops (the
process is gone, its CPU is free) and the next query gets a fresh worker. A query run
with a ``query_id`` is stopped the same way when its client cancels it (:meth:`WorkerPool.cancel`).

Objects cross into the worker through shared-memory files (``/dev/shm``): the parent
copies a query's stored Colony objects into one file and the worker maps it and decodes
them zero-copy. The file is kept (LRU, bounded bytes) while the same objects are queried
again, holding references to them so their addresses, the cache key, stay theirs. The
result comes back the same way, one Colony object in a file, capped by the result limit.
File names carry the owning process's pid, so a pool sweeps the files of owners that died
without cleaning up (a SIGKILLed device). Typed errors raised in the worker are raised again, with their class, here.
"""

from __future__ import annotations

import gc
import os
import pickle
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
import time
import uuid
import weakref
from collections import Counter, OrderedDict

import pyarrow as pa

from colony import errors as _errors
from colony.errors import ColonyError, QueryCancelled, QueryError, QueryTimeout

_LEN = struct.Struct("<Q")
_ALIGN = 64
_SHM = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class WorkerDied(QueryError):
    """The query worker process exited without an answer (killed by the OS, out of memory)."""


def _send(f, obj) -> None:
    data = pickle.dumps(obj, protocol=5)
    f.write(_LEN.pack(len(data)) + data)
    f.flush()


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    out = bytearray()
    while len(out) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(n - len(out), 1 << 20))
        if not chunk:
            raise EOFError
        out += chunk
    return bytes(out)


def _recv(fd: int, deadline: float | None):
    (n,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    return pickle.loads(_read_exact(fd, n, deadline))


class _Proc:
    """One worker process, ready once it has said so (its first message, after its imports)."""

    def __init__(self) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "colony.query.worker"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        self.ready = False

    @property
    def pid(self) -> int:
        return self.p.pid

    def kill(self) -> None:
        try:
            self.p.kill()
        except ProcessLookupError:
            pass
        self.p.wait()
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except OSError:
                pass


class CancelledIds:
    """Query ids cancelled lately (the last ``keep``), thread-safe. A cancel may overtake its
    request, so an id is refused from then on; bounded, so a long-lived device or client
    forgets old ones. One mechanism for the client, the query service and the worker pool."""

    def __init__(self, keep: int = 4096) -> None:
        self.keep = keep
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, query_id: str) -> None:
        with self._lock:
            self._ids[query_id] = None
            while len(self._ids) > self.keep:
                self._ids.popitem(last=False)

    def __contains__(self, query_id: str | None) -> bool:
        with self._lock:
            return query_id is not None and query_id in self._ids


# Workers die with the thread that started them (PR_SET_PDEATHSIG fires when the parent
# *thread* exits), so every worker is started by this one long-lived thread: a worker started
# by a short-lived caller thread (a warm-up thread, a client's thread) was killed as soon as
# that thread ended, while idle or while serving another query.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="colony-query-worker-spawn")


def _spawn() -> _Proc:
    return _SPAWNER.submit(_Proc).result()


class WorkerPool:
    """Worker processes for one device's queries: one per query running, idle ones kept warm.

    ``run`` executes a Substrait plan over named tables given as lists of Colony object
    buffers. At the deadline the worker is killed and :class:`QueryTimeout` (a
    :class:`DeadlineExceeded`) is raised; a replacement is started in the background.

    ``max_live`` bounds the workers running at once (None: one per query in flight); a run
    beyond it waits, within its deadline, for a worker to come back. Starting a worker costs
    a Python process with pyarrow and DataFusion imported, so without the bound a burst of
    concurrent queries spends the device's CPU on starting processes that are dropped again
    (only ``keep`` idle ones are kept).
    """

    def __init__(self, keep: int = 1, prestart: bool = True, cache_bytes: int = 1 << 30,
                 max_live: int | None = None) -> None:
        self.keep = max(1, keep)
        self.max_live = None if max_live is None else max(1, int(max_live))
        self.cache_bytes = cache_bytes
        self._idle: list[_Proc] = []
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)      # a worker came back (or a run was cancelled)
        self._busy = 0                                       # workers taken by runs now
        self.waited: list[float] = []                        # seconds runs waited for a worker (last 256)
        self.starts: list[float] = []                        # seconds fresh workers took to start (last 16)
        self._files: OrderedDict[tuple, tuple[str, list, list, int]] = OrderedDict()   # key -> path, spans, refs, n
        self._pins: Counter = Counter()                      # key -> runs using its file now
        # /dev/shm outlives the process: cached files and idle workers go with the pool or at exit
        self._finalizer = weakref.finalize(self, _cleanup, self._files, self._idle, self._lock)
        self.killed: list[int] = []           # pids stopped at a deadline
        self.live: set[int] = set()
        self.cancelled: list[dict] = []       # {"query_id", "pid"}: workers stopped by a cancel (last 256)
        self.running: dict[str, set[_Proc]] = {}       # query id -> its workers now
        self._cancel_ids = CancelledIds()       # refused from then on
        self.swept = sweep_dead_owners()
        if prestart:
            self._warm()

    def _warm(self) -> None:
        def start():
            w = _spawn()
            with self._lock:
                if len(self._idle) < self.keep:
                    self._idle.append(w)
                    return
            w.kill()
        threading.Thread(target=start, daemon=True, name="colony-query-worker-start").start()

    def _take(self, deadline: float | None = None, query_id: str | None = None) -> _Proc:
        t0 = time.monotonic()
        with self._freed:
            while self.max_live is not None and self._busy >= self.max_live:
                if query_id in self._cancel_ids:
                    raise QueryCancelled(f"query {query_id} was cancelled by its client while it waited for a worker")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise QueryTimeout(f"query waited {time.monotonic() - t0:.2f} s for one of the device's "
                                       f"{self.max_live} query workers and reached its deadline; retry later or "
                                       "raise the timeout")
                self._freed.wait(left)
            self._busy += 1
            if self.max_live is not None:
                self.waited = (self.waited + [time.monotonic() - t0])[-256:]
            while self._idle:
                w = self._idle.pop()
                if w.p.poll() is None:
                    self.live.add(w.pid)
                    return w
        try:
            w = _spawn()
        except BaseException:
            self._release()
            raise
        with self._lock:
            self.live.add(w.pid)
        return w

    def _release(self, w: _Proc | None = None) -> None:
        """A taken worker is done: free its slot (and its pid)."""
        with self._freed:
            self._busy -= 1
            if w is not None:
                self.live.discard(w.pid)
            self._freed.notify()

    def _give_back(self, w: _Proc) -> None:
        with self._freed:                  # idle before the slot frees: a waiter takes this worker
            kept = len(self._idle) < self.keep and w.p.poll() is None
            if kept:
                self._idle.append(w)
            self._busy -= 1
            self.live.discard(w.pid)
            self._freed.notify()
        if not kept:
            w.kill()

    def _retire(self, w: _Proc) -> None:
        """Kill a taken worker (deadline, cancel, death) and start a replacement."""
        w.kill()
        self._release(w)
        self._warm()

    def cancel(self, query_id: str) -> list[int]:
        """Stop the query's workers now (SIGKILL; its ``run`` raises :class:`QueryCancelled`)
        and refuse it from here on. Returns the pids killed."""
        with self._lock:
            self._cancel_ids.add(query_id)
            procs = list(self.running.get(query_id, ()))
            self._freed.notify_all()                  # a run waiting for a worker sees it
        for w in procs:        # the run's own thread reaps it and closes its pipes on EOF
            try:
                w.p.kill()
            except ProcessLookupError:
                pass
        return [w.pid for w in procs]

    def _unregister_locked(self, query_id: str, w: _Proc) -> None:
        """``w`` no longer runs ``query_id`` (call with the lock held; idempotent)."""
        ws = self.running.get(query_id)
        if ws is not None:
            ws.discard(w)
            if not ws:
                del self.running[query_id]

    def _ready(self, w: _Proc, deadline: float | None) -> float | None:
        """Wait for a taken worker's ready message if it has not sent it yet: the seconds that
        took (its start, recorded in :attr:`starts`), or None for a worker already ready."""
        if w.ready:
            return None
        ts = time.monotonic()
        if _recv(w.p.stdout.fileno(), deadline) != ("ready",):
            raise EOFError
        w.ready = True
        started = time.monotonic() - ts
        with self._lock:
            self.starts = (self.starts + [started])[-16:]
        return started

    def prepare(self, timeout_s: float = 60.0) -> float:
        """Have a worker idle and ready, started now if none is (a run after this does not
        wait for one to start unless all are taken): the seconds it took."""
        t0 = time.monotonic()
        w = self._take(t0 + timeout_s)
        try:
            self._ready(w, t0 + timeout_s)
        except TimeoutError:
            self._retire(w)
            raise QueryTimeout(f"a query worker did not start within {timeout_s:.0f} s") from None
        except (EOFError, OSError):
            self._retire(w)
            raise WorkerDied(f"query worker pid {w.pid} exited (code {w.p.poll()}) while starting") from None
        self._give_back(w)
        return time.monotonic() - t0

    def adopt(self, src: "WorkerPool | None") -> bool:
        """Take one idle worker of ``src`` (another pool of this device's: its calibration's)
        where this pool has room to keep it: one start serves both. A worker holds nothing of
        its pool's (it maps files by their unique names), so it may change pools."""
        if src is None or src is self:
            return False
        with src._lock:
            w = next((x for x in src._idle if x.p.poll() is None), None)
            if w is not None:
                src._idle.remove(w)
        if w is None:
            return False
        with self._freed:
            kept = len(self._idle) < self.keep
            if kept:
                self._idle.append(w)
                self._freed.notify()
        if not kept:
            w.kill()
        return kept

    def cold(self) -> bool:
        """Whether a run now would start a worker process: none idle, and a slot free (all
        taken, it waits for one to come back instead)."""
        with self._lock:
            return not self._idle and (self.max_live is None or self._busy < self.max_live)

    def start_s(self) -> float | None:
        """Median seconds this pool's fresh workers took to start (None before the first)."""
        with self._lock:
            xs = sorted(self.starts)
        return xs[len(xs) // 2] if xs else None

    def state(self) -> dict:
        """live and deadline-killed pids, pids per running query id, cancel-stopped workers,
        the bound on workers at once and how long recent runs waited for one."""
        with self._lock:
            return {"live": sorted(self.live), "killed": list(self.killed), "cancelled": list(self.cancelled),
                    "running": {q: sorted(w.pid for w in ws) for q, ws in self.running.items()},
                    "max_live": self.max_live, "waited_s": list(self.waited)}

    def is_cancelled(self, query_id: str | None) -> bool:
        return query_id in self._cancel_ids

    def _objects_files(self, tables: dict[str, list], cache: bool) -> tuple[dict[str, tuple], list[str], list]:
        """Each table's objects in a shared-memory file of its own, reused while cached:
        ({table: (path, spans, cached)}, temporary paths to delete after the run, the cached
        files' keys, pinned until :meth:`_unpin`). A table with no objects has no file (path
        None). A pinned file is never evicted, so a run's files stay while it runs, whatever
        other runs add; a file that does not fit beside the pinned ones is temporary.

        One file per table, not per set of tables a query reads: with a file per set, every
        query over a new combination of tables copied, mapped and decoded all of them again
        (TPC-DS SF 0.1 on one thread: first runs 2-10x the repeats, ~1 ms a MB)."""
        out: dict[str, tuple] = {}
        temps: list[str] = []
        pinned: list = []
        for name, bl in tables.items():
            bufs = [b if isinstance(b, pa.Buffer) else pa.py_buffer(b) for b in bl]
            if not bufs:
                out[name] = (None, [], False)
                continue
            key = tuple((b.address, b.size) for b in bufs)
            with self._lock:
                hit = self._files.get(key) if cache else None
                if hit is not None:
                    self._files.move_to_end(key)
                    self._pins[key] += 1
                    pinned.append(key)
                    out[name] = (hit[0], hit[1], True)
                    continue
            # a fresh name per file: the worker caches decoded files by name, so names are never reused
            fd, path = tempfile.mkstemp(prefix=f"colony-query-{os.getpid()}-{uuid.uuid4().hex}-", suffix=".objs",
                                        dir=_SHM)
            spans, pos = [], 0
            with os.fdopen(fd, "wb") as f:
                for b in bufs:
                    pad = -pos % _ALIGN
                    f.write(bytes(pad))
                    pos += pad
                    spans.append((pos, f.write(memoryview(b))))
                    pos += b.size
            if not cache or pos > self.cache_bytes:
                temps.append(path)
                out[name] = (path, spans, False)
                continue
            with self._lock:
                total = pos + sum(v[3] for v in self._files.values())
                for k in [k for k in self._files if not self._pins[k]]:      # least recently used first
                    if total <= self.cache_bytes:
                        break
                    old, _, _, n = self._files.pop(k)
                    del self._pins[k]
                    os.unlink(old)
                    total -= n
                fits = total <= self.cache_bytes and key not in self._files
                if fits:
                    self._files[key] = (path, spans, bufs, pos)   # refs keep the buffers, so their addresses
                    self._pins[key] += 1
                    pinned.append(key)
            if not fits:
                temps.append(path)
            out[name] = (path, spans, fits)
        return out, temps, pinned

    def _unpin(self, pinned: list) -> None:
        with self._lock:
            for key in pinned:
                self._pins[key] -= 1

    def run(self, plan_bytes: bytes, tables: dict[str, list], *, threads: int, memory_limit: int | None,
            max_result_bytes: int | None, timeout_s: float | None, cache: bool = False,
            query_id: str | None = None, timing: dict | None = None) -> pa.Buffer:
        """The result as one packed Colony object (decode it with ``codec.unpack_one``).

        ``cache``: the buffers are immutable stored objects likely queried again (keep their file).
        ``query_id``: what :meth:`cancel` names to stop it. ``timing`` gets ``wait_s``, the
        seconds spent waiting for a worker (queueing, not execution), and ``start_s``, the
        seconds spent waiting for a freshly started worker to finish its imports (~1 s here: a
        one-off, not execution; timed as execution, the first query on a device taught its
        online corrections a 40-100x miss, and the next queries were priced up to 1.9x high)."""
        t0 = time.monotonic()
        deadline = None if timeout_s is None else t0 + float(timeout_s)
        if self.is_cancelled(query_id):
            raise QueryCancelled(f"query {query_id} was cancelled by its client before it ran")
        files, temporary, pinned = self._objects_files(tables, cache)
        result_path = os.path.join(_SHM or tempfile.gettempdir(), f"colony-result-{os.getpid()}-{uuid.uuid4().hex}.clny")
        try:
            reply = None
            tw = time.monotonic()
            w = self._take(deadline, query_id)
            if timing is not None:
                timing["wait_s"] = time.monotonic() - tw
            try:
                if query_id is not None:     # inside the try: an interrupt here still unregisters it
                    with self._lock:
                        refused = query_id in self._cancel_ids
                        if not refused:
                            self.running.setdefault(query_id, set()).add(w)
                    if refused:
                        raise QueryCancelled(f"query {query_id} was cancelled by its client before it ran")
                started = self._ready(w, deadline)       # a fresh worker: its imports are not this query's time
                if started is not None and timing is not None:
                    timing["start_s"] = started
                _send(w.p.stdin, {"tables": files, "plan": bytes(plan_bytes), "threads": threads,
                                  "memory_limit": memory_limit, "max_result_bytes": max_result_bytes,
                                  "cache_bytes": self.cache_bytes, "result": result_path})
                reply = _recv(w.p.stdout.fileno(), deadline)
            except TimeoutError:
                with self._lock:
                    self.killed.append(w.pid)
                self._retire(w)
                raise QueryTimeout(f"query ran past the device's deadline of {timeout_s:.2f} s and was stopped "
                                   f"(worker pid {w.pid} killed after {time.monotonic() - t0:.2f} s); "
                                   "narrow it or raise the timeout") from None
            except (EOFError, BrokenPipeError, OSError) as e:
                code = w.p.poll()
                with self._lock:
                    stopped = query_id is not None and w in self.running.get(query_id, ()) \
                        and query_id in self._cancel_ids
                self._retire(w)                  # reaped before it shows as cancelled
                if stopped:
                    with self._lock:             # one step: no reader sees it cancelled and still running
                        self._unregister_locked(query_id, w)
                        self.cancelled = (self.cancelled + [{"query_id": query_id, "pid": w.pid}])[-256:]
                    raise QueryCancelled(f"query {query_id} was cancelled by its client; its worker pid {w.pid} "
                                         f"was stopped after {time.monotonic() - t0:.2f} s") from None
                raise WorkerDied(f"query worker pid {w.pid} exited (code {code}, {type(e).__name__}) before "
                                 "answering; the device may be out of memory; retry or lower the query's size") \
                    from None
            except BaseException:            # interrupted here (Ctrl-C in-process): the worker goes too
                self._retire(w)
                raise
            finally:
                if query_id is not None:
                    with self._lock:
                        self._unregister_locked(query_id, w)
            if self.is_cancelled(query_id):     # a cancel may have signalled it as it answered
                self._retire(w)
            else:
                self._give_back(w)
        finally:
            self._unpin(pinned)
            for path in temporary:
                os.unlink(path)
            if reply is None or reply[0] != "ok":
                try:                             # a worker killed mid-write may have left it
                    os.unlink(result_path)
                except FileNotFoundError:
                    pass
        if reply[0] == "ok":
            with pa.memory_map(result_path, "r") as f:
                out = f.read_buffer()
            os.unlink(result_path)               # the mapping stays valid
            return out
        _, cls_name, msg = reply
        cls = getattr(_errors, cls_name, None)
        if not (isinstance(cls, type) and issubclass(cls, ColonyError)):
            cls, msg = QueryError, f"query failed on the device: {cls_name}: {msg}"
        raise cls(msg)

    def close(self) -> None:
        self._finalizer()


_OWNED = re.compile(r"^colony-(?:query|result)-(\d+)-")


def sweep_dead_owners(directory: str | None = None) -> int:
    """Delete the shared-memory files of owner processes that are gone; returns how many.

    /dev/shm is memory: files a SIGKILLed device never unlinked would hold it until reboot.
    """
    directory = directory or _SHM or tempfile.gettempdir()
    n = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        m = _OWNED.match(name)
        if not m or _alive(int(m.group(1))):
            continue
        try:
            os.unlink(os.path.join(directory, name))
            n += 1
        except OSError:
            pass
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cleanup(files: OrderedDict, idle: list, lock: threading.Lock) -> None:
    with lock:
        paths = [v[0] for v in files.values()]
        workers = list(idle)
        files.clear()
        idle.clear()
    for w in workers:
        w.kill()
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


class _Tables:
    """A worker's decoded table files (zero-copy over their mappings), kept while their bytes
    fit the pool's cache, and its DataFusion contexts (one per thread budget and memory
    limit), each with the file every table name is registered from. A table is registered
    once, when a plan first names it, and again only when the name comes with another file
    (its objects changed): registering is not free (importing a 150k-row TPC-H lineitem
    object cost ~2.7 ms, most of a 10 ms query), and a split's cuts each read one table of
    the several the query was given. The plan's table names are in its Substrait bytes as
    UTF-8, so a name absent from the bytes is never read; a name that only appears inside
    another string is registered needlessly, never missed."""

    def __init__(self) -> None:
        self.files: OrderedDict[str, tuple[list, int]] = OrderedDict()     # path -> decoded parts, bytes
        self.contexts: dict[tuple, tuple] = {}                             # (threads, limit) -> ctx, {name: path}

    def _parts(self, path: str | None, spans: list, cached: bool, budget: int, keep: set) -> list:
        """The decoded objects of one file; a cached one is kept, evicting the least recently
        used beyond ``budget`` bytes (never those in ``keep``, the files of the run at hand)."""
        from colony import codec
        if path is None:
            return []
        hit = self.files.get(path)
        if hit is not None:
            self.files.move_to_end(path)
            return hit[0]
        with pa.memory_map(path, "r") as f:
            whole = f.read_buffer()
        parts = [codec.unpack(whole.slice(o, n), verify=False) for o, n in spans]
        if cached:
            self.files[path] = (parts, sum(n for _, n in spans))
            total = sum(v[1] for v in self.files.values())
            for old in [k for k in self.files if k not in keep]:        # oldest first
                if total <= budget:
                    break
                total -= self.files.pop(old)[1]
                self._forget(old)
        return parts

    def _forget(self, path: str | None) -> None:
        """Unregister every table registered from ``path`` (evicted, or one run's only)."""
        for ctx, bound in self.contexts.values():
            for name in [k for k, v in bound.items() if v == path]:
                ctx.deregister_table(name)
                del bound[name]

    def context(self, req: dict):
        """The context for ``req``'s thread budget and memory limit, with every table its plan
        names registered from the file ``req`` gives."""
        from colony.query import plan as qplan
        key = (req["threads"], req["memory_limit"])
        if key not in self.contexts:
            self.contexts[key] = (qplan.execution_context(req["threads"], req["memory_limit"]), {})
        ctx, bound = self.contexts[key]
        keep = {t[0] for t in req["tables"].values()}
        for name, (path, spans, cached) in req["tables"].items():
            if name.encode() not in req["plan"] or (name in bound and bound[name] == path and cached):
                continue
            parts = self._parts(path, spans, cached, req["cache_bytes"], keep)
            if name in bound:
                ctx.deregister_table(name)
                del bound[name]
            schema = parts[0][0].schema if parts and parts[0] else None
            qplan.register(ctx, name, parts, schema, max_partitions=req["threads"])
            bound[name] = path
        return ctx

    def done(self, req: dict) -> None:
        """After a run: tables whose file is not kept (a temporary one, or none) unregistered."""
        for name, (path, _, cached) in req["tables"].items():
            if not cached:
                self._forget(path)


def _serve() -> None:
    """Worker main: answer requests on stdin until it closes; die with the parent."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)     # Linux: SIGKILL this worker when its parent (the device) dies
        # No transparent huge pages here (PR_SET_THP_DISABLE): a worker allocates and frees a
        # query's batches at a high rate, and with the kernel's THP on `madvise` every range the
        # allocator purged came back as whole 2 MiB pages, each zeroed first; 1M-row push-down
        # queries ran ~12 % faster without (docs/runtime.md, "Process settings").
        libc.prctl(41, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    out = os.fdopen(os.dup(1), "wb")          # the protocol's own stdout; stray prints go to stderr
    os.dup2(2, 1)
    from colony import codec
    from colony.query import plan as qplan
    # imports done: DataFusion's and pyarrow's objects are never garbage; frozen, a full
    # collection does not walk them (~40 ms here) mid-query (colony.runtime.process)
    gc.collect()
    gc.freeze()
    _send(out, ("ready",))        # the pool times a fresh worker's start apart from its first query
    inp = sys.stdin.buffer
    tables = _Tables()
    while True:
        head = inp.read(_LEN.size)
        if len(head) < _LEN.size:
            return
        req = pickle.loads(inp.read(_LEN.unpack(head)[0]))
        try:
            ctx = tables.context(req)
            try:
                res = qplan.execute(ctx, req["plan"], None, req["max_result_bytes"])
            finally:
                tables.done(req)
            buf = codec.pack([res])
            with open(req["result"], "wb") as f:
                f.write(memoryview(buf))
            reply = ("ok",)
        except ColonyError as e:
            reply = ("err", type(e).__name__, str(e))
        except Exception as e:  # noqa: BLE001 - anything else goes back as a QueryError
            reply = ("err", type(e).__name__, str(e)[:500])
        _send(out, reply)


if __name__ == "__main__":
    _serve()
