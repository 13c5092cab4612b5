"""The benchmark's rounds shuffle the placement order: no placement always runs right after
the same other one (a run after a split pays for the split's large result)."""

from types import SimpleNamespace

import pyarrow as pa

from colony.drivers.workload import run_one


class _Client:
    def __init__(self):
        self.calls = []

    def query(self, sql, placement="auto", explain=False):
        if not explain:
            self.calls.append(placement)
        pred = {pl: {"total": 0.01, "exec": 0.005, "exec_host": 0.005} for pl in ("down", "back", "split")}
        return SimpleNamespace(placement="down" if placement == "auto" else placement, est_rows=1.0,
                               decision={"reason": "r", "predicted": pred, "estimate": {"supported": True}},
                               extra={"estimate_cpu_s": 1e-4}, table=pa.table({"a": [1]}),
                               actual={"total": 0.01, "exec": 0.005, "exec_host": 0.005})


def test_rounds_shuffle_the_placement_order_the_same_way_every_time():
    c = _Client()
    rec = run_one(c, "select 1", repeats=6)
    assert "error" not in rec, rec.get("error")
    rounds = [tuple(c.calls[i:i + 4]) for i in range(0, 24, 4)]
    assert all(sorted(r) == ["auto", "back", "down", "split"] for r in rounds)
    before_auto = {r[r.index("auto") - 1] for r in rounds if r.index("auto") > 0}
    assert len(set(rounds)) > 1 and len(before_auto) > 1
    again = _Client()
    run_one(again, "select 1", repeats=6)
    assert again.calls == c.calls                      # reproducible per statement
