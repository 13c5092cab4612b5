"""Replay the online correction over each device's calibration runs (the calibration's own
evidence, not a benchmark's): every run priced by a per-operator model fitted without its
template (a shape the model never saw, as in the learner's cross-validation), then corrected
online as the service does, in a random order and in bursts of one template, with no drift,
a 1.3x device-wide slowdown, and a 1.5x one from half way. Compares no correction, shared
entries keyed without the size class (one device-wide factor, before the thirty-sixth stop)
and with it (`DeviceModels.family`'s `@<k>`). Reads this machine's calibration records.

    .venv/bin/python bench/replay_online_correction.py [--json bench/results/online_correction_replay.json]
"""

import argparse
import json
from pathlib import Path

import numpy as np

from colony.cost.calibrate import runs_from_record
from colony.cost.models import DeviceModels, OpsExec, Residuals, _folds, _values, _x
from colony.cost.suite import calibration_dir


def replay(record: dict, order: str, drift: float, half: bool, seeds: int = 5, reps: int = 3) -> dict:
    m = DeviceModels.from_json(record["query"])
    qr = record["query_runs"]
    runs = runs_from_record(qr)
    X = np.stack([_x(r["ops"]) for r in runs])
    T = np.array([r["threads"] for r in runs], float)
    y = np.array([r["exec_s"] for r in runs])
    err: dict = {"none": [], "one_device_wide": [], "per_size_class": []}
    for s in range(seeds):
        rng = np.random.Generator(np.random.SFC64(s))
        fold, _ = _folds(runs, 5, rng)
        pred = np.empty(len(y))
        for k in range(int(fold.max()) + 1):
            te, tr = fold == k, fold != k
            pred[te] = OpsExec.fit(X[tr], T[tr], y[tr], 0).predict(X[te], T[te])
        pred = np.maximum(pred, 1e-5)
        if order == "random":
            idx = list(rng.permutation(len(y)))
        else:
            tids = sorted(set(qr["template"]))
            rng.shuffle(tids)
            idx = [i for t in tids for i in range(len(y)) if qr["template"][i] == t]
        pols = {"one_device_wide": Residuals(), "per_size_class": Residuals()}
        for j, i in enumerate(idx):
            yi = y[i] * (drift if (not half or j >= len(idx) // 2) else 1.0)
            fam = m._family(_values(runs[i]["ops"]), runs[i]["threads"])
            err["none"].append(abs(pred[i] / yi - 1))
            for name, r in pols.items():
                # without its size class a family's shared entries are the one device-wide `*`
                key = fam.rpartition("@")[0] if name == "one_device_wide" and "@" in fam and fam[0] != "*" else fam
                err[name].append(abs(pred[i] * r.factor(key) / yi - 1))
                for _ in range(reps):          # each query runs a few times (repeats, auto)
                    r.update(key, pred[i] * r.factor(key), yi)
    return {k: {"median_pct": 100 * float(np.median(v)), "p90_pct": 100 * float(np.percentile(v, 90))}
            for k, v in err.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    a = ap.parse_args()
    from colony.machine import describe
    out = []
    for f in sorted(calibration_dir().glob("*@*.json")):
        rec = json.loads(f.read_text())
        if not rec.get("query_runs"):
            continue
        for order in ("random", "bursts"):
            for drift, half in ((1.0, False), (1.3, False), (1.5, True)):
                r = replay(rec, order, drift, half)
                # a machine keeps records of several colonies whose devices share names
                out.append({"device": f.name.split("@")[0], "record": f.name, "order": order, "drift": drift,
                            "from_half_way": half, **r})
                print(f.stem, order, drift, half,
                      {k: f"{v['median_pct']:.1f} / {v['p90_pct']:.1f}" for k, v in r.items()}, flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"machine": describe(), "replays": out}, indent=1))


if __name__ == "__main__":
    main()
