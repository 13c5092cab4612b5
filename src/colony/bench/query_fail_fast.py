"""``python -m colony.bench.query_fail_fast``: how soon `colony query` reports a bad SQL statement on a fresh home -> bench/results/query_fail_fast.json.

End to end through the real entry point (a new process each run, so interpreter and import
time count), plus the in-process parse+plan time of every corpus query against the schema."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from colony.bench.common import spread, write_json
from colony.data.schema import PARTICLE_SCHEMA
from colony.machine import describe
from colony.query.plan import to_substrait

COLONY = str(Path(sys.executable).with_name("colony"))
BAD = ["SELEC broken", "select nosuch from particles", "select * from nosuch", "select x from particles where"]




if __name__ == "__main__":
    from colony.bench.common import entry
    entry("colony.bench.query_fail_fast", __doc__)
    repeats = 5
    end_to_end = {}
    for sql in BAD:
        for local in (True, False):
            xs = []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as home:
                    t0 = time.perf_counter()
                    r = subprocess.run([COLONY, "query", *(["--local"] if local else []), sql], capture_output=True,
                                       env={**os.environ, "HOME": home}, timeout=300)
                    xs.append(time.perf_counter() - t0)
                    assert r.returncode == 2, r.stderr
            end_to_end[f"{sql} ({'--local' if local else 'ray'})"] = spread(xs)
    corpus = (Path(__file__).resolve().parent / "queries" / "corpus.sql").read_text().splitlines()
    plan_s = []
    for q in (q.strip() for q in corpus if q.strip() and not q.startswith("--")):
        t0 = time.perf_counter()
        to_substrait(q, {"particles": PARTICLE_SCHEMA})
        plan_s.append(time.perf_counter() - t0)
    res = {"machine": describe(), "end_to_end_s": end_to_end, "plan_corpus_s": spread(plan_s),
           "before": "issue 14 reports 25 s on a fresh home (calibration ran before parsing); not re-measured"}
    write_json("bench/results/query_fail_fast.json", res)
    for k, v in end_to_end.items():
        print(f"{k}: {v['min']:.2f}/{v['median']:.2f}/{v['max']:.2f} s")
    print("plan one corpus query:", {k: round(v * 1e3, 2) if isinstance(v, float) else v
                                     for k, v in spread(plan_s).items()}, "ms")
