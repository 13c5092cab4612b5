"""Where a push-back's time goes, leg by leg, on the embedded Ray colony.

The demo's "wide filter" (400k particles on a SmartNIC paced at 8 Gbit/s, a 380k-row,
27 MB result) forced down and back in interleaved rounds. Per run: the client's total,
the device's round trip to the host (``to_host``: raw objects in, the host's decode and
execution, its answer back), the host's own decode and execution, the device's total, the
terms the prediction has (``transfer``: forced down, the result's way to the client; pushed
back, the device -> host handover, ``to_host`` less the host's own run; ``result``: the
answer's way on from the device to the client), and the bytes and paced seconds every link
direction counted. Medians per placement in ``summary``.

    flock /tmp/colony-heavy.lock python -m colony.bench.pushback_legs --json OUT
"""

from __future__ import annotations

import argparse
import statistics
import time

SQL = "select * from particles where x < 0.95"


def _links(colony) -> dict:
    return {d: (v["bytes"], v.get("busy_s", 0.0)) for ln in colony.links() for d, v in ln["directions"].items()}


def run(rows: int = 400_000, rounds: int = 5, link_gbps: float = 8.0, seed: int = 1) -> dict:
    import colony
    from colony.data import uniform
    from colony.drivers.query import QueryClient
    from colony.machine import describe
    from colony.query.plan import TableSpec
    c = colony.connect()
    try:
        nics = [d.name for d in c.devices() if d.role == "smartnic"]
        host = next(d.name for d in c.devices() if d.role == "host")
        c.place("query", "all")
        t = uniform(rows, seed=seed)
        for i in range(4):       # TFT: tags that are multiples of the pool size land on its first member
            c.put("default", f"part-{i * len(nics):05d}", t.slice(i * rows // 4, rows // 4))
        for n in nics:
            c.set_link(n, link_gbps)
        client = QueryClient(c, host, {"particles": TableSpec("particles", "default", "part-*")})
        client.query(SQL, "down")                    # warm engines, caches and connections
        runs: dict = {"down": [], "back": []}
        for _ in range(rounds):
            for pl in runs:
                before = _links(c)
                t0 = time.perf_counter()
                r = client.query(SQL, pl)
                wall = time.perf_counter() - t0
                after = _links(c)
                moved = {d: {"bytes": after[d][0] - before.get(d, (0, 0.0))[0],
                             "busy_s": after[d][1] - before.get(d, (0, 0.0))[1]}
                         for d in after if after[d][0] != before.get(d, (0, 0.0))[0]}
                runs[pl].append({"wall_s": wall, "rows": r.table.num_rows, "result_bytes": r.table.nbytes,
                                 "actual": r.actual, "links": moved})
        summary = {pl: {k: statistics.median(x["actual"].get(k, 0.0) for x in rs)
                        for k in ("total", "to_host", "exec_host", "deser_host", "device_total", "transfer", "result",
                                  "exec")}
                   for pl, rs in runs.items()}
        return {"sql": SQL, "rows": rows, "rounds": rounds, "link_gbps": link_gbps, "summary": summary,
                "runs": runs, "machine": describe()}
    finally:
        c.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default="bench/results/query_pushback_legs.json")
    a = ap.parse_args()
    from colony.bench.common import write_json
    out = run(a.rows, a.rounds)
    write_json(a.json, out)
    for pl, s in out["summary"].items():
        print(pl, {k: round(v * 1e3, 1) for k, v in s.items()})


if __name__ == "__main__":
    main()
