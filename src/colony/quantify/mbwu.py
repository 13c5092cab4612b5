"""MBWU measurement: RocksDB daemons, YCSB-style load generators, thread and device sweeps.

Layout (1:1:1, as in seed 002 §2.4): per storage-device path one RocksDB daemon and one
load-generator process. Landscapes:

* integrated  – the generator process opens RocksDB itself (no network hop);
* network     – a daemon process serves RocksDB over TCP (kv.py protocol), the generator
                is another process (loopback here, or `--connect HOST:PORT` to a daemon
                started with `colony mbwu serve` on another machine);
* disaggregated – like network, but the device paths must live on network storage
                (NFS/SMB/NBD/iSCSI mount); refused with a clear error where none is mounted.

One MBWU: thread sweep on ONE device with caching minimized; the peak is accepted only
when the utilization report shows the device as the bottleneck. Platform MBWUs: device
sweep with normal caching until the total stops growing (plateau).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import threading
import time
from pathlib import Path

from colony.errors import InvalidParameter, NotAnMBWU, QuantifyError, ToolUnavailable
from colony.quantify import kv, monitor
from colony.quantify.ycsb import InsertCounter, OperationStream, Workload, key_name

LANDSCAPES = ("integrated", "network", "disaggregated")
DEFAULT_THREADS = (1, 2, 4, 8, 16, 32)


def drop_page_cache(control: str = "/proc/sys/vm/drop_caches") -> dict:
    """sync + echo 3 > /proc/sys/vm/drop_caches; report whether it was permitted."""
    try:
        os.sync()
        with open(control, "w") as fh:
            fh.write("3\n")
        return {"dropped": True, "how": "sync; echo 3 > /proc/sys/vm/drop_caches"}
    except OSError as e:
        return {"dropped": False, "how": f"not permitted: {e.strerror} (run as root to drop the page cache)"}


# ------------------------------------------------------------------ generator process

def _percentiles(lat: list[float]) -> dict:
    if not lat:
        return {"mean": None, "p50": None, "p99": None}
    s = sorted(lat)
    return {"mean": sum(s) / len(s) * 1e6, "p50": s[len(s) // 2] * 1e6, "p99": s[min(len(s) - 1, int(len(s) * 0.99))] * 1e6}


def _do(client, op: str, key: bytes, arg) -> bool:
    """Execute one YCSB operation; return False when a read found nothing."""
    if op == "read":
        return client.get(key) is not None
    if op in ("update", "insert"):
        client.put(key, arg)
        return True
    if op == "scan":
        client.scan(key, arg)
        return True
    if op == "rmw":
        found = client.get(key) is not None
        client.put(key, arg)
        return found
    raise InvalidParameter(f"unknown operation {op}")


def _load(make_client, w: Workload, threads: int, rate: float, seed: int) -> dict:
    """YCSB load phase: insert records 0..recordcount-1 split over threads, rate-limited (ops/s, 0 = no limit)."""
    errors: list[str] = []
    pool = random.Random(seed).randbytes(1 << 20)

    def work(tid: int):
        try:
            c = make_client()
            rng = random.Random(seed + tid)
            per = rate / threads if rate > 0 else 0.0
            t0 = time.monotonic()
            done = 0
            for k in range(tid, w.recordcount, threads):
                off = rng.randrange(0, len(pool) - w.value_size)
                c.put(key_name(k, w.ordered_inserts), pool[off:off + w.value_size])
                done += 1
                if per:                       # token bucket: never run ahead of the target rate
                    ahead = done / per - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
            c.close()
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")

    dt = _run_threads(work, threads)
    if errors:
        raise QuantifyError(f"load phase failed: {errors[0]}")
    c = make_client()
    c.flush()
    stats = c.stats()
    c.close()
    return {"records": w.recordcount, "seconds": dt, "ops_per_s": w.recordcount / dt, "target_rate": rate,
            "bytes": w.recordcount * (w.value_size + w.key_size), "db": stats}


def _run(make_client, w: Workload, threads: int, duration: float, counter: InsertCounter, seed: int) -> dict:
    """YCSB transaction phase: `threads` clients until `duration` s pass or operationcount ops are done."""
    stop_at = time.monotonic() + duration
    budget = w.operationcount if w.operationcount > 0 else None
    lock = threading.Lock()
    state = {"issued": 0}
    by_op: dict[str, int] = {}
    misses = [0]
    lats: list[float] = []
    errors: list[str] = []
    pool = random.Random(seed).randbytes(1 << 20)

    def work(tid: int):
        try:
            c = make_client()
            stream = OperationStream(w, counter, seed * 7919 + tid, pool)
            local: dict[str, int] = {}
            loclat: list[float] = []
            miss = 0
            while time.monotonic() < stop_at:
                if budget is not None:
                    with lock:
                        if state["issued"] >= budget:
                            break
                        state["issued"] += 1
                op, key, arg = stream.next()
                t = time.perf_counter()
                if not _do(c, op, key, arg):
                    miss += 1
                if op == "insert":
                    counter.acknowledge(stream.pending_insert)
                loclat.append(time.perf_counter() - t)
                local[op] = local.get(op, 0) + 1
            c.close()
            with lock:
                for k, v in local.items():
                    by_op[k] = by_op.get(k, 0) + v
                misses[0] += miss
                lats.extend(loclat[::max(1, len(loclat) // 20000)])
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")

    dt = _run_threads(work, threads)
    if errors:
        raise QuantifyError(f"run phase failed with {threads} threads: {errors[0]}")
    ops = sum(by_op.values())
    return {"threads": threads, "ops": ops, "seconds": dt, "ops_per_s": ops / dt, "by_op": by_op,
            "read_misses": misses[0], "latency_us": _percentiles(lats)}


def _run_threads(work, threads: int) -> float:
    """Run work(0..threads-1) on threads; the wall time they took together."""
    t0 = time.monotonic()
    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.monotonic() - t0


def generator_main(conn, path: str, landscape: str, daemon_addr, minimize_caching: bool, seed: int) -> None:
    """Generator process: obeys ('load', ...), ('run', ...), ('stop',) commands from the orchestrator."""
    db = None
    try:
        if landscape == "integrated":
            db = kv.open_db(path, minimize_caching, fresh=True)
            make_client = lambda: kv.LocalClient(db, minimize_caching)  # noqa: E731
        else:
            host, port = daemon_addr
            make_client = lambda: kv.TcpClient(host, port)  # noqa: E731
        conn.send(("ready", os.getpid()))
        counter = None
        runs = 0
        while True:
            cmd = conn.recv()
            try:
                if cmd[0] == "load":
                    w = Workload(**cmd[1])
                    res = _load(make_client, w, cmd[2], cmd[3], seed)
                    counter = InsertCounter(w.recordcount)
                    conn.send(("ok", res))
                elif cmd[0] == "run":
                    w = Workload(**cmd[1])
                    if counter is None:
                        counter = InsertCounter(w.recordcount)
                    runs += 1
                    conn.send(("ok", _run(make_client, w, cmd[2], cmd[3], counter, seed + runs)))
                elif cmd[0] == "stop":
                    conn.send(("ok", None))
                    return
            except Exception as e:
                conn.send(("error", f"{type(e).__name__}: {e}"))
    except Exception as e:
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        if db is not None:
            db.close()


# ------------------------------------------------------------------ orchestration

def _wait(conn, proc, what: str, timeout: float = 60.0) -> None:
    """Wait for a child's first message; fail fast if it died (e.g. no __main__ guard under spawn)."""
    end = time.monotonic() + timeout
    while not conn.poll(0.2):
        if not proc.is_alive():
            raise QuantifyError(f"{what} exited with code {proc.exitcode} before it was ready (scripts that "
                                "start measurements need an `if __name__ == '__main__':` guard)")
        if time.monotonic() > end:
            raise QuantifyError(f"{what} did not start within {timeout:.0f} s")


class Platform:
    """Daemons and generators for a set of device paths, in one landscape."""

    def __init__(self, paths, landscape: str = "network", minimize_caching: bool = True, seed: int = 0,
                 connect: list[tuple[str, int]] | None = None):
        if landscape not in LANDSCAPES:
            raise InvalidParameter(f"landscape must be one of {LANDSCAPES}, got {landscape!r}")
        if not paths and not connect:
            raise InvalidParameter("give at least one device path")
        if landscape == "disaggregated":
            for p in paths:
                ok, why = monitor.is_network_storage(p)
                if not ok:
                    raise ToolUnavailable(f"disaggregated landscape needs device paths on network storage "
                                          f"(NFS/SMB/NBD/iSCSI mount); {p}: {why}. Mount a share or network "
                                          f"block device and point --device at it")
        self.paths = [str(Path(p) / "colony-mbwu-db") for p in paths or ()]
        self.landscape, self.minimize_caching, self.seed = landscape, minimize_caching, seed
        self.connect = connect
        # spawn, never fork: a parent that has RocksDB (or any library) threads holding locks would
        # hand a forked child a held mutex and the child deadlocks. Spawned children re-import
        # __main__, so scripts that measure need an `if __name__ == "__main__":` guard.
        self.ctx = mp.get_context("spawn")
        self.daemons, self.gens, self.pids = [], [], []

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self) -> None:
        addrs: list = [None] * len(self.paths)
        if self.connect:
            addrs = list(self.connect)
            self.paths = self.paths or [""] * len(addrs)
        elif self.landscape != "integrated":
            for i, p in enumerate(self.paths):
                a, b = self.ctx.Pipe()
                stop = self.ctx.Event()
                pr = self.ctx.Process(target=kv.daemon_main, args=(p, self.minimize_caching, b, stop), daemon=True)
                pr.start()
                self.daemons.append((pr, stop))
                _wait(a, pr, f"daemon for {p}")
                kind, val, pid = a.recv()
                if kind == "error":
                    raise QuantifyError(f"daemon for {p} failed: {val}")
                addrs[i] = ("127.0.0.1", val)
                self.pids.append(pid)
        for i, p in enumerate(self.paths):
            a, b = self.ctx.Pipe()
            pr = self.ctx.Process(target=generator_main,
                                  args=(b, p, self.landscape, addrs[i], self.minimize_caching, self.seed + 1000 * i),
                                  daemon=True)
            pr.start()
            self.gens.append((pr, a))
            _wait(a, pr, f"generator for {p}")
            msg = a.recv()
            if msg[0] == "error":
                raise QuantifyError(f"generator for {p} failed: {msg[1]}")
            self.pids.append(msg[1])

    def _all(self, cmd) -> list:
        for _, c in self.gens:
            c.send(cmd)
        out = []
        for _, c in self.gens:
            kind, val = c.recv()
            if kind == "error":
                raise QuantifyError(val)
            out.append(val)
        return out

    def load(self, w: Workload, threads: int = 4, rate: float = 0.0) -> list[dict]:
        return self._all(("load", w.as_dict(), threads, rate))

    def run(self, w: Workload, threads: int, duration: float, watts: float | None = None,
            drop_cache: bool = False, link_mib_s: float | None = None) -> dict:
        """One measured run on every device at once, with its utilization report."""
        cache = drop_page_cache() if drop_cache else None
        mon = monitor.Monitor([Path(p).parent for p in self.paths if p], self.pids, watts=watts)
        mon.start()
        per_dev = self._all(("run", w.as_dict(), threads, duration))
        util = mon.stop()
        total = sum(r["ops_per_s"] for r in per_dev)
        return {"threads": threads, "devices": len(per_dev), "ops_per_s": total, "per_device": per_dev,
                "utilization": util, "bottleneck": monitor.bottleneck(util, link_mib_s), "page_cache": cache}

    def close(self) -> None:
        for pr, c in self.gens:
            try:
                c.send(("stop",))
                if c.poll(30):
                    c.recv()
            except (OSError, EOFError, BrokenPipeError):
                pass
            pr.join(30)
            if pr.is_alive():
                pr.terminate()
        for pr, stop in self.daemons:
            stop.set()
            pr.join(30)
            if pr.is_alive():
                pr.terminate()
        self.gens, self.daemons = [], []


def shared_devices(paths) -> dict:
    """Which block device each path is on; several paths on one device are not several media."""
    devs = {str(p): monitor.block_device(p) for p in paths}
    distinct = len(set(devs.values()))
    return {"paths": devs, "distinct_devices": distinct,
            "warning": None if distinct == len(devs) else
            f"{len(devs)} paths share {distinct} block device(s): the sweep adds RocksDB instances, not media"}


def thread_sweep(path, w: Workload, threads=DEFAULT_THREADS, duration: float = 5.0, landscape: str = "network",
                 load_threads: int = 4, load_rate: float = 0.0, watts: float | None = None, seed: int = 0,
                 progress=None, connect: tuple[str, int] | None = None, drop_cache: bool = True,
                 link_mib_s: float | None = None) -> dict:
    """Find one MBWU on one device: caching minimized, page cache dropped before each run
    (`drop_cache=False` only for tests on shared machines; the result then says so).

    Returns every point, the peak, its bottleneck and `mbwu_ops` (None when refused).
    """
    threads = list(threads)
    if not threads or any((not isinstance(t, int)) or t < 1 for t in threads):
        raise InvalidParameter(f"thread counts must be integers >= 1, got {threads}")
    if duration <= 0:
        raise InvalidParameter(f"duration must be > 0 s, got {duration}")
    points = []
    if connect is not None and landscape == "integrated":
        raise InvalidParameter("--connect drives a remote daemon: use the network or disaggregated landscape")
    paths = [] if connect is not None else [path]
    with Platform(paths, landscape, minimize_caching=True, seed=seed,
                  connect=[connect] if connect is not None else None) as plat:
        loaded = plat.load(w, load_threads, load_rate)
        if progress:
            progress("load", loaded[0])
        for t in threads:
            r = plat.run(w, t, duration, watts, drop_cache=drop_cache, link_mib_s=link_mib_s)
            points.append(r)
            if progress:
                progress("run", r)
    peak = max(points, key=lambda r: r["ops_per_s"])
    b = peak["bottleneck"]
    result = {"kind": "thread_sweep", "landscape": landscape, "path": None if path is None else str(path), "workload": w.as_dict(),
              "caching": kv.caching_report(True), "load": loaded[0], "points": points,
              "peak_ops_per_s": peak["ops_per_s"], "peak_threads": peak["threads"], "bottleneck": b,
              "mbwu_ops": peak["ops_per_s"] if b["is_media_bound"] else None,
              "page_cache": points[0]["page_cache"], "device": shared_devices(paths)}
    if connect is not None:
        result["remote_daemon"] = {"address": f"{connect[0]}:{connect[1]}", "note":
                                   "the device and its page cache are on the daemon's host: this report sees only "
                                   "the generator side, so run `colony mbwu measure` on the storage host to prove "
                                   "the medium is the bottleneck"}
    if not b["is_media_bound"]:
        result["refused"] = (f"the peak ({peak['ops_per_s']:.1f} ops/s at {peak['threads']} threads) is not an "
                             f"MBWU: bottleneck = {b['resource']} ({b['why']})")
    return result


def require_mbwu(sweep: dict) -> float:
    """The MBWU of a thread sweep, or NotAnMBWU saying what limited the peak."""
    if sweep.get("mbwu_ops") is None:
        raise NotAnMBWU(sweep.get("refused", "the sweep found no media-bound peak") +
                        "; measure on a machine where the device saturates first, or pass a known MBWU with --mbwu")
    return float(sweep["mbwu_ops"])


def device_sweep(paths, w: Workload, threads: int, mbwu_ops: float, duration: float = 5.0,
                 landscape: str = "network", plateau: float = 0.05, load_threads: int = 4, load_rate: float = 0.0,
                 watts: float | None = None, seed: int = 0, progress=None) -> dict:
    """Platform MBWUs: 1, 2, ... devices with normal caching until the gain drops below `plateau`."""
    if mbwu_ops is None or mbwu_ops <= 0:
        raise InvalidParameter("device sweep needs a positive MBWU (ops/s) to normalize with")
    paths = list(paths)
    points = []
    plateau_at = None
    for d in range(1, len(paths) + 1):
        with Platform(paths[:d], landscape, minimize_caching=False, seed=seed) as plat:
            plat.load(w, load_threads, load_rate)
            r = plat.run(w, threads, duration, watts)
        r["mbwus"] = r["ops_per_s"] / mbwu_ops
        points.append(r)
        if progress:
            progress("devices", r)
        if len(points) >= 2:
            prev = points[-2]["mbwus"]
            if r["mbwus"] < prev * (1 + plateau):
                plateau_at = d
                break
    best = max(points, key=lambda r: r["mbwus"])
    return {"kind": "device_sweep", "landscape": landscape, "threads": threads, "mbwu_ops": mbwu_ops,
            "workload": w.as_dict(), "points": points, "platform_mbwus": best["mbwus"],
            "platform_peak_ops_per_s": best["ops_per_s"], "best_devices": best["devices"],
            "plateau_at_devices": plateau_at,
            "plateau_note": (f"gain < {plateau:.0%} when going to {plateau_at} devices" if plateau_at else
                             f"no plateau within {len(paths)} device paths; add more to find it"),
            "bottleneck": best["bottleneck"], "device": shared_devices(paths)}


def small_workload(name: str = "a", records: int = 20_000, **kw) -> Workload:
    """A workload sized for a quick run on a laptop or CI box (records x 4 KiB)."""
    from colony.quantify.ycsb import workload
    return workload(name, recordcount=records, **kw)


def landscape_sweep(path, w: Workload, threads: int, duration: float, landscapes=("integrated", "network"),
                    mbwu_ops: float | None = None, watts: float | None = None, seed: int = 0) -> dict:
    """The same one-device run in several landscapes (side by side, normal caching)."""
    out = {}
    for ls in landscapes:
        try:
            with Platform([path], ls, minimize_caching=False, seed=seed) as plat:
                plat.load(w, 4, 0.0)
                r = plat.run(w, threads, duration, watts)
            if mbwu_ops:
                r["mbwus"] = r["ops_per_s"] / mbwu_ops
            out[ls] = r
        except ToolUnavailable as e:
            out[ls] = {"unavailable": str(e)}
    return out
