"""A 10 ms idle gap before each timed calibration run, A/B on the Ray colony (sixty-fifth
stop; tried and not kept: MEASURE_REVISION 7, reverted in 8).

The same seeded calibration timed with and without the gap, twice in turn (gapA, nogapA,
gapB, nogapB; the gap read from an environment variable for the experiment only), each
followed by three benchmark query sets. Reads the records and results
under bench/results (``calibration_gap_ab/<arm>_<device>@<fp>.json``,
``query_gap_ab_<arm>_<set>.json``) and prints:

- per device, each record's kept learner and its cross-validated median error;
- the same calibration queries' times, paired gap / no gap, by size;
- every calibration's raw execution price (no online correction) against every arm's
  measured executions: each run's actuals priced by all four records, so a run's drift
  hits all alike;
- each arm's benchmark as it scored itself (online corrections on): pushed-down execution
  error, total error per placement, auto / oracle.

    python bench/gap_ab.py
"""

import glob
import json
import os

import numpy as np

from colony.cost.models import DeviceModels

RESULTS = os.path.join(os.path.dirname(__file__), "results")
ARMS = ("gapA", "nogapA", "gapB", "nogapB")
SETS = ("flights", "functions_tpch", "functions_flights")


def _record(arm: str, dev: str) -> dict:
    return json.load(open(glob.glob(os.path.join(RESULTS, "calibration_gap_ab", f"{arm}_{dev}@*.json"))[0]))


def main() -> None:
    models = {}
    for dev in ("nic0", "host0"):
        runs = {}
        for arm in ARMS:
            rec = _record(arm, dev)
            m = DeviceModels.from_json(rec["query"])
            m.residuals.state.clear()
            models[arm, dev] = m
            rep = rec["query"]["report"]
            runs[arm] = np.array(rec["query_runs"]["exec_s"])
            print(f"{dev} {arm:7s} kept {rep['kept']:6s} CV median {rep[rep['kept']]['ape_median']:.1f} %")
        gap = np.sqrt(runs["gapA"] * runs["gapB"])
        nogap = np.sqrt(runs["nogapA"] * runs["nogapB"])
        for lo, hi in ((0, 0.004), (0.004, 0.015), (0.015, 0.1), (0.1, 1e3)):
            s = (nogap >= lo) & (nogap < hi)
            if s.any():
                print(f"  {dev} runs {lo * 1e3:.0f}-{hi * 1e3:.0f} ms (n={s.sum()}): gap / no gap "
                      f"{np.median(gap[s] / nogap[s]):.3f}")
    for name in SETS:
        for dev, pl, term in (("nic0", "down", "exec"), ("host0", "back", "exec_host")):
            pooled = {a: [] for a in ARMS}
            for run in ARMS:
                d = json.load(open(os.path.join(RESULTS, f"query_gap_ab_{run}_{name}.json")))
                recs = [r for r in d["records"] if "error" not in r and (r.get("actual_terms") or {}).get(pl, {}).get(term)]
                for cal in ARMS:
                    m = models[cal, dev]
                    pooled[cal] += [m.predict_execs([(r["job"]["ops"], None, "back" if pl == "back" else None, 1)])[0]
                                    / r["actual_terms"][pl][term] for r in recs]
            cells = []
            for cal, v in pooled.items():
                e = np.abs(np.array(v) - 1) * 100
                cells.append(f"{cal} {np.median(e):.1f} / {np.percentile(e, 90):.1f} (x{np.median(v):.2f})")
            print(f"{name} {dev} raw {term} error median / p90 (price / actual): " + " | ".join(cells))
    for name in SETS:
        for arm in ARMS:
            s = json.load(open(os.path.join(RESULTS, f"query_gap_ab_{arm}_{name}.json")))["summary"]
            pe = s["prediction_error"]["all"]
            tot = " / ".join(f"{pe['total_pct'][pl]['median']:.1f}" if pl in pe["total_pct"] else "-"
                             for pl in ("down", "back", "split"))
            print(f"{name} {arm}: down exec error {pe['exec_pct']['down']['median']:.1f} %, totals down / back / "
                  f"split {tot} %, auto / oracle {s['auto_over_oracle']:.3f}")


if __name__ == "__main__":
    main()
