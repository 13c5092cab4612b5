"""The storm benchmark's rounds: every policy once per round, the order rotated, p50/p99
spread per policy, the engine's decision log kept, the best static policy by median p99."""

from types import SimpleNamespace

from colony.bench.query import _put_particles
from colony.bench.query_storm import spread, storm_rounds
from colony.drivers.emulated import emulated_colony
from colony.drivers.query import QueryClient, calibrate_colony
from colony.query.plan import TableSpec


def test_rounds_rotate_policies_and_summarize_spread():
    c = emulated_colony(n_nics=2)
    for i in range(2):
        keys = _put_particles(c, f"nic{i}", 6_000, 2, i, f"particles_nic{i}")
        assert len(keys) == 2
    calibrate_colony(c, "host", n_runs=8, max_rows=6_000)

    def clients(send_load=True):
        return {f"nic{i}": QueryClient(c, "host", {"particles": TableSpec("particles", f"particles_nic{i}")},
                                       send_load=send_load) for i in range(2)}
    policies = {"load_aware": (clients(), "auto"), "always_down": (clients(), "down"),
                "always_back": (clients(), "back")}
    a = SimpleNamespace(rounds=2, per_device=2, admission_limit=2)
    out = storm_rounds(c, "host", policies, a, {})
    assert [rd["order"] for rd in out["rounds"]] == [["load_aware", "always_down", "always_back"],
                                                     ["always_down", "always_back", "load_aware"]]
    for rd in out["rounds"]:
        assert "log" in rd["policies"]["load_aware"] and "log" not in rd["policies"]["always_down"]
        assert len(rd["policies"]["load_aware"]["log"]) == 4
        assert rd["policies"]["always_back"]["pushed_back"] == 4
    per = out["per_policy"]["always_back"]["p99_s"]
    assert per["min"] <= per["median"] <= per["max"] and len(per["runs"]) == 2
    s = out["summary"]
    assert s["best_static"] in ("always_down", "always_back")
    assert s["load_aware_le_best_static"] == (s["load_aware_p99_s"] <= s["best_static_p99_s"])
    assert spread([3.0, 1.0, 2.0]) == {"min": 1.0, "median": 2.0, "max": 3.0, "runs": [3.0, 1.0, 2.0]}
