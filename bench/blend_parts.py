"""A device's kept execution learner against its parts, on a benchmark run's own executions.

Where a calibration kept ``blend`` (the geometric mean of the per-operator model and a
forest), this prices every device execution of a run's JSONs (``bench/results/query_*_<run>*.json``:
each record's op vector as the device estimated it, its measured device execution) with the
blend, its linear part and its forest, at the device's thread budget and without the online
correction, and reports each one's error (median / p90 %, per file, all records and the
held-out families). It also tries a guard: the linear part alone where the two parts
disagree by more than the calibration's cross-validation ever saw them disagree (held-out
predictions of the record's stored runs, the folds and fits of ``fit_exec``). Offline: it times
nothing. It reads a benchmark's test set, so it says how a rule did there, never which rule
to keep (the calibration's CV chooses).

    .venv/bin/python bench/blend_parts.py --run run144 --record ~/.cache/colony/calibration/nic0@....json
"""

import argparse
import glob
import json
from pathlib import Path

import numpy as np

from colony.cost.calibrate import runs_from_record
from colony.cost.models import BlendExec, DeviceModels, _x, cross_validated, log_err


def _summary(errs: list[float]) -> dict:
    return {"n": len(errs), "median_pct": float(np.median(errs)), "p90_pct": float(np.percentile(errs, 90))}


def cv_gaps(rec: dict, seed: int = 0) -> np.ndarray:
    """|log(forest / linear)| of every held-out prediction in the record's template-held-out CV
    (the same folds and fits as the calibration's own learner choice, :func:`cross_validated`)."""
    reps, _how = cross_validated(runs_from_record(rec["query_runs"]), seed=seed)
    return np.concatenate([log_err(p["forest"], p["ops"]) for p in reps])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="the run's JSON suffix, e.g. run144")
    ap.add_argument("--record", required=True, help="the device's calibration record that run priced with")
    ap.add_argument("--json", help="write the result here (default bench/results/blend_parts_<run>.json)")
    a = ap.parse_args()
    rec = json.loads(Path(a.record).expanduser().read_text())
    model = DeviceModels.from_json(rec["query"])
    if not isinstance(model.exec, BlendExec):
        raise SystemExit(f"{a.record} kept {rec['query']['report'].get('kept')!r}, not the blend: nothing to split")
    parts = {"blend": model.exec, "ops_part": model.exec.linear, "forest_part": model.exec.forest}
    threads = np.array([float(model.threads)])
    files = sorted(glob.glob(f"bench/results/query_*_{a.run}.json") + glob.glob(f"bench/results/query_*_{a.run}_*.json"))
    if not files:
        raise SystemExit(f"no bench/results/query_*_{a.run}*.json")
    gaps = cv_gaps(rec)
    bounds = {"max": float(gaps.max()), "p99": float(np.percentile(gaps, 99))}
    guards = {f"guard_{k}": [] for k in bounds}
    fired = dict.fromkeys(bounds, 0)
    per_file, every, held = {}, {k: [] for k in parts}, {k: [] for k in parts}
    for f in files:
        errs = {k: [] for k in parts}
        for r in json.loads(Path(f).read_text())["records"]:
            try:
                ops, measured = r["job"]["ops"], r["actual_terms"]["down"]["exec"]
            except (KeyError, TypeError):        # failed, unmodelled or not run down
                continue
            x = _x(ops)[None, :]
            priced = {k: float(m.predict(x, threads)[0]) for k, m in parts.items()}
            gap = float(log_err(priced["forest_part"], priced["ops_part"]))
            for name, bound in bounds.items():
                fired[name] += gap > bound
                guard = priced["ops_part"] if gap > bound else priced["blend"]
                guards[f"guard_{name}"].append(abs(guard / measured - 1.0) * 100)
            for k, p in priced.items():
                e = abs(p / measured - 1.0) * 100
                errs[k].append(e)
                every[k].append(e)
                if r.get("held_out"):
                    held[k].append(e)
        if errs["blend"]:
            per_file[Path(f).name] = {k: _summary(v) for k, v in errs.items()}
    out = {"run": a.run, "record": Path(a.record).name, "threads": model.threads,
           "cv_report": {k: rec["query"]["report"][k]["ape_median"] for k in ("ops", "nnls", "forest", "blend")},
           "cv_gap": {"median": float(np.median(gaps)), "p90": float(np.percentile(gaps, 90)), **bounds},
           "guard": {name: {"bound": bounds[name], "fired": int(fired[name]), **_summary(guards[f"guard_{name}"])}
                     for name in bounds},
           "all": {k: _summary(v) for k, v in every.items()},
           "held_out": {k: _summary(v) for k, v in held.items() if v}, "per_file": per_file}
    dest = Path(a.json or f"bench/results/blend_parts_{a.run}.json")
    dest.write_text(json.dumps(out, indent=1))
    for name, s in (("all", out["all"]), ("held-out", out["held_out"])):
        print(name, "  ".join(f"{k} {v['median_pct']:.1f} / {v['p90_pct']:.1f} % (n {v['n']})" for k, v in s.items()))
    for name, g in out["guard"].items():
        print(f"guard at the CV's {name} gap {g['bound']:.2f}: fired on {g['fired']}, "
              f"{g['median_pct']:.1f} / {g['p90_pct']:.1f} %")


if __name__ == "__main__":
    main()
