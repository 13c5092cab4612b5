"""Availability model sweeps (thesis figs 3.13–3.18), where the seeds' 7.1 / 20.7 fall,
and Monte Carlo checks of the closed form on small systems. Writes
bench/results/availability.json and bench/results/availability/*.png.

Run:  flock /tmp/colony-bench.lock python -m colony.bench.availability
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from colony.quantify import availability as av
from colony.machine import describe as machine_info

MC_CASES = [(6, 2, 2, 1.0), (6, 3, 1, 2.0), (9, 2, 1, 0.5), (6, 4, 1, 0.06)]


def main() -> None:
    t0 = time.time()
    figs = av.figures_data()
    plots = av.plot_figures(figs, "bench/results/availability")
    claims = av.seed_claims()
    mc = []
    for m, n, c, f in MC_CASES:
        r = av.monte_carlo(m, n, c, f, w=4, rm=0.5, trials=400_000, seed=2026)
        mc.append({"m": m, "n": n, "c": c, "f": f, "w": 4, "rm": 0.5, **r.as_dict()})
    full = []
    for f in (av.F_HDD, av.F_SSD):
        for rm in (0.25, 0.5, 1.0):
            r = av.simulate_any_failures(6, 4, 4, f, w=4, rm=rm, trials=400_000, seed=2026)
            full.append({"m": 6, "n": 4, "c": 4, "f": f, "rm": rm, **{k: v for k, v in r.items() if k != "params"}})
    at = lambda key, label, x: next(r["relative_benefit"] for r in figs[key][label] if r[key[0]] == x)  # noqa: E731
    doc = {
        "machine": machine_info(),
        "summary": {
            "relative_benefit_m10": {"hdd_n4": at("n_at_m10", "hdd", 4), "ssd_n4": at("n_at_m10", "ssd", 4),
                                     "hdd_n12": at("n_at_m10", "hdd", 12), "ssd_n12": at("n_at_m10", "ssd", 12)},
            "seed_7.1_hdd_n4": claims["hdd_7.1"], "seed_20.7_ssd_n4": claims["ssd_20.7"],
            "hdd_n4_by_m": {r["m"]: round(r["hdd_n4"], 3) for r in claims["table"][:8]},
            "ssd_n4_by_m": {r["m"]: round(r["ssd_n4"], 3) for r in claims["table"][:8]},
            "monte_carlo_all_agree": all(x["gp_agrees"] and x["es_agrees"] for x in mc),
            "monte_carlo_trials": 400_000,
            "any_failures_vs_eq_3_12": [{"f": x["f"], "rm": x["rm"], "simulated_ratio": x["ratio"],
                                         "eq_3_12_ratio": x["eq_3_12_ratio"]} for x in full],
            "params": {"w": 4, "rm": av.DEFAULT_RM, "c": "n for the n figures, n = 12 for the c figures"},
            "wall_seconds": None,
        },
        "monte_carlo": mc, "any_failures": full, "seed_claims": claims, "figures": figs, "plots": plots,
    }
    doc["summary"]["wall_seconds"] = round(time.time() - t0, 1)
    Path("bench/results/availability.json").write_text(json.dumps(doc, indent=2))
    print(json.dumps(doc["summary"], indent=2))


if __name__ == "__main__":
    from colony.bench.common import entry
    entry("colony.bench.availability", __doc__)
    main()
