"""Query deadlines (``python -m colony.bench.deadline`` -> bench/results/query_deadline.json): how soon the work stops after its deadline, and what the worker process costs.

Both measured on an in-process colony (LocalColony, SmartNIC with a 1-thread budget):
- stop: a self cross join that runs ~13 s, with deadlines of 0.25-2 s; the time from the
  call to the raised QueryTimeout (the worker is killed and reaped before it is raised),
  isolated (worker process) and in-thread (the old behaviour, deadline checked between
  output batches);
- overhead: the corpus queries pushed down on 1M rows, isolated and in-thread, interleaved,
  same repeats, wall time of the service call.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from colony.bench.common import spread
from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.errors import QueryTimeout
from colony.query import plan as qplan
from colony.runtime.local import LocalColony

SLOW = "select count(*) as n from particles a, particles b where a.x < b.x"


def _colony(rows: int, isolate: bool, timeout_s: float, seed: int = 1):
    lc = LocalColony(devices_config({"nic0": {"role": "smartnic", "threads": 1, "pools": ["particles"],
                               "services": {"query": {"timeout_s": timeout_s, "isolate": isolate,
                                                      "max_result_bytes": 1 << 31}}}}))
    t = uniform(rows, seed=seed)
    for i in range(4):
        lc.store("nic0").put("particles", f"o{i}", t.slice(i * rows // 4, rows // 4))
    return lc, t


def _call(lc, plan) -> float:
    t0 = time.perf_counter()
    try:
        lc.call("nic0", "query", "execute", plan, {"particles": "particles"}, "down")
    except QueryTimeout:
        pass
    return time.perf_counter() - t0


def stop_times(deadlines=(0.25, 0.5, 1.0, 2.0), repeats: int = 5, inthread_repeats: int = 3) -> dict:
    out = {"query": SLOW, "rows": 40_000, "isolated": {}, "in_thread": {}}
    for d in deadlines:
        lc, t = _colony(40_000, True, d)
        plan = qplan.to_substrait(SLOW, {"particles": t.schema})
        _call(lc, qplan.to_substrait("select count(*) from particles", {"particles": t.schema}))  # a warm worker
        xs = []
        for _ in range(repeats):
            xs.append(_call(lc, plan))
            time.sleep(0.3)                      # its replacement (started at the kill) is up
        s = spread(xs)
        s["overrun_median_pct"] = (s["median"] / d - 1) * 100
        s["overrun_max_pct"] = (s["max"] / d - 1) * 100
        out["isolated"][str(d)] = s
    lc, t = _colony(40_000, False, 1.0)
    plan = qplan.to_substrait(SLOW, {"particles": t.schema})
    s = spread([_call(lc, plan) for _ in range(inthread_repeats)])
    s["overrun_median_pct"] = (s["median"] / 1.0 - 1) * 100
    out["in_thread"]["1.0"] = s
    return out


def overhead(rows: int = 1_000_000, repeats: int = 5, queries: int = 8) -> dict:
    corpus = Path(__file__).resolve().parent / "queries" / "corpus.sql"
    sqls = [s.strip() for s in corpus.read_text().splitlines() if s.strip() and not s.startswith("--")][:queries]
    iso, _ = _colony(rows, True, 600.0)
    thr, t = _colony(rows, False, 600.0)
    recs = []
    for sql in sqls:
        plan = qplan.to_substrait(sql, {"particles": t.schema})
        _call(iso, plan), _call(thr, plan)       # warm both
        a, b = [], []
        for _ in range(repeats):                 # interleaved, same repeats
            a.append(_call(iso, plan))
            b.append(_call(thr, plan))
        ra, rb = spread(a), spread(b)
        recs.append({"sql": sql, "isolated_s": ra, "in_thread_s": rb,
                     "overhead_ms_median": (ra["median"] - rb["median"]) * 1e3,
                     "ratio_median": ra["median"] / rb["median"]})
    return {"rows": rows, "stored_bytes": sum(e.nbytes for e in thr.store("nic0").entries("particles")),
            "queries": recs,
            "overhead_ms_median_of_queries": statistics.median(r["overhead_ms_median"] for r in recs),
            "ratio_median_of_queries": statistics.median(r["ratio_median"] for r in recs)}


if __name__ == "__main__":
    import time as _t

    from colony.bench.common import entry, write_json
    entry("colony.bench.deadline", __doc__)
    from colony.machine import describe
    t0 = _t.time()
    res = {"machine": describe(), "colony": "LocalColony in-process; nic0 emulated SmartNIC, 1-thread budget",
           "stop": stop_times(), "overhead": overhead()}
    res["wall_s"] = _t.time() - t0
    write_json("bench/results/query_deadline.json", res)
    s = res["stop"]
    for d, v in s["isolated"].items():
        print(f"deadline {d} s: stopped after {v['min']:.3f}/{v['median']:.3f}/{v['max']:.3f} s "
              f"(overrun median {v['overrun_median_pct']:+.1f}%, max {v['overrun_max_pct']:+.1f}%)")
    print("in-thread, deadline 1.0 s:", s["in_thread"]["1.0"])
    o = res["overhead"]
    print(f"overhead: median {o['overhead_ms_median_of_queries']:.1f} ms, ratio {o['ratio_median_of_queries']:.2f}x")
