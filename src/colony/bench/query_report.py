"""Markdown tables from `colony bench query` JSON: per-query predicted vs actual (like thesis
Table 5.6), per family, and the summary (python -m colony.bench.query_report JSON [MD])."""

from __future__ import annotations

import json
import sys


def _ms(v) -> str:
    return "-" if v is None else f"{1e3 * v:.1f}"


def _pct(d: dict | None, key: str = "median") -> str:
    return "-" if not d or d.get(key) is None else f"{d[key]:.1f} %"


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
            f"{_pct(s.get('noise_floor_pct'), 'p90')}; estimation overhead median "
            f"{_pct(s.get('estimate_overhead_pct'))} of query time.", ""]
    out += ["| families | exec err median | exec err p90 | total err down (median / p90) | back | split |",
            "|---|---|---|---|---|---|"]
    for g, p in (s.get("prediction_error") or {}).items():
        t = p["total_pct"]
        out.append(f"| {g} | {_pct(p['exec_pct']['all'])} | {_pct(p['exec_pct']['all'], 'p90')} | "
                   f"{_pct(t.get('down'))} / {_pct(t.get('down'), 'p90')} | {_pct(t.get('back'))} / "
                   f"{_pct(t.get('back'), 'p90')} | {_pct(t.get('split'))} / {_pct(t.get('split'), 'p90')} |")
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


if __name__ == "__main__":
    text = render(sys.argv[1])
    if len(sys.argv) > 2:
        open(sys.argv[2], "w").write(text)
    else:
        print(text)
