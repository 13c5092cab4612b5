"""What the contention probe (`colony.services.cpu.CoreLoad`) reads on a core shared with
n spinning processes (a true stretch of n + 1), for several spin lengths and intervals.

A thread that slept is owed CPU by the scheduler and may run a short spin uninterrupted, so
a short probe under-reads contention. Pins itself and the spinners to one core (Linux).

    .venv/bin/python bench/stretch_probe.py --json bench/results/stretch_probe.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from colony.machine import describe
from colony.services.cpu import CoreLoad

SETTINGS = ((0.2, 0.003), (0.4, 0.008), (0.2, 0.006), (0.2, 0.020))     # (every_s, spin_s); the first was the default


def measure(hogs: int, every_s: float, spin_s: float, seconds: float) -> dict:
    cl = CoreLoad(window_s=seconds, every_s=every_s, spin_s=spin_s)
    cl.measured()
    time.sleep(seconds + 0.2)
    with cl._lock:
        shares = [s for _, s in cl._samples]
    cl.close()
    mean = sum(shares) / len(shares)
    return {"hogs": hogs, "true_stretch": hogs + 1, "every_s": every_s, "spin_s": spin_s,
            "samples": len(shares), "mean_share": mean, "read_stretch": 1.0 / max(mean, 0.02),
            "shares": [round(s, 3) for s in shares]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hogs", default="0,1,3,7", help="spinning processes beside the probe, comma list")
    ap.add_argument("--seconds", type=float, default=3.0, help="sampling time per setting")
    ap.add_argument("--json")
    a = ap.parse_args()
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass"
    rows = []
    for n in (int(x) for x in a.hogs.split(",")):
        hogs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
        try:
            time.sleep(0.5)
            for every_s, spin_s in SETTINGS:
                r = measure(n, every_s, spin_s, a.seconds)
                rows.append(r)
                print(f"{n} others (true {n + 1}): spin {spin_s * 1e3:.0f} ms every {every_s} s reads "
                      f"{r['read_stretch']:.2f} ({r['samples']} samples)", flush=True)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": describe(), "core": core, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
