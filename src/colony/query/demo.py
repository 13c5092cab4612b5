"""`query_demo`: a few in-transit queries with their decisions, predicted vs actual times, and a figure."""

from __future__ import annotations

import os

DEMO_QUERIES = [
    ("CQ1 (selective filter)", "select * from particles where x >= 0.7 and y < 0.3 and z <= 0.1"),
    ("wide filter", "select * from particles where x < 0.95"),
    ("group-by aggregate", "select particle_id & 15 as g, count(*) as n, avg(vx) as v from particles "
                           "where y < 0.5 group by g"),
    ("join (unsupported by estimator)", "select a.x from particles a join particles b on a.id = b.id "
                                         "where a.x < 0.001"),
]


def _has_query_service(colony) -> bool:
    try:
        return all(colony.call(d, "query", "health")["ok"] for d in colony.devices())
    except Exception:  # noqa: BLE001 - any failure means: not placed there
        return False


def query_demo(colony=None, report_dir: str = ".", rows: int = 400_000, calib_runs: int = 60) -> dict:
    """Run DEMO_QUERIES under auto and every forced placement; write query_demo.png in report_dir.

    ``colony``: a colony whose devices (a ``host`` and SmartNICs) carry the ``query`` service;
    when it has none (or is None) an emulated in-process colony is used and the answer says so.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from colony.query.client import QueryClient, calibrate_colony
    from colony.query.emulated import emulated_colony, load_particles
    from colony.query.plan import TableSpec

    used = "given colony"
    if colony is None or not _has_query_service(colony) or not hasattr(colony, "store"):
        colony, used = emulated_colony(), "emulated in-process colony (LocalColony + EmulatedLink)"
    host = "host"
    nic = next(d for d in colony.devices() if d != host)
    load_particles(colony, nic, rows, objects=4, seed=1, pool="demo_particles")
    calibrate_colony(colony, host, n_runs=calib_runs, max_rows=300_000)
    client = QueryClient(colony, host, {"particles": TableSpec("particles", "demo_particles", "*")})
    out = []
    for label, sql in DEMO_QUERIES:
        auto = client.query(sql, "auto")
        rec = {"label": label, "sql": sql, "decision": auto.placement, "reason": auto.decision["reason"],
               "est_rows": auto.est_rows, "rows": auto.table.num_rows,
               "predicted": {k: v["total"] for k, v in auto.decision["predicted"].items()}, "actual": {}}
        for pl in rec["predicted"] or ("down", "back"):
            rec["actual"][pl] = client.query(sql, pl).actual["total"]
        out.append(rec)
    os.makedirs(report_dir, exist_ok=True)
    fig, axes = plt.subplots(1, len(out), figsize=(4 * len(out), 3.6))
    for ax, r in zip(axes, out):
        pls = list(r["actual"])
        xs = range(len(pls))
        ax.bar([x - 0.2 for x in xs], [r["predicted"].get(p, 0) * 1e3 for p in pls], 0.4, label="predicted")
        ax.bar([x + 0.2 for x in xs], [r["actual"][p] * 1e3 for p in pls], 0.4, label="actual")
        ax.set_xticks(list(xs), [p + (" *" if p == r["decision"] else "") for p in pls])
        ax.set_title(r["label"], fontsize=9)
        ax.set_ylabel("ms")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"In-transit queries on {rows:,} rows (* = decision)")
    fig.tight_layout()
    path = os.path.join(report_dir, "query_demo.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"colony": used, "device": nic, "rows": rows, "queries": out, "figure": path}
