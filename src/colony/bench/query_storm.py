"""Push-back storm and mixed workload on the Ray colony with pinned cores: the host on core 0,
the four emulated SmartNICs on core 1 (``os.sched_setaffinity`` through the devices'
``cores``), so device work does not steal the host's core. Queries run in worker processes
(the service default; ``--no-isolate``: in the devices' threads). ``--pull-back``: the host
pulls a push-back's objects from the SmartNIC's read endpoint, served by threads on core 0
(emulated DMA: the SmartNIC's core does not move the bytes).

- storm: every policy on the same burst (naive, load-aware, admission, probabilistic,
  utilization, always-down, always-back), p50/p99, ``--rounds`` rounds with the policies'
  order rotated each round (background load drifts over all alike); per-query decision log
  (predicted host wait and device queue beside the measured time) for the engine's policies;
- where: per-phase times of one push-back and one push-down per SmartNIC, idle and sifting;
- mixed: queries of the benchmark families on random SmartNICs under every placement and
  auto (median of 3), first idle, then while a sifting run (``--sift-particles`` particles,
  k=4 on all four SmartNICs, run again until the workload is done) loads them.

Run: flock /tmp/colony-heavy.lock python -m colony.bench.query_storm [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SQL = ("select *, power(vx, 2) + power(vy, 2) + power(vz, 2) as e, sqrt(abs(vx * vy)) as g "
       "from particles where x < 0.97")
LINKS_GBPS = {"nic0": 16.0, "nic1": 8.0, "nic2": 4.0, "nic3": 32.0}


def _config(models_dir: str, admission_limit: int, isolate: bool = False, pull_back: bool = False,
            measured_rate: bool = True):
    from colony.config.builders import default_dict
    from colony.config.schema import ColonyConfig
    d = default_dict()
    n = os.cpu_count() or 1
    for name, dev in d["devices"].items():
        dev["cores"] = [0] if dev.get("role") == "host" else [min(1, n - 1)]
        if name in LINKS_GBPS:
            dev["link_gbps"] = LINKS_GBPS[name]
    for i in range(4):
        d["pools"][f"particles_nic{i}"] = {"members": [f"nic{i}"], "policy": "tft"}
    d["services"] = {"query": {"devices": "all", "options": {"models_dir": models_dir, "isolate": isolate,
                                                             "admission_limit": admission_limit,
                                                             "pull_back": pull_back,
                                                             "measured_rate": measured_rate}}}
    return ColonyConfig.from_dict(d, source="<storm: pinned cores>")


def burst(clients: dict, placement: str, per_device: int, seed: int, sql: str = SQL) -> dict:
    """``per_device`` queries per client, each after a random 0-0.3 s delay, all at once: latency
    percentiles, makespan and how many were pushed back."""
    rng = np.random.Generator(np.random.SFC64(seed))
    jobs = [(d, float(rng.uniform(0, 0.3))) for d in clients for _ in range(per_device)]
    lat, placements, log = [], [], []
    lock = threading.Lock()
    t_burst = time.perf_counter()

    def one(job):
        dev, delay = job
        time.sleep(delay)
        t0 = time.perf_counter()
        r = clients[dev].query(sql, placement)
        took = time.perf_counter() - t0
        pred = (r.decision.get("predicted") or {}).get(r.placement) or {}
        load = r.decision.get("load") or {}
        with lock:
            lat.append(took)
            placements.append(r.placement)
            log.append({"device": dev, "start_s": t0 - t_burst, "placement": r.placement,
                        "reason": r.decision.get("reason"), "actual_s": took,
                        "predicted_s": pred.get("total"), "predicted_wait_s": pred.get("wait"),
                        "predicted_queue_s": pred.get("queue"), "predicted_contention_s": pred.get("contention"),
                        "host_backlog_s": (load.get("host") or {}).get("backlog_s"),
                        "device_backlog_s": (load.get("device") or {}).get("backlog_s"),
                        "host_rate": (load.get("host") or {}).get("rate"),
                        "device_rate": (load.get("device") or {}).get("rate"),
                        "device_slowdown": (load.get("device") or {}).get("slowdown"),
                        "host_slowdown": (load.get("host") or {}).get("slowdown"),
                        "exec_host_s": r.actual.get("exec_host"), "exec_s": r.actual.get("exec")})
    t0 = time.perf_counter()
    with ThreadPoolExecutor(len(jobs)) as ex:
        list(ex.map(one, jobs))
    return {"queries": len(jobs), "p50_s": float(np.median(lat)), "p99_s": float(np.percentile(lat, 99)),
            "mean_s": float(np.mean(lat)), "makespan_s": time.perf_counter() - t0,
            "pushed_back": sum(p != "down" for p in placements), "log": sorted(log, key=lambda x: x["start_s"])}


def spread(values: list[float]) -> dict:
    v = sorted(values)
    return {"min": v[0], "median": float(np.median(v)), "max": v[-1], "runs": values}


def _sift_load(c, members: list[str], particles: int, chunk: int, stop: threading.Event, done: list,
               tag: str = "") -> None:
    """Sifting runs of ``particles`` particles (k=4, every SmartNIC a PE), injected in chunks of
    ``chunk`` rows spread over the PEs and sifted as they arrive, one run after another until
    ``stop``: the co-located load. ``done`` gets (particles, seconds) per finished run."""
    from colony.data import uniform
    from colony.drivers.sift import Sifter
    n_run = 0
    while not stop.is_set():
        t0 = time.time()
        s = Sifter(c, members, k=4, durable=False, run=f"query-load{tag}-{n_run}")
        seq = 0
        for lo in range(0, particles, chunk):
            if stop.is_set():
                break
            n = min(chunk, particles - lo)
            wave = uniform(n, seed=1000 * n_run + seq, start_id=lo)     # 10 M distinct particles per run
            step = -(-n // len(members))
            for i, m in enumerate(members):
                s.inject(wave.slice(i * step, step), m, source=f"rank{i}", seq=seq)
            s.run()
            seq += 1
        done.append({"particles": min(particles, seq * chunk), "seconds": time.time() - t0,
                     "complete": seq * chunk >= particles})
        n_run += 1


WHERE_SQL = {"wide": SQL, "narrow": "select id, x, y from particles where x < 0.05"}


def where(links, host: str, repeats: int) -> dict:
    """Where a query's time goes on each side, forced down and forced back, per SmartNIC:
    a bare call into the device's process (``health``), planning there (``explain``), and
    the phases of ``execute``: before the hand-over (plan, read the objects), the hand-over
    call less the host's own time (serializing the objects in the device's process, the
    paced link, Ray's transport), the host's time, and the client's side. Medians."""
    from colony.drivers.query import QueryClient
    from colony.query.plan import TableSpec
    rows: dict = {}
    for label, sql in WHERE_SQL.items():
        for i in range(4):
            dev = f"nic{i}"
            cl = QueryClient(links, host, {"particles": TableSpec("particles", f"particles_{dev}")})
            plan_bytes, _, used = cl._plan_used(sql)
            tables = cl._bound(used)
            for _ in range(repeats):
                rec: dict = {}
                t0 = time.perf_counter()
                links.call(dev, "query", "health")
                rec["bare_call_s"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                links.call(dev, "query", "explain", plan_bytes, tables, "back")
                rec["explain_s"] = time.perf_counter() - t0
                for pl in ("back", "down"):
                    t0 = time.perf_counter()
                    r = links.call(dev, "query", "execute", plan_bytes, tables, pl, None, None, host)
                    total = time.perf_counter() - t0
                    a = r["actual"]
                    rec[f"{pl}_total_s"] = total
                    rec[f"{pl}_device_s"] = a["device_total"]
                    rec[f"{pl}_client_side_s"] = total - a["device_total"]
                    if pl == "back":
                        h = r["hosted"]
                        rec["back_bytes"] = a["bytes"]
                        rec["back_before_handover_s"] = a["device_total"] - a["to_host"]
                        rec["back_handover_less_host_s"] = a["to_host"] - h["host_total"]
                        rec["back_host_s"] = h["host_total"]
                        rec["back_link_paced_s"] = a["bytes"] * 8 / (LINKS_GBPS[dev] * 1e9)
                        rec["back_host_pull_s"] = h.get("pull_s", 0.0)     # inside the hand-over, before host_s
                    else:
                        rec.update(down_exec_s=a["exec"], down_deser_s=a["deser"])
                rows.setdefault(label, {}).setdefault(dev, []).append(rec)
    out: dict = {}
    for label, per in rows.items():
        recs = [r for rs in per.values() for r in rs]
        out[label] = {k: float(np.median([r[k] for r in recs])) for k in recs[0]}
        out[label]["per_device_total_s"] = {d: {"back": float(np.median([r["back_total_s"] for r in rs])),
                                                "down": float(np.median([r["down_total_s"] for r in rs]))}
                                            for d, rs in per.items()}
    return out


def mixed(links, host: str, queries: list[dict], repeats: int, seed: int) -> dict:
    from colony.drivers.query import QueryClient
    from colony.drivers.workload import run_one, summarize
    from colony.query.plan import TableSpec
    rng = np.random.Generator(np.random.SFC64(seed))
    clients = {f"nic{i}": QueryClient(links, host, {"particles": TableSpec("particles", f"particles_nic{i}")})
               for i in range(4)}
    recs = []
    for q in queries:
        dev = f"nic{int(rng.integers(4))}"
        rec = run_one(clients[dev], q["sql"], repeats)
        rec.update(device=dev, family=q["family"], held_out=q["held_out"])
        recs.append(rec)
    return {"summary": summarize(recs), "records": recs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="bench/results/query_storm.json")
    ap.add_argument("--rows", type=int, default=200_000, help="particles per SmartNIC")
    ap.add_argument("--per-device", type=int, default=8)
    ap.add_argument("--admission-limit", type=int, default=2)
    ap.add_argument("--mixed-per-family", type=int, default=2, help="mixed workload: queries per family")
    ap.add_argument("--rounds", type=int, default=3, help="storm: bursts per policy (order rotated)")
    ap.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=True,
                    help="run each query in a worker process (the service default, at most max_workers per "
                         "device at once); --no-isolate runs queries in the devices' own threads")
    ap.add_argument("--pull-back", action="store_true",
                    help="push-back objects are pulled by the host from the SmartNIC's read endpoint, whose "
                         "threads run outside the SmartNIC's core (emulated DMA), instead of sent in its call")
    ap.add_argument("--measured-rate", action=argparse.BooleanOptionalAction, default=True,
                    help="backlogs in measured seconds (default); --no-measured-rate keeps them in predicted "
                         "seconds (the ablation)")
    ap.add_argument("--mixed-rounds", type=int, default=3, help="mixed workload: idle + sifting pairs")
    ap.add_argument("--sections", default="storm,mixed", help="comma list of storm, mixed, where")
    ap.add_argument("--where-repeats", type=int, default=3, help="where: runs per query and SmartNIC")
    ap.add_argument("--sift-particles", type=int, default=10_000_000, help="particles per sifting run (load)")
    ap.add_argument("--sift-chunk", type=int, default=1_000_000, help="particles injected and sifted at a time")
    a = ap.parse_args()
    sections = set(a.sections.split(","))
    import colony as colony_pkg
    from colony.data import uniform
    from colony.drivers.emulated import DEFAULT_MODELS_DIR
    from colony.drivers.query import QueryClient, ensure_calibrated
    from colony.machine import describe
    from colony.query.plan import TableSpec
    cfg = _config(DEFAULT_MODELS_DIR + "-pinned" + ("" if a.isolate else "-inthread") + ("-pull" if a.pull_back else ""),
                  a.admission_limit, a.isolate, a.pull_back, a.measured_rate)
    c = colony_pkg.connect(cfg, temp_dir="/tmp/ray-colony-storm")
    out: dict = {"machine": describe(), "config": vars(a), "sql": SQL,
                 "cores": {d.name: list(d.cores or []) for d in cfg.devices.values()}}
    try:
        host = next(d.name for d in c.devices() if d.role == "host")
        for i in range(4):
            t = uniform(a.rows, seed=i)
            for j in range(4):
                c.put(f"particles_nic{i}", f"part-{j:05d}", t.slice(j * a.rows // 4, a.rows // 4))
        links = c                     # the runtime paces every call on the devices' links
        t0 = time.time()
        out["calibrated"] = ensure_calibrated(links, host, 60, 400_000, cover=True)
        out["calibration_s"] = time.time() - t0

        def clients(storm=None, send_load=True):
            return {f"nic{i}": QueryClient(links, host, {"particles": TableSpec("particles", f"particles_nic{i}")},
                                           storm, send_load) for i in range(4)}
        policies = {"naive": (clients(send_load=False), "auto"),
                    "load_aware": (clients(), "auto"),
                    "admission": (clients({"mode": "admission", "limit": a.admission_limit}), "auto"),
                    "probabilistic": (clients({"mode": "probabilistic", "beta": 0.5}), "auto"),
                    "utilization": (clients({"policy": "utilization"}), "auto"),
                    "always_down": (clients(), "down"), "always_back": (clients(), "back")}
        out["summary"] = {}
        if "storm" in sections:
            out["storm"] = storm_rounds(links, host, policies, a, out)
            out["summary"].update(out["storm"]["summary"])
            save(a.json, out)
        if sections & {"mixed", "where"}:
            members = [f"nic{i}" for i in range(4)]
            c.place("sift", members)
        if "where" in sections:
            out["where"] = {"idle": where(links, host, a.where_repeats)}
            print("where idle", out["where"]["idle"], flush=True)
            stop, done = threading.Event(), []
            th = threading.Thread(target=_sift_load, args=(c, members, a.sift_particles, a.sift_chunk, stop, done,
                                                                 "-where"), daemon=True)
            th.start()
            time.sleep(5.0)
            try:
                out["where"]["sifting"] = where(links, host, a.where_repeats)
            finally:
                stop.set()
                th.join(timeout=180)
            out["where"]["sift_load"] = list(done)
            print("where sifting", out["where"]["sifting"], flush=True)
            save(a.json, out)
        if "mixed" not in sections:
            return
        from importlib import resources

        from colony.bench.query_families import read_families
        fams = read_families(str(resources.files("colony.bench") / "queries" / "families.sql"))
        picked, seen = [], {}
        for q in fams:
            if seen.get(q["family"], 0) < a.mixed_per_family:
                seen[q["family"]] = seen.get(q["family"], 0) + 1
                picked.append(q)
        out["mixed_rounds"] = []
        for r in range(a.mixed_rounds):
            rd: dict = {"idle": mixed(links, host, picked, 3, seed=11 + r)}
            print(r, "mixed idle", _brief(rd["idle"]["summary"]), flush=True)
            stop, done = threading.Event(), []
            th = threading.Thread(target=_sift_load, args=(c, members, a.sift_particles, a.sift_chunk, stop, done,
                                                                 f"-r{r}"), daemon=True)
            th.start()
            time.sleep(5.0)                       # let the first chunk reach the devices
            try:
                rd["sifting"] = mixed(links, host, picked, 3, seed=11 + r)
            finally:
                stop.set()
                th.join(timeout=180)              # the chunk in flight finishes before the next idle round
            rd["sifting"]["sift_load"] = {"particles_per_run": a.sift_particles, "chunk": a.sift_chunk,
                                          "k": 4, "runs": list(done), "members": members}
            print(r, "mixed sifting", _brief(rd["sifting"]["summary"]), flush=True)
            out["mixed_rounds"].append(rd)
            save(a.json, out)
        out["summary"]["mixed"] = {
            phase: {pol: spread([rd[phase]["summary"]["total_s"][pol] / rd[phase]["summary"]["total_s"]["always_down"]
                                 for rd in out["mixed_rounds"]])
                    for pol in ("auto", "always_back", "split_only", "oracle")}
            for phase in ("idle", "sifting")}
        out["summary"]["mixed"]["note"] = "total seconds over the workload, relative to always-down (same round)"
    finally:
        out["load_avg_end"] = os.getloadavg()
        save(a.json, out)
        c.shutdown()


def _brief(summary: dict) -> dict:
    t = summary["total_s"]
    return {"auto/down": round(t["auto"] / t["always_down"], 3), "back/down": round(t["always_back"] / t["always_down"], 3),
            "oracle/down": round(t["oracle"] / t["always_down"], 3), "accuracy": summary.get("decision_accuracy")}


def storm_rounds(links, host: str, policies: dict, a, out: dict) -> dict:
    """Every policy once per round, the order rotated each round; p50/p99 spread per policy.
    First untimed bursts forced down and forced back (twice each), so that no policy's burst
    pays for starting the devices' and the host's worker processes (whichever ran first did),
    and the measured rates describe warm workers."""
    names = list(policies)
    out["warmup"] = {}
    for i in range(2):      # twice: the first pays the worker starts, the second is what the rates remember
        for name in ("always_down", "always_back"):
            cl, pl = policies[name]
            w = burst(cl, pl, a.per_device, seed=5 + i)
            out["warmup"][f"{name}_{i}"] = {k: v for k, v in w.items() if k != "log"}
            print("warm-up", name, i, out["warmup"][f"{name}_{i}"], flush=True)
    rounds = []
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        res = {}
        for name in order:
            cl, pl = policies[name]
            links.call(host, "query", "set_admission_limit", a.admission_limit)
            res[name] = burst(cl, pl, a.per_device, seed=7 + r)
            if name not in ("naive", "load_aware"):
                res[name].pop("log")                # the engine's own choices are what the log is for
            print(r, name, {k: v for k, v in res[name].items() if k != "log"}, flush=True)
        rounds.append({"order": order, "policies": res})
    per = {n: {"p50_s": spread([rd["policies"][n]["p50_s"] for rd in rounds]),
               "p99_s": spread([rd["policies"][n]["p99_s"] for rd in rounds]),
               "pushed_back": [rd["policies"][n]["pushed_back"] for rd in rounds]} for n in names}
    static = min(("always_down", "always_back"), key=lambda n: per[n]["p99_s"]["median"])
    la = per["load_aware"]["p99_s"]
    wins = sum(rd["policies"]["load_aware"]["p99_s"] <= min(rd["policies"]["always_down"]["p99_s"],
                                                           rd["policies"]["always_back"]["p99_s"]) for rd in rounds)
    summary = {"best_static": static, "best_static_p99_s": per[static]["p99_s"]["median"],
               "load_aware_p99_s": la["median"], "load_aware_le_best_static": la["median"] <= per[static]["p99_s"]["median"],
               "rounds_load_aware_le_best_static_of_round": f"{wins}/{len(rounds)}"}
    return {"rounds": rounds, "per_policy": per, "summary": summary}


def save(path: str, out: dict) -> None:
    """Written after every section, so a run cut short keeps what it measured."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
