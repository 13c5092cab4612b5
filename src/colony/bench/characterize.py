"""Characterize this machine: stress-ng stressors (2 s each), Arrow kernels with thread
sweeps, key-value stress. Writes bench/results/characterize.json and PNG plots, and
(with --update-reference) refreshes the shipped default reference file.

Run:  flock /tmp/colony-bench.lock python -m colony.bench.characterize [--update-reference]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from colony.quantify import characterize as ch
from colony.machine import describe as machine_info


def main(argv) -> None:
    t0 = time.time()
    sn = ch.run_stress_ng(ch.DEFAULT_STRESSORS, timeout_s=2.0, progress=lambda s: print("stressor", s, flush=True))
    ar = ch.arrow_kernels(1 << 20, repeats=3)
    kvr = ch.kv_stress(iterations=3000)
    mi = machine_info()
    doc = {"label": f"colony-ci-{mi['cpu_model'].replace(' ', '_')}-{mi['cores_logical']}c", "machine": mi,
           "stress_ng": sn, "arrow": ar, "kv": kvr}
    best = lambda pts, key="seconds": min(pts, key=lambda p: p[key])  # noqa: E731
    doc["summary"] = {
        "stress_ng_bogo_ops_per_s": {s: round(v["bogo_ops_per_s_real"], 2) for s, v in sn["stressors"].items()},
        "stress_ng_failed": sn["failed"],
        "arrow_best_ms": {k: {"ms": round(best(v)["seconds"] * 1e3, 2), "threads": best(v)["threads"]}
                          for k, v in ar["kernels"].items()},
        "arrow_rows": ar["rows"],
        "kv_ops_per_s": {m: {p["threads"]: round(p["ops_per_s"]) for p in pts} for m, pts in kvr["modes"].items()},
        "wall_seconds": round(time.time() - t0, 1),
    }
    if "--update-reference" in argv:
        ref = dict(doc, note="Default reference: this project's characterization machine (the seeds used a "
                             "Raspberry Pi 4B but print no per-stressor numbers). Normalized values are "
                             "'reference work units' relative to this machine.")
        ch.REFERENCE_FILE.parent.mkdir(parents=True, exist_ok=True)
        ch.REFERENCE_FILE.write_text(json.dumps(ref, indent=2))
    ref = ch.default_reference() if ch.REFERENCE_FILE.exists() else doc
    doc["normalized"] = ch.normalize(doc, ref) | {"reference": ref.get("label")}
    doc["plots"] = ch.plots(doc, "bench/results/characterize", ref)
    Path("bench/results/characterize.json").write_text(json.dumps(doc, indent=2))
    print(json.dumps(doc["summary"], indent=2))


if __name__ == "__main__":
    from colony.bench.common import entry
    entry("colony.bench.characterize", __doc__, sys.argv[1:],
          {"--update-reference": "also refresh the shipped default reference file"})
    main(sys.argv[1:])
