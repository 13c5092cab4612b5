"""The price of a noisy neighbour (seed 001 ch. 9): a bulk-synchronous host job beside a
storage daemon, with the daemon on the host's cores or on an emulated SmartNIC's cores.

    flock /tmp/colony-heavy.lock colony bench interference [--json bench/results/interference.json]

The host job is HPL's shape without MPI: ``workers`` processes, each iteration a fixed
numpy matmul block (BLAS/OpenMP at one thread per worker) and then a barrier, so the
slowest worker sets every iteration's time. It runs

- ``alone``: nothing else asked of the colony (its Ray processes idle on the other cores);
- ``<service>-host``: a co-located service whose device process (``hostd``) is pinned to
  the host job's cores;
- ``<service>-device``: the same service on the emulated SmartNIC (``nic0``), pinned to
  the device's cores;

for three services: ``ckpt`` (a checkpoint workload through the job store: IOR's role,
small chunks written back to back), ``sift`` (a sifting run, snapshot after snapshot)
and ``query`` (SQL pushed down to where the data are). The load generator (the client:
the job store's writer, the sift driver, the query client) and Ray's own processes run
on the client cores, as IOR ran on other nodes in the seeds. CPU affinity
(``os.sched_setaffinity``; devices by their config ``cores``) is what separates them.

On a 2-core machine: host cores [0] (the workers share core 0, oversubscribed), device
and client cores [1]. Cases are interleaved (alone, ckpt-host, ckpt-device, ... per
repeat), so drifting background load hits every case alike. The "expected" slowdown is
the seeds' arithmetic: the co-located daemon's CPU seconds on the host cores divided by
the host cores' capacity over the job's alone time.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import psutil

from colony.bench.common import write_json
from colony.machine import describe

RESULTS = Path("bench") / "results" / "interference.json"
SERVICES = ("ckpt", "sift", "query")
DEVICES = ("hostd", "nic0", "hostq", "nicq")       # the co-located services' device processes
_BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


# -- the bulk-synchronous host job ------------------------------------------------------------
def _worker(rank: int, start, barrier, iters: int, size: int, reps: int, cores: list[int], nice, conn) -> None:
    """One rank: pinned to the host cores; per iteration fixed BLAS work, then the barrier."""
    pin(os.getpid(), cores, nice)
    rng = np.random.default_rng(rank)
    a, b = rng.random((size, size)), rng.random((size, size))
    start.wait()
    times = []
    t = time.perf_counter()
    cpu0 = time.process_time()
    for _ in range(iters):
        for _ in range(reps):
            a @ b
        barrier.wait()
        now = time.perf_counter()
        times.append(now - t)
        t = now
    conn.send((times, time.process_time() - cpu0))
    conn.close()


def run_bsp(workers: int, iters: int, size: int, reps: int, cores: list[int],
            ready: Callable[[set[int]], None] | None = None, nice: int | None = None,
            started: Callable[[], None] | None = None) -> dict:
    """Run the job once; per-iteration times are rank 0's (barrier to barrier, so the slowest
    rank's). ``ready(rank pids)`` is called when the rank processes exist (they are still
    starting), ``started()`` the moment the timed iterations begin; the result carries the
    busy and steal seconds of ``cores`` over the timed part."""
    ctx = mp.get_context("spawn")
    saved = {k: os.environ.get(k) for k in _BLAS_ENV}
    os.environ.update({k: "1" for k in _BLAS_ENV})      # inherited by the spawned ranks
    try:
        start = ctx.Barrier(workers + 1)                 # + this process: start together
        barrier = ctx.Barrier(workers)
        pipes, procs = [], []
        for r in range(workers):
            rx, tx = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_worker, args=(r, start, barrier, iters, size, reps, cores, nice, tx), daemon=True)
            p.start()
            tx.close()                                   # a rank that dies gives EOFError, not a hang
            pipes.append(rx)
            procs.append(p)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if ready:
        ready({p.pid for p in procs})
    start.wait(timeout=120)
    t0 = time.perf_counter()
    c0 = core_times(cores)
    if started:
        started()
    results = [rx.recv() for rx in pipes]
    wall = time.perf_counter() - t0
    c1 = core_times(cores)
    for p in procs:
        p.join(30)
    return {"wall_s": wall, "iter_s": results[0][0], "worker_cpu_s": [c for _, c in results],
            "cores_busy_s": c1["busy_s"] - c0["busy_s"], "cores_steal_s": c1["steal_s"] - c0["steal_s"],
            "cores_kernel_s": c1["kernel_s"] - c0["kernel_s"]}


# -- the co-located services --------------------------------------------------------------------
def _spin(cores: list[int], nice: int | None) -> None:
    """A CPU-bound loop on the device cores: what any busy neighbour on those cores costs."""
    pin(os.getpid(), cores, nice)
    x = 0
    while True:
        x += 1


def _pool(kind: str, where: str) -> str:
    return f"{kind}_host" if where == "host" else f"{kind}_dev"


class Load:
    """A service workload run in a thread of this (client-core) process until stopped."""

    def __init__(self, colony, service: str, where: str, ckpt_bytes: int, ckpt_chunk: int, sift_rows: int,
                 query_rows: int, spin_cores: list[int] | None = None, nice: int | None = None) -> None:
        self.colony, self.service, self.where = colony, service, where
        self.spin_cores, self.nice, self.proc = spin_cores, nice, None
        self.device = {"host": "hostd", "device": "nic0"}[where]
        if service == "query":
            self.device = {"host": "hostq", "device": "nicq"}[where]
        self.ops = 0
        self.bytes = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if service == "spin":
            self.device = None
        elif service == "ckpt":
            from colony.drivers.jobstore import JobStore
            self.js = JobStore.up(colony, f"bench-{where}-{time.time_ns()}", _pool("ckpt", where),
                                  chunk_size=ckpt_chunk)
            self.payload = np.random.default_rng(0).bytes(ckpt_bytes)
        elif service == "sift":
            from colony.drivers.sift import Sifter
            self.sifter = Sifter(colony, [self.device], k=2, n_bins=4, run=f"bench-{time.time_ns()}",
                                 parallel=False)
            from colony.data import uniform
            self.snapshot = uniform(sift_rows, seed=1)
        elif service == "query":
            from colony.data import uniform
            from colony.drivers.query import QueryClient
            from colony.query.plan import TableSpec
            pool = _pool("particles", where)
            colony.put(pool, "p/0", uniform(query_rows, seed=2))
            self.client = QueryClient(colony, "host0", {"particles": TableSpec("particles", pool, "*")},
                                      send_load=False, devices=[self.device])
            self.sql = "SELECT count(*) AS n, avg(vx) AS v FROM particles WHERE x < 0.5 AND y > 0.25"
        else:
            raise ValueError(f"unknown service {service!r}; use one of {SERVICES}")

    def step(self) -> None:
        if self.service == "ckpt":
            m = self.js.write(f"ckpt/{self.ops % 4}", self.payload)     # rotate 4 checkpoint files
            self.bytes += m["size"]
        elif self.service == "sift":
            self.sifter.inject(self.snapshot, self.device, source="bench", seq=self.ops)
            self.sifter.run()
            self.bytes += self.snapshot.nbytes
        else:
            r = self.client.query(self.sql, placement="down")
            assert r.placement == "down" and r.table.num_rows == 1
        self.ops += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception as e:   # noqa: BLE001 - reported in the JSON, the run goes on
                self.errors.append(f"{type(e).__name__}: {e}")
                if len(self.errors) > 20:
                    return
                time.sleep(0.1)

    def start(self) -> None:
        if self.service == "spin":
            self.proc = mp.get_context("spawn").Process(target=_spin, args=(self.spin_cores, self.nice), daemon=True)
            self.proc.start()
            time.sleep(0.5)
            self.spin_cpu0 = _cpu(self.proc.pid)
            return
        self.step()                                   # warm: first call pays setup, not the job
        self.ops = 0
        self.bytes = 0
        self._thread = threading.Thread(target=self._loop, name=f"load-{self.service}", daemon=True)
        self._thread.start()

    def spin_cpu(self) -> float:
        return _cpu(self.proc.pid) - self.spin_cpu0

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(10)
            return
        self._stop.set()
        if self._thread:
            self._thread.join(120)
        if self.service == "ckpt":
            self.js.close()


def pin(pid: int, cores: list[int], nice: int | None = None) -> list[int]:
    """Pin every thread of process ``pid`` (affinity and nice apply per thread on Linux)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
            if nice is not None:
                os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except OSError:
            pass        # a thread that just ended (or no permission to raise priority: reported)
    return sorted(os.sched_getaffinity(pid))


def core_times(cores: list[int]) -> dict[str, float]:
    """Busy and steal seconds of ``cores`` so far (/proc/stat), whoever ran there."""
    tick = os.sysconf("SC_CLK_TCK")
    busy = steal = kernel = 0.0
    for line in Path("/proc/stat").read_text().splitlines():
        name, *f = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
            v = [int(x) for x in f]
            busy += v[0] + v[1] + v[2] + v[5] + v[6]       # user nice system irq softirq
            kernel += v[2] + v[5] + v[6]
            steal += v[7] if len(v) > 7 else 0
    return {"busy_s": busy / tick, "steal_s": steal / tick, "kernel_s": kernel / tick}


def _cpu(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def _others(pids: set[int]) -> dict[int, float]:
    """CPU seconds of this process's descendants (Ray's raylet, GCS, workers) except ``pids``."""
    out = {}
    for p in psutil.Process().children(recursive=True):
        if p.pid in pids:
            continue
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


def pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs), q))


def spread(xs) -> dict:
    return {"min": float(min(xs)), "median": float(np.median(xs)), "max": float(max(xs)), "n": len(xs)}


def run(*, workers: int = 2, iters: int = 200, size: int = 256, reps: int = 10, repeats: int = 3,
        host_cores: list[int] | None = None, device_cores: list[int] | None = None,
        client_cores: list[int] | None = None, services: tuple[str, ...] = SERVICES,
        ckpt_bytes: int = 1 << 20, ckpt_chunk: int = 64 << 10, sift_rows: int = 20_000,
        query_rows: int = 200_000, nice: int | None = -10, say: Callable[[str], None] = print) -> dict:
    import colony
    from colony.config.builders import interference_colony

    avail = sorted(os.sched_getaffinity(0))
    host_cores = host_cores or avail[:max(1, len(avail) // 2)]
    device_cores = device_cores or [c for c in avail if c not in host_cores] or avail[-1:]
    client_cores = client_cores or device_cores
    if set(host_cores) & (set(device_cores) | set(client_cores)):
        raise ValueError(f"host cores {host_cores} must not overlap device/client cores "
                         f"{device_cores}/{client_cores}")
    load_start = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="colony-interference-")
    cfg = interference_colony(host_cores, device_cores, client_cores, spill_root=tmp,
                              temp_dir=f"/tmp/ray-interference-{os.getpid()}")
    say(f"core split: host job {workers} workers on cores {host_cores}; 'host' daemon (hostd) on {host_cores}; "
        f"emulated SmartNIC (nic0) on {device_cores}; client and Ray on {client_cores} (CPU affinity)")
    cases = ["alone", "spin-device"] + [f"{s}-{w}" for s in services for w in ("host", "device")]
    runs: dict[str, list[dict]] = {c: [] for c in cases}
    c = colony.connect(cfg)
    try:
        pids = {s["device"]: s for s in c.status() if s["device"] in DEVICES}
        dev_pids = {u["pid"] for u in pids.values()}
        # every thread of each device process on its cores; this driver and Ray's own processes on the
        # client cores (threads started later inherit their creator's affinity)
        affinity = {d: pin(u["pid"], host_cores if d.startswith("host") else device_cores, nice)
                    for d, u in pids.items()}
        pin(os.getpid(), client_cores, nice)
        for p in psutil.Process().children(recursive=True):
            if p.pid not in dev_pids:
                pin(p.pid, client_cores, nice)
        nices = sorted({psutil.Process(u["pid"]).nice() for u in pids.values()} | {psutil.Process().nice()})
        say("device processes: " + ", ".join(f"{d} pid {u['pid']} cores {affinity[d]} ({u['emulation']['affinity_note']})" for d, u in pids.items()))
        run_bsp(workers, 10, size, reps, host_cores, nice=nice)          # warm the page cache / imports
        for rep in range(repeats):
            for case in cases:
                svc, _, where = case.partition("-")
                load = None if case == "alone" else Load(c, svc, where, ckpt_bytes, ckpt_chunk, sift_rows,
                                                         query_rows, device_cores, nice)
                mark: dict[str, Any] = {}

                def ready(ranks: set[int]):
                    if load:
                        load.start()
                    mark["skip"] = dev_pids | ranks

                def started():
                    mark["daemon"] = {d: _cpu(u["pid"]) for d, u in pids.items()}
                    if load is not None and load.service == "spin":
                        load.spin_cpu0 = _cpu(load.proc.pid)
                    mark["others"] = _others(mark["skip"])
                    mark["client"] = time.process_time()
                    mark["ops"] = 0
                r = run_bsp(workers, iters, size, reps, host_cores, ready, nice, started)
                daemon = {d: _cpu(u["pid"]) - mark["daemon"][d] for d, u in pids.items()}
                spin_cpu = load.spin_cpu() if load is not None and load.service == "spin" else None
                others_now = _others(mark["skip"])
                others = sum(v - mark["others"].get(p, 0.0) for p, v in others_now.items())
                client_cpu = time.process_time() - mark["client"]
                busy, steal = r["cores_busy_s"], r["cores_steal_s"]
                on_host = sum(daemon[d] for d in DEVICES if d.startswith("host"))
                if load:
                    ops, nbytes, errs = load.ops, load.bytes, list(load.errors)
                    load.stop()
                else:
                    ops, nbytes, errs = 0, 0, []
                it = r["iter_s"]
                row = {"repeat": rep, "wall_s": r["wall_s"], "iter_median_s": pct(it, 50), "iter_p99_s": pct(it, 99),
                       "iter_max_s": max(it), "iter_s": [round(x, 6) for x in it],
                       "worker_cpu_s": r["worker_cpu_s"],
                       "daemon_cpu_s": spin_cpu if spin_cpu is not None else daemon[load.device] if load else 0.0,
                       "daemon_device": load.device if load else None,
                       "daemon_cores": (device_cores if spin_cpu is not None else affinity[load.device]) if load else None,
                       "device_cpu_s": daemon, "ray_other_cpu_s": others, "client_cpu_s": client_cpu,
                       "service_ops": ops, "service_bytes": nbytes, "service_errors": errs[:5],
                       "host_cores_busy_s": busy, "host_cores_steal_s": steal,
                       "host_cores_kernel_s": r["cores_kernel_s"],      # system + irq + softirq time
                       # whatever else ran on the host cores in the window: other users' processes
                       # displaced there, kernel threads, softirqs (the job's ranks and our host-side
                       # devices subtracted)
                       "host_cores_others_s": max(0.0, busy - sum(r["worker_cpu_s"]) - on_host),
                       "loadavg_1m": os.getloadavg()[0]}
                runs[case].append(row)
                say(f"repeat {rep} {case:>13}: wall {r['wall_s']:.3f} s, iter median {row['iter_median_s'] * 1e3:.2f}"
                    f" ms p99 {row['iter_p99_s'] * 1e3:.2f} ms max {row['iter_max_s'] * 1e3:.2f} ms, daemon "
                    f"{row['daemon_cpu_s']:.2f} CPU s ({load.device if load else '-'}), {ops} ops; others on host "
                    f"cores {row['host_cores_others_s']:.2f} s (kernel {r['cores_kernel_s']:.2f} s), steal {steal:.2f} s, "
                    f"load {row['loadavg_1m']:.1f}"
                    + (f", {len(errs)} errors" if errs else ""))
    finally:
        c.shutdown()
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return summarize(runs, host_cores=host_cores, device_cores=device_cores, client_cores=client_cores,
                     params={"workers": workers, "iters": iters, "matmul_size": size, "matmul_reps": reps,
                             "repeats": repeats, "ckpt_bytes": ckpt_bytes, "ckpt_chunk": ckpt_chunk,
                             "sift_rows": sift_rows, "query_rows": query_rows, "nice": nice, "nice_applied": nices},
                     load_start=load_start, affinity=affinity)


def summarize(runs: dict[str, list[dict]], *, host_cores, device_cores, client_cores, params, load_start,
              affinity) -> dict:
    """Per case: wall and per-iteration spread, paired slowdown vs alone, expected from CPU."""
    alone = runs["alone"]
    alone_med = float(np.median([r["wall_s"] for r in alone]))
    out_cases = {}
    for case, rows in runs.items():
        walls = [r["wall_s"] for r in rows]
        its = [x for r in rows for x in r["iter_s"]]
        paired = [r["wall_s"] / a["wall_s"] - 1 for r, a in zip(rows, alone)]
        # the same, less the CPU seconds other processes took on the host cores in the window
        # (on one core: the time the job waited for them); both sides corrected alike
        net = [(r["wall_s"] - r.get("host_cores_others_s", 0.0)) / (a["wall_s"] - a.get("host_cores_others_s", 0.0))
               - 1 for r, a in zip(rows, alone)]
        expected = [(r["daemon_cpu_s"] / (len(host_cores) * a["wall_s"]))
                    if (r["daemon_device"] or "").startswith("host") else 0.0 for r, a in zip(rows, alone)]
        out_cases[case] = {
            "wall_s": spread(walls),
            "iter_ms": {"median": pct(its, 50) * 1e3, "p99": pct(its, 99) * 1e3, "max": max(its) * 1e3,
                        "per_repeat_median": spread([r["iter_median_s"] * 1e3 for r in rows]),
                        "per_repeat_p99": spread([r["iter_p99_s"] * 1e3 for r in rows]),
                        "per_repeat_max": spread([r["iter_max_s"] * 1e3 for r in rows])},
            "slowdown_vs_alone": spread(paired),
            "slowdown_without_others": spread(net),
            "worst_run_slowdown": max(walls) / alone_med - 1,
            "daemon_cpu_s": spread([r["daemon_cpu_s"] for r in rows]),
            "daemon_cpu_share_of_host_cores": spread([r["daemon_cpu_s"] / (len(host_cores) * r["wall_s"])
                                                      for r in rows]),
            "expected_slowdown_from_cpu": spread(expected),
            "service_ops_per_s": spread([r["service_ops"] / r["wall_s"] for r in rows]),
            "service_mb_per_s": spread([r["service_bytes"] / r["wall_s"] / 1e6 for r in rows]),
            "ray_other_cpu_s": spread([r["ray_other_cpu_s"] for r in rows]),
            "host_cores_others_s": spread([r.get("host_cores_others_s", 0.0) for r in rows]),
            "host_cores_steal_s": spread([r.get("host_cores_steal_s", 0.0) for r in rows]),
            "host_cores_kernel_s": spread([r.get("host_cores_kernel_s", 0.0) for r in rows]),
            "loadavg_1m": spread([r.get("loadavg_1m", 0.0) for r in rows]),
            "runs": rows,
        }
    headline = {}
    for case, s in out_cases.items():
        if case == "alone":
            continue
        headline[case] = {"median_slowdown_pct": round(100 * s["slowdown_vs_alone"]["median"], 1),
                          "slowdown_pct_min_max": [round(100 * s["slowdown_vs_alone"]["min"], 1),
                                                   round(100 * s["slowdown_vs_alone"]["max"], 1)],
                          "worst_run_pct": round(100 * s["worst_run_slowdown"], 1),
                          "median_without_others_pct": round(100 * s["slowdown_without_others"]["median"], 1),
                          "without_others_pct_min_max": [round(100 * s["slowdown_without_others"]["min"], 1),
                                                         round(100 * s["slowdown_without_others"]["max"], 1)],
                          "expected_from_daemon_cpu_pct": round(100 * s["expected_slowdown_from_cpu"]["median"], 1),
                          "daemon_cpu_s_median": round(s["daemon_cpu_s"]["median"], 2)}
    return {
        "benchmark": "interference",
        "machine": describe(loadavg_1m_5m_15m_at_start=[round(x, 2) for x in load_start],
                            loadavg_1m_5m_15m_at_end=[round(x, 2) for x in os.getloadavg()]),
        "core_split": {"host_job_cores": host_cores, "host_daemon_cores": host_cores,
                       "device_cores": device_cores, "client_and_ray_cores": client_cores,
                       "device_process_affinity": affinity,
                       "mechanism": "os.sched_setaffinity: ranks pin themselves, devices by config `cores`, "
                                    "the driver (and the Ray processes it starts) before ray.init"},
        "params": params,
        "seeds": {"source": "seed 001 ch. 9.4.3 (HPL + IOR with BeeOND daemons on the compute nodes)",
                  "expected_from_cpu_pct": 7, "median_slowdown_pct": 38, "worst_run_pct": 44},
        "headline": headline,
        "cases": out_cases,
        "note": ("emulated: the 'device' is a Ray actor process pinned to other cores of the same machine "
                 "(no SmartNIC); memory bandwidth, caches and the kernel are still shared. The machine is "
                 "shared with other users: their processes run on every core (see loadavg)."),
    }


def _cores(text: str | None) -> list[int] | None:
    return [int(x) for x in text.split(",")] if text else None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=RESULTS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--size", type=int, default=256, help="matmul size per step")
    ap.add_argument("--reps", type=int, default=10, help="matmuls per iteration per rank")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--host-cores", help="e.g. 0 (default: first half of the cores)")
    ap.add_argument("--device-cores", help="e.g. 1 (default: the rest)")
    ap.add_argument("--client-cores", help="default: the device cores")
    ap.add_argument("--services", default=",".join(SERVICES))
    ap.add_argument("--ckpt-bytes", type=int, default=1 << 20)
    ap.add_argument("--ckpt-chunk", type=int, default=64 << 10)
    ap.add_argument("--nice", type=int, default=-10, help="nice value of every process of the experiment (ranks, "
                    "device processes, client, Ray), so other users' load on a shared machine weighs less; "
                    "'none' = leave it")
    a = ap.parse_args(argv)
    res = run(workers=a.workers, iters=a.iters, size=a.size, reps=a.reps, repeats=a.repeats,
              host_cores=_cores(a.host_cores), device_cores=_cores(a.device_cores),
              client_cores=_cores(a.client_cores), services=tuple(s for s in a.services.split(",") if s),
              ckpt_bytes=a.ckpt_bytes, ckpt_chunk=a.ckpt_chunk, nice=a.nice)
    write_json(a.json, res)
    for case, h in res["headline"].items():
        print(f"{case:>13}: median {h['median_slowdown_pct']:+.1f}% (min/max {h['slowdown_pct_min_max']}), worst "
              f"{h['worst_run_pct']:+.1f}%, expected from daemon CPU {h['expected_from_daemon_cpu_pct']:.1f}%")
    print(f"wrote {a.json}")


if __name__ == "__main__":
    main(sys.argv[1:])
