"""Benchmark of in-transit queries and the push-down / push-back decision engine.

Sections (see docs/query.md): cardinality (Q1-Q8 shapes + random templated queries),
held-out prediction error of every cost model, case studies CQ1/CQ2 on 6,177,731 rows,
a mixed workload on the emulated colony (auto vs static policies vs oracle), and a
push-back storm (4 devices x 16 concurrent queries, with/without storm control).

Runs on the embedded Ray colony (1 host + 4 emulated SmartNICs, links paced by the runtime)
by default; ``--local`` runs the same sections on the in-process emulated colony.

Run: flock /tmp/colony-heavy.lock python -m colony.bench.query [--quick] [--local]
Writes bench/results/query.json.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from importlib import resources

from rich.console import Console
from rich.progress import Progress

from colony.cost.calibrate import measure_run, random_query
from colony.cost.models import LEARNERS, _x, ape
from colony.data import PARTICLE_SCHEMA, uniform
from colony.query import plan as qplan
from colony.machine import describe as machine
from colony.drivers.query import QueryClient, calibrate_colony
from colony.drivers.emulated import NIC_LINKS_GBPS, emulated_colony, load_particles
from colony.query.estimate import estimate
from colony.query.plan import TableSpec
from colony.query.stats import TableStats
from colony.drivers.workload import read_queries, run_one, summarize
from colony.bench.query_storm import SQL as STORM_SQL, burst

con = Console()

Q = {
    "Q1": "select * from particles where x >= 0.7 and y < 0.3 and z <= 0.1",
    "Q2": "select * from particles where x >= 0.7 and power(vx, 2) + power(vy, 2) + power(vz, 2) <= 10591.0",
    "Q3": ("select x, power(vx, 2) + power(vy, 2) + power(vz, 2) as square_of_velocity from particles "
           "where power(vx, 2) + power(vy, 2) + power(vz, 2) <= 1310.0"),
    "Q4": "select * from particles where 3 + vx * 2 <= 100 or sqrt(abs(vy)) > 9",
    "Q5": ("select * from (select * from particles where x >= 0.7 union all "
           "select * from particles_2 where y < 0.3) where z <= 0.1"),
    "Q6": ("select count(column_id), min(column_round_x), max(column_round_x) from (select id as column_id, "
           "round(x, 2) as column_round_x, particle_id & 15 as column_bit_wise_and_particle_id from particles) "
           "group by column_bit_wise_and_particle_id"),
    "Q7": "select count(id) as column_hash_count_id from particles group by particle_id & 15",
    "Q8": ("select count(id) as column_hash_count_id from particles where x >= 0.7 and y < 0.3 and z <= 0.1 "
           "group by particle_id"),
}


def pct(a, q):
    return float(np.percentile(a, q)) if len(a) else float("nan")


def cardinality(rows: int, n_random: int, seed: int) -> dict:
    t = uniform(rows, seed=seed, n_particles=rows // 2)
    t2 = uniform(rows // 2, seed=seed + 1, n_particles=rows // 4)
    st, st2 = TableStats.build([t]), TableStats.build([t2])
    schemas = {"particles": PARTICLE_SCHEMA, "particles_2": PARTICLE_SCHEMA}
    out = {}
    for qid, sql in Q.items():
        pb = qplan.to_substrait(sql, schemas)
        c0 = time.process_time()
        e = estimate(pb, {"particles": st, "particles_2": st2})
        est_cpu = time.process_time() - c0
        ctx = qplan.execution_context(1)
        qplan.register(ctx, "particles", [[t]])
        qplan.register(ctx, "particles_2", [[t2]])
        c0 = time.process_time()
        actual = qplan.execute(ctx, pb).num_rows
        exec_cpu = time.process_time() - c0
        out[qid] = {"sql": sql, "input_rows": rows, "estimated": e.rows, "actual": actual,
                    "err": abs(e.rows - actual) / max(actual, 1), "cost_pct": 100 * est_cpu / max(exec_cpu, 1e-9)}
    rng = np.random.Generator(np.random.SFC64(seed + 7))
    rand = []
    tables = []
    for i in range(6):
        n = int(np.exp(rng.uniform(np.log(50_000), np.log(rows))))
        tt = uniform(n, seed=seed + 100 + i, n_particles=max(1, int(n * rng.uniform(0.05, 1))))
        tables.append((tt, TableStats.build([tt])))
    for _ in range(n_random):
        tt, s = tables[int(rng.integers(len(tables)))]
        tid, sql = random_query(rng)
        pb = qplan.to_substrait(sql, {"particles": PARTICLE_SCHEMA})
        c0 = time.process_time()
        e = estimate(pb, {"particles": s})
        est_cpu = time.process_time() - c0
        ctx = qplan.execution_context(1)
        qplan.register(ctx, "particles", [[tt]])
        c0 = time.process_time()
        a = qplan.execute(ctx, pb).num_rows
        exec_cpu = time.process_time() - c0
        rand.append({"template": tid, "sql": sql, "estimated": e.rows, "actual": a,
                     "err": abs(e.rows - a) / max(a, 1), "cost_pct": 100 * est_cpu / max(exec_cpu, 1e-9)})
    qe = [v["err"] for v in out.values()]
    re_ = [r["err"] for r in rand]
    return {"q1_q8": out, "random": rand,
            "q_err_median": float(np.median(qe)), "q_err_p90": pct(qe, 90),
            "random_err_median": float(np.median(re_)), "random_err_p90": pct(re_, 90),
            "cost_pct_median": float(np.median([v["cost_pct"] for v in out.values()] + [r["cost_pct"] for r in rand]))}


def prediction(threads_dev: int, n_cal: int, n_test: int, max_rows: int, seed: int, colony) -> dict:
    """Both exec learners, ser time/bytes and transfer, on held-out runs never seen in fitting."""
    from colony.cost.calibrate import calibrate
    res = {}
    for label, threads in (("smartnic", threads_dev), ("host", 2)):
        models, runs = calibrate(label, threads, n_runs=n_cal, max_rows=max_rows, seed=seed)
        X = np.stack([_x(r["ops"]) for r in runs])
        T = np.array([r["threads"] for r in runs], float)
        y = np.array([r["exec_s"] for r in runs])
        learners = {name: fit(X, T, y, seed) for name, fit in LEARNERS.items()}   # kept one + baselines
        rng = np.random.Generator(np.random.SFC64(seed + 99))
        test = []
        for i in range(n_test):
            n = int(np.exp(rng.uniform(np.log(20_000), np.log(max_rows))))
            tt = uniform(n, seed=seed + 5000 + i)
            _, sql = random_query(rng)
            test.append(measure_run(sql, [tt], TableStats.build([tt]), int(rng.integers(1, threads + 1))))
        Xt = np.stack([_x(r["ops"]) for r in test])
        Tt = np.array([r["threads"] for r in test], float)
        yt = np.array([r["exec_s"] for r in test])
        ex = {}
        for name, m in learners.items():
            e = ape(m.predict(Xt, Tt), yt)
            ex[name] = {"ape_median": float(np.median(e)), "ape_p90": pct(e, 90), "mape": float(np.mean(e))}
        kept = min(ex, key=lambda k: ex[k]["ape_median"])
        sb = ape(models.ser_bytes.predict([r["rows"] * r["width"] for r in test]), [r["bytes"] for r in test])
        stime = ape(models.ser_time.predict([r["bytes"] for r in test]), [r["ser_s"] for r in test])
        res[label] = {"threads": threads, "calibration_runs": n_cal, "held_out_runs": n_test, "exec": ex,
                      "kept_on_held_out": kept, "kept_by_calibration_split": models.report["kept"],
                      "ser_bytes": {"ape_median": float(np.median(sb)), "ape_p90": pct(sb, 90)},
                      "ser_time": {"ape_median": float(np.median(stime)), "ape_p90": pct(stime, 90)}}
    # transfer: link model installed by calibrate_colony vs fresh timed fetches
    tr = {}
    for dev in ("nic0", "nic2"):
        m = colony.call(dev, "query", "models_json")["link"]
        rng = np.random.Generator(np.random.SFC64(seed + 3))
        sizes = [int(np.exp(rng.uniform(np.log(4_000), np.log(32 << 20)))) for _ in range(16)]
        act = []
        for s in sizes:
            t0 = time.perf_counter()
            colony.call(dev, "query", "blob", s)
            act.append(time.perf_counter() - t0)
        e = ape(m["a"] + m["b"] * np.array(sizes, float), act)
        tr[dev] = {"ape_median": float(np.median(e)), "ape_p90": pct(e, 90), "n": len(sizes)}
    res["transfer"] = tr
    return res


def case_studies(colony, client_for, rows: int, seed: int, host: str = "host") -> dict:
    keys = _put_particles(colony, "nic1", rows, 1, seed, "cq_particles")
    client = QueryClient(colony, host, {"particles": TableSpec("particles", "cq_particles", "*")})
    out = {}
    for name, sql in (("CQ1", "select * from particles where x >= 0.7 and y < 0.3 and z <= 0.1"),
                      ("CQ2", "select * from particles where x >= 0.5 and y < 0.55 and z <= 0.67")):
        ex = client.query(sql, "auto", explain=True)
        rec = {"sql": sql, "rows_in": rows, "est_rows": ex.est_rows, "decision": ex.placement,
               "reason": ex.decision["reason"], "predicted": ex.decision["predicted"], "actual": {}}
        for pl in ("down", "back"):
            best = None
            for _ in range(2):
                r = client.query(sql, pl)
                if best is None or r.actual["total"] < best.actual["total"]:
                    best = r
            rec["actual"][pl] = best.actual
            rec["rows"] = best.table.num_rows
            rec.setdefault("total_ape", {})[pl] = float(ape(rec["predicted"][pl]["total"], best.actual["total"]))
        rec["oracle"] = min(rec["actual"], key=lambda k: rec["actual"][k]["total"])
        out[name] = rec
    for k in keys:
        (colony.store("nic1").drop if hasattr(colony, "store") else colony.drop)("cq_particles", k)
    return out


def _put_particles(colony, device: str, rows: int, objects: int, seed: int, pool: str) -> list[str]:
    """``rows`` uniform particles as ``objects`` objects in ``pool`` on ``device`` (in process
    or on a Ray colony: :func:`~colony.drivers.emulated.load_particles`); their keys."""
    load_particles(colony, device, rows, objects=objects, seed=seed, pool=pool)
    return [f"part-{i:05d}" for i in range(objects)]


def ray_colony(links_gbps: list[float]):
    """The embedded default (Ray) with the query service on every device, pools
    ``particles_nic<i>`` on SmartNIC i, ``cq_particles`` on nic1, and the links paced."""
    import colony as colony_pkg
    from colony.config.builders import embedded
    nics = [f"nic{i}" for i in range(len(links_gbps))]
    pools = {f"particles_{n}": [n] for n in nics}
    pools["cq_particles"] = ["nic1"]
    cfg = embedded(links_gbps=dict(zip(nics, links_gbps)), pools=pools, services={"query": {"devices": "all"}})
    c = colony_pkg.connect(cfg, temp_dir="/tmp/ray-colony-bench-query")
    return c, next(d.name for d in c.devices() if d.role == "host")


def mixed(colony, client_for, n_queries: int, seed: int, extra: list[str]) -> dict:
    rng = np.random.Generator(np.random.SFC64(seed + 11))
    recs = []
    with Progress(transient=True, console=con) as prog:
        task = prog.add_task("mixed workload", total=n_queries)
        for i in range(n_queries):
            dev = f"nic{int(rng.integers(4))}"
            if extra and rng.random() < 0.25:
                sql = extra[int(rng.integers(len(extra)))]
            else:
                _, sql = random_query(rng)
            r = run_one(client_for(dev), sql, repeats=2)
            r["device"] = dev
            recs.append(r)
            prog.update(task, completed=i + 1)
    return {"summary": summarize(recs), "records": recs}


def storm(colony, client_for, per_device: int, seed: int, admission_limit: int, host: str = "host") -> dict:
    sql = STORM_SQL
    out = {}
    # none: the naive engine (no load report, no control); load: the load report's wait term
    # only; admission / probabilistic: the two storm controls (with the load report)
    for mode in ("none", "load", "admission", "probabilistic"):
        colony.call(host, "query", "set_admission_limit", admission_limit)
        pol = None if mode in ("none", "load") else {"mode": mode, "limit": admission_limit, "beta": 0.5}
        clients = {f"nic{d}": client_for(f"nic{d}", storm=pol, send_load=(mode != "none")) for d in range(4)}
        out[mode] = burst(clients, "auto", per_device, seed, sql=sql)
    # references: everything kept on the devices / everything pushed back
    clients = {f"nic{d}": client_for(f"nic{d}") for d in range(4)}
    for pl in ("down", "back"):
        lat = []

        def run(dev, pl=pl, lat=lat):
            t0 = time.perf_counter()
            clients[dev].query(sql, pl)
            lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(4 * per_device) as ex:
            list(ex.map(run, [f"nic{d}" for d in range(4) for _ in range(per_device)]))
        out["always_" + pl] = {"queries": 4 * per_device, "p50_s": float(np.median(lat)), "p99_s": pct(lat, 99),
                               "mean_s": float(np.mean(lat)), "makespan_s": time.perf_counter() - t0}
    return out


CORPUS = resources.files("colony.bench") / "queries" / "corpus.sql"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    ap.add_argument("--out", default="bench/results/query.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--local", action="store_true", help="in-process emulated colony instead of the Ray colony")
    a = ap.parse_args()
    q = a.quick
    cfg = {"card_rows": 200_000 if q else 1_000_000, "card_random": 30 if q else 100,
           "cal_runs": 40 if q else 80, "test_runs": 20 if q else 50, "cal_max_rows": 300_000 if q else 1_000_000,
           "cq_rows": 500_000 if q else 6_177_731, "mixed": 40 if q else 200,
           "device_rows": [100_000, 200_000, 400_000, 800_000] if not q else [50_000, 100_000, 150_000, 200_000],
           "storm_per_device": 16, "admission_limit": 2,
           "links_gbps": list(NIC_LINKS_GBPS), "host_threads": 2, "nic_threads": 1}
    t_all = time.time()
    import subprocess
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    result = {"config": cfg, "machine": machine(), "commit": commit}

    def save():
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1, default=str)

    def section(name, fn):
        con.print(f"[bold]{name}[/]")
        t0 = time.time()
        try:
            result[name] = fn()
        except Exception as e:  # noqa: BLE001 - keep the other sections
            import traceback
            result[name] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-2000:]}
        result.setdefault("section_wall_s", {})[name] = time.time() - t0
        save()
        return result[name]
    card = section("cardinality", lambda: cardinality(cfg["card_rows"], cfg["card_random"], a.seed))
    con.print({k: v for k, v in card.items() if k not in ("q1_q8", "random")})

    if a.local:
        colony, host = emulated_colony(4, cfg["host_threads"], cfg["nic_threads"], cfg["links_gbps"]), "host"
    else:
        colony, host = ray_colony(cfg["links_gbps"])
    try:
        _sections(colony, host, cfg, a, section, result, card, t_all)
        save()
    finally:
        if not a.local:
            colony.shutdown()


def _sections(colony, host, cfg, a, section, result, card, t_all) -> None:
    q = a.quick
    for i, n in enumerate(cfg["device_rows"]):
        _put_particles(colony, f"nic{i}", n, 4, a.seed + i, f"particles_nic{i}")
    section("calibration", lambda: {d: m["report"] for d, m in calibrate_colony(
        colony, host, n_runs=cfg["cal_runs"], max_rows=cfg["cal_max_rows"], seed=a.seed).items()})

    def client_for(dev, storm=None, send_load=True):
        return QueryClient(colony, host, {"particles": TableSpec("particles", f"particles_{dev}", "*")}, storm,
                           send_load)

    pred = section("prediction", lambda: prediction(cfg["nic_threads"], cfg["cal_runs"], cfg["test_runs"],
                                                    cfg["cal_max_rows"], a.seed + 1, colony))
    con.print(pred)
    cs = section("case_studies", lambda: case_studies(colony, client_for, cfg["cq_rows"], a.seed, host))
    for k, v in cs.items():
        if isinstance(v, dict) and "actual" in v:
            con.print(k, v["decision"], v["oracle"], {p: round(v["actual"][p]["total"], 4) for p in v["actual"]},
                      {p: round(v["predicted"][p]["total"], 4) for p in v["predicted"]})
    extra = read_queries(str(CORPUS))
    mx = section("mixed", lambda: mixed(colony, client_for, cfg["mixed"], a.seed, extra))
    con.print(mx.get("summary", mx))
    st = section("storm", lambda: storm(colony, client_for, cfg["storm_per_device"], a.seed, cfg["admission_limit"],
                                        host))
    con.print(st)
    try:
        summary(result, card, pred, mx, st, q, t_all, a.local)
    except Exception as e:  # noqa: BLE001
        result["summary"] = {"error": f"a section failed, see its entry: {type(e).__name__}: {e}"}
    con.print(result["summary"])


def summary(result, card, pred, mx, st, q, t_all, local=False):
    kept = pred["smartnic"]["kept_by_calibration_split"]        # what the device's own CV kept
    s = mx["summary"]
    result["summary"] = {
        "auto_over_oracle": s["auto_over_oracle"], "auto_over_best_static": s["auto_over_best_static"],
        "auto_chosen_over_oracle": s["auto_chosen_over_oracle"], "best_static": s["best_static"],
        "decision_accuracy": s["decision_accuracy"], "decisions_scored": s["decisions_scored"],
        "exec_time_model_kept": kept,
        "exec_time_mape_median": pred["smartnic"]["exec"][kept]["ape_median"],
        "exec_time_ape_p90": pred["smartnic"]["exec"][kept]["ape_p90"],
        "exec_time_ape_median_nnls": pred["smartnic"]["exec"]["nnls"]["ape_median"],
        "exec_time_ape_median_ops": pred["smartnic"]["exec"]["ops"]["ape_median"],
        "exec_time_ape_median_forest": pred["smartnic"]["exec"]["forest"]["ape_median"],
        "ser_time_ape_median": pred["smartnic"]["ser_time"]["ape_median"],
        "ser_bytes_ape_median": pred["smartnic"]["ser_bytes"]["ape_median"],
        "transfer_ape_median": float(np.median([v["ape_median"] for v in pred["transfer"].values()])),
        "cardinality_err_median": card["q_err_median"], "cardinality_err_p90": card["q_err_p90"],
        "cardinality_random_err_median": card["random_err_median"],
        "cardinality_random_err_p90": card["random_err_p90"],
        "estimation_cost_pct_median": card["cost_pct_median"],
        "storm_p99_none_s": st["none"]["p99_s"], "storm_p99_load_aware_s": st["load"]["p99_s"],
        "storm_p99_admission_s": st["admission"]["p99_s"], "storm_p99_always_back_s": st["always_back"]["p99_s"],
        "storm_p99_probabilistic_s": st["probabilistic"]["p99_s"], "storm_p99_always_down_s": st["always_down"]["p99_s"],
        "targets": {"auto_over_oracle<=1.10": s["auto_over_oracle"] <= 1.10,
                    "auto_over_best_static<=0.85": s["auto_over_best_static"] <= 0.85,
                    "decision_accuracy>=0.90": s["decision_accuracy"] >= 0.90},
        "wall_s": time.time() - t_all, "quick": q,
        "colony": ("emulated in-process: LocalColony host (2 threads) + 4 SmartNICs (1 thread), links paced"
                   if local else "embedded Ray colony (1 host + 4 emulated SmartNICs), links paced by the runtime"),
    }


if __name__ == "__main__":
    main()
