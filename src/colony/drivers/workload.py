"""Run a file of queries under every placement: estimates, predictions, actuals, oracle, regret.

Shared by ``colony bench query`` and bench/query.py. Robust to any file: blank lines and
``--``/``#`` comments are skipped, a trailing ``;`` is dropped, and a failing query is
reported with its error instead of stopping the run.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from colony.drivers.query import QueryClient

PLACEMENTS = ("down", "back", "split")


def read_queries(path: str) -> list[str]:
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("--") or s.startswith("#"):
                continue
            out.append(s.rstrip(";").strip())
    return [q for q in out if q]


def run_one(client: QueryClient, sql: str, repeats: int = 1) -> dict:
    """Every placement and auto for one query; never raises."""
    rec: dict = {"sql": sql}
    try:
        ex = client.query(sql, "auto", explain=True)
        rec.update(decision=ex.placement, reason=ex.decision["reason"], est_rows=ex.est_rows,
                   supported=ex.decision["estimate"]["supported"], estimate_cpu_s=ex.extra.get("estimate_cpu_s"),
                   predicted={k: v["total"] for k, v in ex.decision["predicted"].items()},
                   predicted_terms=ex.decision["predicted"])
        if not rec["predicted"]:               # nothing to place (reads no table)
            r = client.query(sql, "auto")
            rec.update(actual={"down": r.actual["total"]}, rows=r.table.num_rows, auto_placement=r.placement,
                       auto_actual=r.actual["total"], oracle="down", oracle_s=r.actual["total"], regret=0.0,
                       card_err=abs(rec["est_rows"] - r.table.num_rows) / max(r.table.num_rows, 1))
            return rec
        actual, terms, rows = {}, {}, None
        for pl in PLACEMENTS:
            if pl == "split" and "split" not in rec["predicted"]:
                continue
            best = None
            for _ in range(repeats):
                r = client.query(sql, pl)
                if best is None or r.actual["total"] < best.actual["total"]:
                    best = r
            actual[pl] = best.actual["total"]
            terms[pl] = best.actual
            rows = best.table.num_rows
        rec.update(actual=actual, actual_terms=terms, rows=rows)
        autos = [client.query(sql, "auto") for _ in range(repeats)]
        a = min(autos, key=lambda r: r.actual["total"])
        rec.update(auto_placement=a.placement, auto_actual=a.actual["total"])
        oracle = min(actual, key=actual.get)
        rec.update(oracle=oracle, oracle_s=actual[oracle],
                   regret=actual.get(rec["decision"], actual[oracle]) / actual[oracle] - 1.0,
                   card_err=abs(rec["est_rows"] - rows) / max(rows, 1))
    except Exception as e:  # noqa: BLE001 - report per query, keep going
        rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return rec


def run_file(client: QueryClient, queries: list[str], repeats: int = 1,
             progress: Callable[[int, int], None] | None = None) -> list[dict]:
    out = []
    for i, q in enumerate(queries):
        out.append(run_one(client, q, repeats))
        if progress:
            progress(i + 1, len(queries))
    return out


def summarize(records: list[dict], margin: float = 0.10) -> dict:
    ok = [r for r in records if "error" not in r]
    if not ok:
        return {"queries": len(records), "errors": len(records)}
    tot = {pl: 0.0 for pl in PLACEMENTS}
    for r in ok:
        for pl in PLACEMENTS:
            # a placement a query cannot take (split of a pure filter) costs what down costs
            tot[pl] += r["actual"].get(pl, r["actual"]["down"])
    auto = sum(r["auto_actual"] for r in ok)
    chosen = sum(r["actual"].get(r["decision"], r["oracle_s"]) for r in ok)
    oracle = sum(r["oracle_s"] for r in ok)
    best_static = min(tot.values())
    differ = [r for r in ok if len(r["actual"]) > 1 and
              sorted(r["actual"].values())[1] > (1 + margin) * min(r["actual"].values())]
    acc = (np.mean([r["decision"] == r["oracle"] for r in differ]) if differ else float("nan"))
    errs = [r["card_err"] for r in ok]
    return {"queries": len(records), "errors": len(records) - len(ok),
            "total_s": {"auto": auto, "auto_chosen_forced": chosen, "oracle": oracle,
                        "always_" + "down": tot["down"], "always_back": tot["back"], "split_only": tot["split"]},
            "auto_over_oracle": auto / oracle, "auto_chosen_over_oracle": chosen / oracle,
            "auto_over_best_static": auto / best_static, "best_static": min(tot, key=tot.get),
            "decision_accuracy": float(acc), "decisions_scored": len(differ),
            "placements_chosen": {pl: sum(r["decision"] == pl for r in ok) for pl in PLACEMENTS},
            "oracle_placements": {pl: sum(r["oracle"] == pl for r in ok) for pl in PLACEMENTS},
            "cardinality_err_median": float(np.median(errs)), "cardinality_err_p90": float(np.percentile(errs, 90)),
            "regret_median": float(np.median([r["regret"] for r in ok]))}
