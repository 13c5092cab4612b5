"""Run a file of queries under every placement: estimates, predictions, actuals, oracle, regret.

Shared by ``colony bench query`` and bench/query.py. Robust to any file: blank lines and
``--``/``#`` comments are skipped, a trailing ``;`` is dropped, and a failing query is
reported with its error instead of stopping the run.
"""

from __future__ import annotations

import zlib
from typing import Callable

import numpy as np

from colony.decide import loaded_exec
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


def _ape(p, a) -> float:
    return abs(p - a) / max(a, 1e-9) * 100.0


def cold_and_warm(client: QueryClient, sql: str):
    """Two decisions on ``sql`` before it ever runs (nothing learnt from it): the first is cold
    (statistics and estimate built: its CPU is the estimation overhead, its total carries the
    cold estimate), the second warm, as every run after it is (the estimate is cached per
    plan), so the warm one is the prediction to set beside measured runs. The devices' query
    workers are started first where none is idle (:meth:`QueryClient.warm_workers`): the runs
    measured beside these predictions start none, so neither may the predictions (the seconds
    those starts took are in the cold result's ``extra["workers_started_s"]``)."""
    started = client.warm_workers(sql)
    cold = client.query(sql, "auto", explain=True)
    if started:
        cold.extra["workers_started_s"] = started
    return cold, client.query(sql, "auto", explain=True)


# the execution term each placement's execution-time error is scored on
EXEC_TERM = {"down": "exec", "back": "exec_host"}


def run_one(client: QueryClient, sql: str, repeats: int = 3) -> dict:
    """Every placement and auto for one query, each the median of ``repeats`` runs (rounds
    interleave the placements, so drift hits all alike, in a fresh random order each round);
    never raises.

    Records predicted and actual seconds per placement and per term, the repeat error
    (first run against the median of the others: the measured-vs-measured noise floor; of
    the total, and of the execution term the execution-time error is scored on),
    execution-time and total-latency prediction errors, and the cardinality error."""
    rec: dict = {"sql": sql}
    try:
        cold, ex = cold_and_warm(client, sql)     # the warm one is scored; the cold one's errors stay too
        est = ex.decision.get("estimate", {})
        rec.update(decision=ex.placement, reason=ex.decision["reason"], caveats=ex.decision.get("caveats", []),
                   est_rows=ex.est_rows,
                   supported=est.get("supported", True), estimate_cpu_s=cold.extra.get("estimate_cpu_s"),
                   estimate_cpu_parts_s=cold.extra.get("estimate_cpu_parts_s"),
                   predicted_cold={k: v["total"] for k, v in cold.decision["predicted"].items()},
                   estimate_cold_s=next(iter(cold.decision["predicted"].values()), {}).get("estimate"),
                   predicted={k: v["total"] for k, v in ex.decision["predicted"].items()},
                   predicted_terms=ex.decision["predicted"],
                   job={"ops": est.get("ops"), "input_bytes": est.get("input_bytes"),
                        "device_s": (ex.decision["predicted"].get("down") or {}).get("exec")})
        if "workers_started_s" in cold.extra:                 # one-offs before the first query on a device
            rec["workers_started_s"] = cold.extra["workers_started_s"]
        if not rec["predicted"] and rec["supported"]:        # nothing to place (reads no table)
            r = client.query(sql, "auto")
            rec.update(actual={"down": r.actual["total"]}, rows=r.table.num_rows, auto_placement=r.placement,
                       auto_actual=r.actual["total"], oracle="down", oracle_s=r.actual["total"], regret=0.0,
                       card_err=abs((rec["est_rows"] or 0) - r.table.num_rows) / max(r.table.num_rows, 1))
            return rec
        pls = [pl for pl in PLACEMENTS if pl != "split" or "split" in rec["predicted"]]
        runs: dict = {pl: [] for pl in pls + ["auto"]}
        rows = None
        order = pls + ["auto"]
        rng = np.random.Generator(np.random.SFC64(zlib.crc32(sql.encode())))
        for _ in range(max(1, repeats)):
            # a fresh order each round: a run right after another placement's run (a split's
            # large result, say) pays for it, so no placement always follows the same one
            for pl in rng.permutation(order).tolist():
                r = client.query(sql, pl)
                runs[pl].append(r)
                rows = r.table.num_rows
        actual, terms, noise, exec_noise = {}, {}, {}, {}
        for pl, rs in runs.items():
            tot = [r.actual["total"] for r in rs]
            med = float(np.median(tot))
            mid = min(rs, key=lambda r: abs(r.actual["total"] - med))
            if pl == "auto":
                rec.update(auto_actual=med, auto_placement=max({r.placement for r in rs},
                                                               key=[r.placement for r in rs].count))
            else:
                # each term is its own median over the rounds (not the median round's term)
                actual[pl], terms[pl] = med, dict(mid.actual)
                for k in ("exec", "exec_host"):
                    vals = [r.actual[k] for r in rs if isinstance(r.actual.get(k), (int, float))]
                    if len(vals) == len(rs):
                        terms[pl][k] = float(np.median(vals))
                        if k == EXEC_TERM.get(pl) and len(vals) >= 3 and min(vals) > 0:
                            exec_noise[pl] = _ape(vals[0], float(np.median(vals[1:])))
            if len(tot) >= 3:
                noise[pl] = _ape(tot[0], float(np.median(tot[1:])))
        rec.update(actual=actual, actual_terms=terms, rows=rows, repeat_err=noise, exec_repeat_err=exec_noise,
                   runs_s={pl: [r.actual["total"] for r in rs] for pl, rs in runs.items()})
        oracle = min(actual, key=actual.get)
        rec.update(oracle=oracle, oracle_s=actual[oracle],
                   regret=actual.get(rec["decision"], actual[oracle]) / actual[oracle] - 1.0,
                   card_err=(abs(rec["est_rows"] - rows) / max(rows, 1)) if rec["est_rows"] is not None else None)
        pt = rec["predicted_terms"]
        rec["total_err"] = {pl: _ape(rec["predicted"][pl], actual[pl]) for pl in actual if pl in rec["predicted"]}
        rec["total_err_cold"] = {pl: _ape(rec["predicted_cold"][pl], actual[pl]) for pl in actual
                                 if pl in rec["predicted_cold"]}
        # the execution priced under the load the decision saw (its share of the contention
        # term): the measured one ran under that load
        rec["exec_err"] = {pl: _ape(loaded_exec(pt[pl], k), terms[pl][k]) for pl, k in EXEC_TERM.items()
                           if pl in pt and terms.get(pl, {}).get(k)}
    except Exception as e:  # noqa: BLE001 - report per query, keep going
        rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return rec


def run_file(client: QueryClient, queries: list, repeats: int = 3,
             progress: Callable[[int, int], None] | None = None, into: list | None = None) -> list[dict]:
    """``queries``: SQL strings, or dicts with ``sql`` (and ``family``, ``held_out``). With
    ``into``, records are appended there as they finish (and the new ones returned empty)."""
    out = into if into is not None else []
    for i, q in enumerate(queries):
        meta = q if isinstance(q, dict) else {"sql": q}
        rec = run_one(client, meta["sql"], repeats)
        rec.update({k: v for k, v in meta.items() if k != "sql"})
        out.append(rec)
        if progress:
            progress(i + 1, len(queries))
    return [] if into is not None else out


def _dist(v: list) -> dict:
    v = [x for x in v if x is not None and np.isfinite(x)]
    if not v:
        return {"n": 0}
    return {"n": len(v), "median": float(np.median(v)), "p90": float(np.percentile(v, 90)),
            "mean": float(np.mean(v))}


def summarize(records: list[dict], margin: float = 0.10) -> dict:
    """Totals per policy, decision accuracy (at ``margin`` and with none), prediction errors
    (execution and total latency, per placement, seen vs held-out families), noise floor.
    Failed queries count as failures, never dropped."""
    ok = [r for r in records if "error" not in r and "oracle" in r]
    out: dict = {"queries": len(records), "errors": len(records) - len(ok), "failures": len(records) - len(ok)}
    if not ok:
        return out
    tot = {pl: 0.0 for pl in PLACEMENTS}
    for r in ok:
        for pl in PLACEMENTS:
            # a placement a query cannot take (split of a pure filter) costs what down costs
            tot[pl] += r["actual"].get(pl, r["actual"]["down"])
    auto = sum(r["auto_actual"] for r in ok)
    chosen = sum(r["actual"].get(r["decision"], r["oracle_s"]) for r in ok)
    oracle = sum(r["oracle_s"] for r in ok)
    best_static = min(tot.values())

    def accuracy(m):
        scored = [r for r in ok if len(r["actual"]) > 1 and
                  sorted(r["actual"].values())[1] > (1 + m) * min(r["actual"].values())]
        return (float(np.mean([r["decision"] == r["oracle"] for r in scored])) if scored else float("nan")), \
            len(scored)
    acc, n_acc = accuracy(margin)
    acc0, n_acc0 = accuracy(0.0)
    errs = [r["card_err"] for r in ok if r.get("card_err") is not None]
    out.update({
        "total_s": {"auto": auto, "auto_chosen_forced": chosen, "oracle": oracle,
                    "always_down": tot["down"], "always_back": tot["back"], "split_only": tot["split"]},
        "auto_over_oracle": auto / oracle, "auto_chosen_over_oracle": chosen / oracle,
        "auto_over_best_static": auto / best_static, "best_static": min(tot, key=tot.get),
        "decision_accuracy": acc, "decisions_scored": n_acc, "decision_margin": margin,
        "decision_accuracy_no_margin": acc0, "decisions_scored_no_margin": n_acc0,
        "placements_chosen": {pl: sum(r["decision"] == pl for r in ok) for pl in PLACEMENTS},
        "oracle_placements": {pl: sum(r["oracle"] == pl for r in ok) for pl in PLACEMENTS},
        "supported": sum(bool(r.get("supported", True)) for r in ok),
        # decided with no prices (a device without its models or the host's): not a decision
        # the engine made, so a run with any says so instead of scoring them
        "unpriced": sum(not r.get("predicted") for r in ok),
        "cardinality_err_median": float(np.median(errs)) if errs else float("nan"),
        "cardinality_err_p90": float(np.percentile(errs, 90)) if errs else float("nan"),
        "regret_median": float(np.median([r["regret"] for r in ok])),
        "noise_floor_pct": _dist([v for r in ok for v in r.get("repeat_err", {}).values()]),
        "estimate_overhead_pct": _dist([100 * r["estimate_cpu_s"] / r["auto_actual"] for r in ok
                                        if r.get("estimate_cpu_s") is not None and r.get("auto_actual")]),
    })
    groups = {"all": ok, "seen": [r for r in ok if not r.get("held_out")],
              "held_out": [r for r in ok if r.get("held_out")]}
    pred: dict = {}
    for g, rs in groups.items():
        if not rs:
            continue
        pred[g] = {"exec_pct": {pl: _dist([r["exec_err"][pl] for r in rs if pl in r.get("exec_err", {})])
                                for pl in ("down", "back")},
                   "total_pct": {pl: _dist([r["total_err"][pl] for r in rs if pl in r.get("total_err", {})])
                                 for pl in PLACEMENTS}}
        pred[g]["exec_pct"]["all"] = _dist([v for r in rs for v in r.get("exec_err", {}).values()])
        # the floor the execution-time targets sit above: one run's execution term against the
        # median of the others' (the total's floor, noise_floor_pct, mixes in the links)
        pred[g]["exec_noise_pct"] = {pl: _dist([r["exec_repeat_err"][pl] for r in rs
                                                if pl in r.get("exec_repeat_err", {})]) for pl in EXEC_TERM}
        pred[g]["exec_noise_pct"]["all"] = _dist([v for r in rs for v in r.get("exec_repeat_err", {}).values()])
        pred[g]["total_pct"]["all"] = _dist([v for r in rs for v in r.get("total_err", {}).values()])
        pred[g]["total_pct_cold"] = {pl: _dist([r["total_err_cold"][pl] for r in rs
                                                if pl in r.get("total_err_cold", {})]) for pl in PLACEMENTS}
    out["prediction_error"] = pred
    fams: dict = {}
    for r in ok:
        if r.get("family"):
            fams.setdefault(r["family"], []).append(r)
    if fams:
        out["families"] = {f: {"held_out": bool(rs[0].get("held_out")), "queries": len(rs),
                               "exec_pct_median": _dist([v for r in rs for v in r.get("exec_err", {}).values()]).get(
                                   "median"),
                               "total_pct_median": _dist([v for r in rs for v in r.get("total_err", {}).values()]).get(
                                   "median"),
                               "decision_accuracy": float(np.mean([r["decision"] == r["oracle"] for r in rs]))}
                           for f, rs in fams.items()}
    return out
