"""Query deadline benchmark -> bench/results/query_deadline.json (see colony.bench.deadline)."""

import time

from colony.bench.common import write_json
from colony.bench.deadline import overhead, stop_times
from colony.machine import describe

if __name__ == "__main__":
    t0 = time.time()
    res = {"machine": describe(), "colony": "LocalColony in-process; nic0 emulated SmartNIC, 1-thread budget",
           "stop": stop_times(), "overhead": overhead()}
    res["wall_s"] = time.time() - t0
    write_json("bench/results/query_deadline.json", res)
    s = res["stop"]
    for d, v in s["isolated"].items():
        print(f"deadline {d} s: stopped after {v['min']:.3f}/{v['median']:.3f}/{v['max']:.3f} s "
              f"(overrun median {v['overrun_median_pct']:+.1f}%, max {v['overrun_max_pct']:+.1f}%)")
    print("in-thread, deadline 1.0 s:", s["in_thread"]["1.0"])
    o = res["overhead"]
    print(f"overhead: median {o['overhead_ms_median_of_queries']:.1f} ms, ratio {o['ratio_median_of_queries']:.2f}x")
