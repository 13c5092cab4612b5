"""Generator throughput (rows/s on one core) for each particle generator."""

from __future__ import annotations

import time

from colony.machine import describe as machine


def run(rows: int = 10_000_000, repeats: int = 3) -> dict:
    from colony.data import Simulation, clustered, uniform
    out = {}
    for name, fn in (("uniform", lambda: uniform(rows, seed=1)), ("clustered", lambda: clustered(rows, seed=1))):
        best = min(_timed(fn) for _ in range(repeats))
        out[name] = rows / best
    sim = Simulation(n_particles=rows // 10, n_ranks=16, seed=1)
    t = _timed(lambda: [None for _ in sim.run(10)])
    out["simulation"] = rows / t
    return {"benchmark": "data", "machine": machine(), "config": {"rows": rows, "repeats": repeats,
            "timing": "best of repeats, one process (numpy generation is single-threaded)"},
            "summary": {f"{k}_mrows_per_s": v / 1e6 for k, v in out.items()}}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
