"""How much the learner a calibration keeps depends on the cross-validation's grouping seed.

``fit_exec`` keeps a learner by template-held-out CV, each run's error the mean over
``repeats`` random groupings of the templates into folds. This refits stored calibrations
(their ``query_runs``: no timing) with grouping seeds 0-4 at each number of repeats and reports
how often the seeds agree on the kept learner, and how much each learner's CV median moves
between seeds. Calibrations only: no benchmark query is read, so it can choose the rule.

Inputs: every record in the calibration cache, plus in-process calibrations at 1M rows
(seeds 1-5 x 1-2 threads, ~20 s each, kept under ``--work`` and reused).

    .venv/bin/python bench/cv_groupings.py --json bench/results/cv_groupings_s51.json
"""

import argparse
import collections
import glob
import json
import os
import time
from pathlib import Path

import numpy as np

from colony.cost.calibrate import calibrate, runs_from_record, runs_to_record
from colony.cost.models import LEARNERS, fit_exec

SEEDS = range(5)          # grouping seeds each record is refit with


def in_process(work: Path, seeds=range(1, 6), threads=(1, 2)) -> list[Path]:
    """Records of in-process calibrations (1M rows, 100 runs), made once."""
    work.mkdir(parents=True, exist_ok=True)
    out = []
    for s in seeds:
        for t in threads:
            p = work / f"cal_s{s}_t{t}.json"
            if not p.exists():
                _, runs = calibrate(f"d{t}", t, n_runs=100, max_rows=1_000_000, seed=s)
                p.write_text(json.dumps({"query_runs": runs_to_record(runs)}))
            out.append(p)
    return out


def study(path: Path, repeats: int, seeds=SEEDS) -> dict:
    runs = runs_from_record(json.loads(path.read_text())["query_runs"])
    kept, medians = [], collections.defaultdict(list)
    for seed in seeds:
        _, rep = fit_exec(runs, seed=seed, repeats=repeats)
        kept.append(rep["kept"])
        for name in LEARNERS:
            medians[name].append(rep[name]["ape_median"])
    return {"kept": kept, "agree": collections.Counter(kept).most_common(1)[0][1],
            "median_sd": {k: float(np.std(v)) for k, v in medians.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", default="5,20", help="comma list of CV repeats to compare")
    ap.add_argument("--work", default="/tmp/colony-cv-groupings")
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/colony/calibration"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    paths = sorted(Path(p) for p in glob.glob(f"{a.cache}/*.json")) + in_process(Path(a.work))
    out = {"records": [p.name for p in paths], "seeds": len(SEEDS), "by_repeats": {}}
    for r in (int(x) for x in a.repeats.split(",")):
        t0 = time.perf_counter()
        per = {p.name: study(p, r) for p in paths}
        sds = {k: [v["median_sd"][k] for v in per.values()] for k in LEARNERS}
        out["by_repeats"][r] = {
            "per_record": per, "seconds": time.perf_counter() - t0,
            "agree_mean_of_5": float(np.mean([v["agree"] for v in per.values()])),
            "median_sd": {k: {"median": float(np.median(v)), "min": min(v), "max": max(v)} for k, v in sds.items()}}
        s = out["by_repeats"][r]
        print(f"repeats {r}: seeds agreeing with the modal learner {s['agree_mean_of_5']:.2f} of {len(SEEDS)}; "
              + ", ".join(f"{k} sd {v['median']:.1f}" for k, v in s["median_sd"].items()) + f" ({s['seconds']:.0f} s)")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
