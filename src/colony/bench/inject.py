"""Host->device injection benchmark (`colony bench inject`).

For 1M..64M particles (72 B each, the seeds' schema) it measures, side by side in one
run: a plain memcpy of the same bytes, pyarrow IPC serialization alone, and
``Colony.inject`` into one SmartNIC on (a) the embedded colony (one Ray node) and (b) a
``ray.cluster_utils`` multi-node colony (host on the head node, the SmartNIC on another
node, so the bytes cross processes over loopback). Each colony runs in its own
subprocess (one Ray per process).

Per size: the first run is reported as **cold** (the device's memory faulted in for the
first time, connections opened), then ``repeats`` **warm** runs with min / median / max.
At 16M particles the four serialization placements of the Sandia report (fig. 8-5:
in flight / device / host / none) are compared, and at the largest size Ray's object
store against Arrow Flight as the bulk transport. The host overhead per request (the
seeds' ~300 us) is the caller's time in ``inject_async`` until it returns, over many
small and large requests. Objects are dropped after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from colony.bench.common import write_json

BYTES_PER_PARTICLE = 72
TARGET_GBPS = 1.32          # the seeds' Faodel end-to-end figure at 64M particles
BATCH = 1 << 20             # particles per injected batch (72 MiB)


def parse_sizes(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().upper()
        mult = 1 << 20 if part.endswith("M") else 1 << 10 if part.endswith("K") else 1
        out.append(int(float(part.rstrip("MK")) * mult))
    return out


def make_arrays(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Particle columns as a simulation would hold them (numpy), 72 B per particle."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.uint64)
    return {"id": ids, "time": np.zeros(n, dtype=np.uint64), "particle_id": ids.copy(),
            "x": rng.random(n), "y": rng.random(n), "z": rng.random(n),
            "vx": rng.uniform(-100, 100, n), "vy": rng.uniform(-100, 100, n), "vz": rng.uniform(-100, 100, n)}


def memcpy_gbps(arrays: dict[str, np.ndarray], n: int, repeats: int) -> float:
    """A plain memcpy of the same bytes, batch by batch into one reused (pre-touched) destination."""
    dst = {k: np.zeros(min(n, BATCH), dtype=v.dtype) for k, v in arrays.items()}
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for o in range(0, n, BATCH):
            m = min(BATCH, n - o)
            for k, v in arrays.items():
                np.copyto(dst[k][:m], v[o:o + m])
        best = min(best, time.perf_counter() - t0)
    return n * BYTES_PER_PARTICLE / best / 1e9


def ipc_gbps(arrays: dict[str, np.ndarray], n: int, repeats: int) -> tuple[float, float]:
    """pyarrow IPC serialization alone of the same batches, into one reused pre-touched buffer."""
    first = pa.table({k: v[:min(n, BATCH)] for k, v in arrays.items()})
    mock = pa.MockOutputStream()
    with pa.ipc.new_stream(mock, first.schema) as w:
        w.write_table(first)
    buf = pa.allocate_buffer(mock.size())
    np.frombuffer(buf, dtype=np.uint8)[:] = 0    # touch the pages so only serialization is timed
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for o in range(0, n, BATCH):
            t = pa.table({k: v[o:o + BATCH] for k, v in arrays.items()})
            with pa.ipc.new_stream(pa.FixedSizeBufferWriter(buf), t.schema) as w:
                w.write_table(t)
        best = min(best, time.perf_counter() - t0)
    return best, n * BYTES_PER_PARTICLE / best / 1e9


def bench_config(spill_root: str):
    """The embedded default with the SmartNICs' memory budget lifted (the bench measures the
    transfer path, not spilling) and spill files under the bench's temp dir."""
    from colony.config import default
    return default().with_budgets(memory=0).with_spill_root(spill_root)


def _spread(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"min": xs[0], "median": statistics.median(xs), "max": xs[-1],
            "p90": xs[min(len(xs) - 1, int(0.9 * len(xs)))], "n": len(xs)}


def _proc_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of a local process so far, or None where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


DEVICE_PID: list = [None]    # nic0's process (every node of a local colony is this machine)


def _inject(colony, arrays, n: int, prefix: str, batch: int = BATCH, **kw):
    view = {k: v[:n] for k, v in arrays.items()}
    batches = ({k: v[o:o + batch] for k, v in view.items()} for o in range(0, n, batch))
    cpu0 = _proc_cpu(DEVICE_PID[0])
    rep = colony.inject(batches, device="nic0", pool="inject", key_prefix=prefix, **kw)
    cpu1 = _proc_cpu(DEVICE_PID[0])
    rep.device_cpu_s = None if cpu0 is None or cpu1 is None else cpu1 - cpu0   # the device's whole process
    if kw.get("serialize") != "none":
        stored = sum(e.rows for e in rep.entries)
        if stored != n:
            raise RuntimeError(f"injected {n} particles but {stored} were stored")
    for e in rep.entries:
        colony.drop("inject", e.key)
    return rep


def _row(rep) -> dict:
    return {"wall_s": rep.seconds, "gbps": rep.gbps, "convert_s": rep.convert_s,
            "host_serialize_s": rep.serialize_s, "device_serialize_s": rep.device_pack_s,
            "transfer_s": rep.transfer_s, "handoff_s": rep.put_s, "host_cpu_s": rep.host_cpu_s,
            "host_init_s": rep.host_s, "device_cpu_s": rep.device_cpu_s, "batches": rep.batches, "codec": rep.codec, "serialize": rep.serialize,
            "transports": rep.transports}


def _start(kind: str, nodes: int, temp_dir: str):
    """(context, colony): the embedded colony or a ``nodes``-node local one (bench config)."""
    from colony.runtime.client import Colony
    from colony.runtime.cluster import local_cluster
    cfg = bench_config(tempfile.mkdtemp(prefix="colony-bench-spill-"))
    if kind == "embedded":
        cm = Colony(cfg, temp_dir=temp_dir, object_store_memory=2 << 30, num_cpus=2)
        return cm, cm
    cm = local_cluster(cfg, nodes=nodes, temp_dir=temp_dir, object_store_memory=1 << 30, num_cpus=1)
    return cm, cm.__enter__()


def _stop(kind: str, cm) -> None:
    if kind == "embedded":
        cm.shutdown()
    else:
        cm.__exit__(None, None, None)


def worker(kind: str, sizes: list[int], repeats: int, nodes: int, temp_dir: str, out: str) -> None:
    """Run inside a fresh process: one colony, every size; writes JSON rows to ``out``."""
    import ray

    arrays = make_arrays(max(sizes))
    rows = []
    t_up = time.perf_counter()
    cm, colony = _start(kind, nodes, temp_dir)
    try:
        up_s = time.perf_counter() - t_up
        st = {s["device"]: s for s in colony.status()}
        DEVICE_PID[0] = st["nic0"].get("pid")
        crosses = st["nic0"]["node_id"] != ray.get_runtime_context().get_node_id()
        for n in sizes:
            runs = [_inject(colony, arrays, n, f"b{n}r{r}/") for r in range(1 + max(1, repeats))]
            cold, warm = runs[0], runs[1:]
            gb = [r.gbps for r in warm]
            rows.append({"particles": n, "bytes": cold.bytes, "cold": _row(cold),
                         "warm": [_row(r) for r in warm], "warm_gbps": _spread(gb),
                         "inject_gbps": statistics.median(gb), "cold_gbps": cold.gbps,
                         "batch_particles": BATCH, "runs": len(runs)})
            print(f"[{kind}] {n >> 20}M particles: cold {cold.gbps:.2f}, warm median {statistics.median(gb):.2f} "
                  f"GB/s", file=sys.stderr, flush=True)
        mid = min(sizes, key=lambda s: abs(s - (16 << 20)))
        placements = {}
        for place in ("inflight", "device", "host", "none"):
            reps = [_inject(colony, arrays, mid, f"pl-{place}-{r}/", serialize=place) for r in range(1 + repeats)]
            placements[place] = {"cold": _row(reps[0]), "warm_gbps": _spread([r.gbps for r in reps[1:]]),
                                 "warm_host_cpu_s": _spread([r.host_cpu_s for r in reps[1:]]),
                                 "warm_device_serialize_s": _spread([r.device_pack_s for r in reps[1:]])}
            print(f"[{kind}] placement {place}: {placements[place]['warm_gbps']['median']:.2f} GB/s",
                  file=sys.stderr, flush=True)
        top = max(sizes)
        transports = {}
        for tr in ("ray", "flight"):
            reps = [_inject(colony, arrays, top, f"tr-{tr}-{r}/", transport=tr, serialize="device")
                    for r in range(1 + max(1, repeats // 2))]
            transports[tr] = {"cold_gbps": reps[0].gbps, "warm_gbps": _spread([r.gbps for r in reps[1:]])}
        # host overhead per request: the caller's time until inject_async returns
        overhead = {}
        for label, n in (("64k_particles", 1 << 16), ("1m_particles", BATCH)):
            one = {k: v[:n] for k, v in arrays.items()}
            ts = []
            for r in range(40):
                h = colony.inject_async(one, device="nic0", pool="inject", key_prefix=f"oh{label}{r}/")
                ts.append(h.host_s)
                rep = h.wait(timeout=120)
                for e in rep.entries:
                    colony.drop("inject", e.key)
            overhead[label] = _spread(ts)
        result = {"kind": kind, "nodes": 1 if kind == "embedded" else nodes, "device": "nic0",
                  "device_on_other_node": crosses, "startup_s": up_s, "rows": rows, "auth": colony.auth_mode,
                  "placements_particles": mid, "placements": placements, "transports_particles": top,
                  "transports": transports, "host_overhead_s": overhead, "links": colony.links()}
    finally:
        _stop(kind, cm)
    Path(out).write_text(json.dumps(result))


# The sweep (`colony bench inject --sweep`), on the multi-node colony (the embedded one sends
# large batches through Ray's shared memory: no Flight messages): the device-side placements
# (inflight: pack each message as it arrives; device: pack once the whole batch arrived) at
# the base point, then one knob at a time away from the base for the default placement.
SWEEP_BASE = {"serialize": "inflight", "message_bytes": 4 << 20, "batch": BATCH, "inflight": 4}
SWEEP_KNOBS = {"serialize": ("device",), "message_bytes": (1 << 20, 16 << 20), "batch": (BATCH // 4, BATCH * 4),
               "inflight": (2, 8)}


def sweep_points(sizes: list[int]) -> list[dict]:
    points = []
    for n in sizes:
        points.append({"particles": n, **SWEEP_BASE, "varied": "base"})
        for knob, values in SWEEP_KNOBS.items():
            for v in values:
                points.append({"particles": n, **SWEEP_BASE, knob: v, "varied": knob})
    return points


def sweep_worker(sizes: list[int], rounds: int, nodes: int, temp_dir: str, out: str) -> None:
    """In a fresh process: every sweep point once per round. Each round and size starts with a
    discarded injection of that size (so no point pays for first-touching memory a smaller
    size never used) and runs the points in an order rotated by one per round (so neither
    position nor load drifting during the sweep favours a point)."""
    points = sweep_points(sizes)
    arrays = make_arrays(max(sizes))
    cm, colony = _start("multinode", nodes, temp_dir)
    try:
        runs: dict[int, list] = {i: [] for i in range(len(points))}
        warmups: dict[int, list] = {n: [] for n in sizes}
        for r in range(rounds):
            for n in sizes:
                colony.transfers.message_bytes = SWEEP_BASE["message_bytes"]
                warmups[n].append(_inject(colony, arrays, n, f"sw-warm{n}r{r}/").gbps)
                idx = [i for i, p in enumerate(points) if p["particles"] == n]
                for i in idx[r % len(idx):] + idx[:r % len(idx)]:
                    p = points[i]
                    colony.transfers.message_bytes = p["message_bytes"]
                    runs[i].append(_inject(colony, arrays, n, f"sw{i}r{r}/", batch=p["batch"],
                                           serialize=p["serialize"], inflight=p["inflight"], transport="flight"))
            print(f"[sweep] round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
        colony.transfers.message_bytes = SWEEP_BASE["message_bytes"]
        result = {"warmup_gbps": {str(n): v for n, v in warmups.items()}, "points": [
            {**p, "gbps": _spread([x.gbps for x in runs[i]]), "runs_gbps": [x.gbps for x in runs[i]],
             "device_serialize_s": _spread([x.device_pack_s for x in runs[i]]),
             "host_cpu_s": _spread([x.host_cpu_s for x in runs[i]])} for i, p in enumerate(points)],
            "links": colony.links()}
    finally:
        _stop("multinode", cm)
    Path(out).write_text(json.dumps(result))


def run_sweep(sizes: list[int], nodes: int = 3, rounds: int = 3, temp_dir: str = "/tmp/ray-colony-bench") -> dict:
    from colony.machine import describe as machine
    mach = machine()
    result = _subprocess(["sweep", "--sizes", ",".join(str(s) for s in sizes), "--repeats", str(rounds),
                          "--nodes", str(nodes), "--temp-dir", temp_dir], "sweep")
    best = {}
    for n in sizes:
        pts = [p for p in result["points"] if p["particles"] == n]
        top = max(pts, key=lambda p: p["gbps"]["median"])
        best[str(n)] = {k: top[k] for k in ("serialize", "message_bytes", "batch", "inflight")} | {
            "gbps_median": top["gbps"]["median"]}
    from colony.runtime import process
    return {"benchmark": "inject_sweep", "machine": mach, "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
            "device_process": process.settings(), "rounds": rounds, "base": SWEEP_BASE, "knobs": SWEEP_KNOBS, "sizes": sizes,
            "bytes_per_particle": BYTES_PER_PARTICLE, **result, "best_by_size": best}


def _subprocess(args: list[str], what: str) -> dict:
    """Run ``python -m colony.bench.inject <args> --out F`` (one Ray per process); its JSON."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, "-m", "colony.bench.inject", *args, "--out", out]
    proc = subprocess.run(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} benchmark worker failed:\n{proc.stderr[-4000:]}")
    try:
        return json.loads(Path(out).read_text())
    finally:
        os.unlink(out)


def run(sizes: list[int], nodes: int = 3, repeats: int = 3, temp_dir: str = "/tmp/ray-colony-bench",
        progress=None) -> dict:
    from colony.machine import describe as machine
    mach = machine()
    if nodes < 3:
        raise ValueError("the multi-node colony needs at least 3 Ray nodes")
    arrays = make_arrays(max(sizes))
    local = []
    for n in sizes:
        t0 = time.perf_counter()
        pa.table({k: v[:n] for k, v in arrays.items()})
        convert = time.perf_counter() - t0
        ser_s, ser = ipc_gbps(arrays, n, repeats)
        local.append({"particles": n, "bytes": n * BYTES_PER_PARTICLE,
                      "memcpy_gbps": memcpy_gbps(arrays, n, repeats),
                      "ipc_serialize_gbps": ser, "ipc_serialize_s": ser_s, "convert_s": convert})
        if progress:
            progress(f"memcpy/IPC {n >> 20}M")
    del arrays
    results = {}
    for kind in ("embedded", "multinode"):
        if progress:
            progress(f"{kind} colony")
        results[kind] = _subprocess(["worker", "--kind", kind, "--sizes", ",".join(str(s) for s in sizes),
                                     "--repeats", str(repeats), "--nodes", str(nodes), "--temp-dir", temp_dir],
                                    kind)
    top = max(sizes)

    def at(kind, field="inject_gbps"):
        return next(r[field] for r in results[kind]["rows"] if r["particles"] == top)
    big = next(r for r in local if r["particles"] == top)
    m = f"{top >> 20}m"
    summary = {
        f"inject_gbps_{m}_multinode_warm_median": at("multinode"),
        f"inject_gbps_{m}_multinode_warm": at("multinode", "warm_gbps"),
        f"inject_gbps_{m}_multinode_cold": at("multinode", "cold_gbps"),
        f"inject_gbps_{m}_embedded_warm_median": at("embedded"),
        f"inject_gbps_{m}_embedded_cold": at("embedded", "cold_gbps"),
        f"device_cpu_s_{m}_multinode_warm": _spread([w["device_cpu_s"] for w in at("multinode", "warm")
                                                     if w["device_cpu_s"] is not None] or [0.0]),
        f"host_cpu_s_{m}_multinode_warm": _spread([w["host_cpu_s"] for w in at("multinode", "warm")]),
        "memcpy_gbps": big["memcpy_gbps"],
        "ipc_serialize_gbps": big["ipc_serialize_gbps"],
        "target_gbps": TARGET_GBPS,
        "meets_target_multinode_warm": at("multinode") >= TARGET_GBPS,
        "placements_multinode_gbps": {p: v["warm_gbps"]["median"]
                                      for p, v in results["multinode"]["placements"].items()},
        "transports_multinode_gbps": {t: v["warm_gbps"]["median"]
                                      for t, v in results["multinode"]["transports"].items()},
        "host_overhead_us_median": {k: v["median"] * 1e6
                                    for k, v in results["multinode"]["host_overhead_s"].items()},
        "particles_max": top,
    }
    from colony.runtime import process
    return {"benchmark": "inject", "machine": mach, "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
            "device_process": process.settings(), "warm_runs": repeats,
            "sizes": sizes, "batch_particles": BATCH, "bytes_per_particle": BYTES_PER_PARTICLE, "local": local,
            "colonies": results, "summary": summary}


def table(result: dict):
    from rich.table import Table
    t = Table(title="host->device injection (GB/s; devices are emulated bluefield2 SmartNICs)")
    for col in ("particles", "memcpy", "IPC serialize", "embedded cold", "embedded warm (min-med-max)",
                "multinode cold", "multinode warm (min-med-max)"):
        t.add_column(col, justify="right")
    emb = {r["particles"]: r for r in result["colonies"]["embedded"]["rows"]}
    mul = {r["particles"]: r for r in result["colonies"]["multinode"]["rows"]}

    def spread(w):
        return f"{w['min']:.2f}-{w['median']:.2f}-{w['max']:.2f}"
    for r in result["local"]:
        n = r["particles"]
        t.add_row(f"{n >> 20}M", f"{r['memcpy_gbps']:.2f}", f"{r['ipc_serialize_gbps']:.2f}",
                  f"{emb[n]['cold_gbps']:.2f}", spread(emb[n]["warm_gbps"]),
                  f"{mul[n]['cold_gbps']:.2f}", spread(mul[n]["warm_gbps"]))
    return t


def sweep_table(result: dict):
    from rich.table import Table
    t = Table(title="inject sweep, multi-node (GB/s min-med-max; one knob away from the base)")
    for col in ("particles", "serialize", "varied", "message", "batch", "inflight", "GB/s"):
        t.add_column(col, justify="right")
    for p in result["points"]:
        g = p["gbps"]
        t.add_row(f"{p['particles'] >> 20}M", p["serialize"], p["varied"], f"{p['message_bytes'] >> 20} MiB",
                  f"{p['batch'] >> 10}k", str(p["inflight"]), f"{g['min']:.2f}-{g['median']:.2f}-{g['max']:.2f}")
    return t


def run_cli(json_out: Path, sizes: str, nodes: int, repeats: int, temp_dir: str, sweep: bool = False) -> dict:
    from rich.console import Console
    from rich.progress import Progress
    ns = parse_sizes(sizes)
    if sweep:
        result = run_sweep(ns, nodes=nodes, rounds=repeats, temp_dir=temp_dir)
        Console().print(sweep_table(result))
        Console().print(result["best_by_size"])
        write_json(json_out, result)
        return result
    with Progress(transient=True) as prog:
        task = prog.add_task("inject benchmark", total=None)
        result = run(ns, nodes=nodes, repeats=repeats, temp_dir=temp_dir,
                     progress=lambda msg: prog.update(task, description=msg))
    Console().print(table(result))
    Console().print(result["summary"])
    write_json(json_out, result)
    return result


def _main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--kind", choices=["embedded", "multinode"], required=True)
    w.add_argument("--sizes", required=True)
    w.add_argument("--repeats", type=int, default=2)
    w.add_argument("--nodes", type=int, default=3)
    w.add_argument("--temp-dir", required=True)
    w.add_argument("--out", required=True)
    sw = sub.add_parser("sweep")
    for name, kw in (("--sizes", {"required": True}), ("--repeats", {"type": int, "default": 3}),
                     ("--nodes", {"type": int, "default": 3}), ("--temp-dir", {"required": True}),
                     ("--out", {"required": True})):
        sw.add_argument(name, **kw)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.cmd == "sweep":
        sweep_worker(sizes, a.repeats, a.nodes, a.temp_dir, a.out)
    else:
        worker(a.kind, sizes, a.repeats, a.nodes, a.temp_dir, a.out)


if __name__ == "__main__":
    _main()
