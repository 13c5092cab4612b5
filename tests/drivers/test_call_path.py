"""Calibration through the call path: probe queries under every placement fit a
per-placement correction that the device adds to its predictions."""

import pytest

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.query import PROBE_POOL, QueryClient, calibrate_colony
from colony.runtime.local import LocalColony


def test_probe_queries_fit_a_call_path_correction_and_leave_no_probe_data():
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    lc.set_link("nic0", 1.6)                                                # a slow link
    link = lc
    lc.store("nic0").put("particles", "o0", uniform(30_000, seed=1))
    models = calibrate_colony(link, "host", n_runs=16, max_rows=40_000)
    cp = models["nic0"]["call_path"]
    rep = models["nic0"]["report"]["call_path"]
    assert {"down", "back"} <= set(cp) and all(set(v) == {"a", "b"} for v in cp.values())
    for pl in cp:
        assert rep[pl]["n"] >= 3 and rep[pl]["ape_after_median"] <= rep[pl]["ape_before_median"] + 1e-9
    assert PROBE_POOL not in lc.store("nic0").pools() or not lc.store("nic0").list(PROBE_POOL)
    for d in ("host", "nic0"):     # the probes taught no online correction: nothing can drift from them
        h = lc.call(d, "query", "health")
        assert h["corrections"] == {} and h["drift"] == [], (d, h["corrections"])
    r = QueryClient(link, "host").query("select * from particles where x < 0.1", "down")
    terms = r.decision["predicted"]["down"]
    assert "call" in terms and abs(terms["total"] - sum(v for k, v in terms.items()
                                                        if k not in ("total", "bytes"))) < 1e-12


def test_ensure_calibrated_says_why_it_calibrates_and_then_keeps_the_records():
    from colony.drivers.query import ensure_calibrated
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    lc.store("nic0").put("particles", "o0", uniform(10_000, seed=2))
    said = []
    assert ensure_calibrated(lc, "host", 6, 20_000, on_calibrate=said.append)
    assert said == ["no device calibrated yet"]
    assert not ensure_calibrated(lc, "host", 6, 20_000, on_calibrate=said.append)    # kept: nothing drifted
    assert ensure_calibrated(lc, "host", 6, 20_000, recalibrate=True, on_calibrate=said.append)
    assert said[-1] == "asked to"
    # sizes as a first calibration's defaults: any valid record is kept
    assert not ensure_calibrated(lc, "host", 60, 400_000, on_calibrate=said.append)
    # sizes as a requirement (a benchmark, the demo): a record made on smaller tables (or fewer
    # runs) than asked is not used for the larger ones
    assert not ensure_calibrated(lc, "host", 4, 18_500, on_calibrate=said.append, cover=True)    # covered
    assert ensure_calibrated(lc, "host", 6, 40_000, on_calibrate=said.append, cover=True)
    assert "covers 6 runs to 20,000 rows" in said[-1] and "asked for 6 to 40,000" in said[-1]
    assert lc.call("nic0", "query", "health")["sizes"]["max_rows"] == 40_000
    # only the devices whose records fall short (here of runs: 6 of 16 asked) are redone, on
    # the host's record, which covers
    from colony.drivers.query import calibrate_colony
    calibrate_colony(lc, "host", n_runs=16, max_rows=40_000, devices=["host"])
    host_before = lc.call("host", "query", "models_json")
    assert ensure_calibrated(lc, "host", 16, 40_000, on_calibrate=said.append, cover=True)
    assert "nic0's record covers 6 runs to 40,000 rows" in said[-1] and "asked for 16 to 40,000" in said[-1] \
        and "calibrating nic0 only" in said[-1]
    assert lc.call("host", "query", "models_json") == host_before
    assert lc.call("nic0", "query", "health")["sizes"]["runs"] == 16
    assert not ensure_calibrated(lc, "host", 16, 40_000, on_calibrate=said.append, cover=True)


def test_a_device_without_a_record_is_calibrated_alone_on_the_hosts_record():
    from colony.drivers.query import ensure_calibrated
    from colony.errors import UnknownDevice
    spec = {"host": {"role": "host", "threads": 2, "services": {"query": {}}},
            "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}}, "pools": ["particles"]},
            "nic1": {"role": "smartnic", "threads": 1, "services": {"query": {}}, "pools": ["particles"]}}
    lc = LocalColony(devices_config(spec))
    for n in ("nic0", "nic1"):
        lc.store(n).put("particles", "o0", uniform(10_000, seed=4))
    # the queries run on nic0: only the host and nic0 are calibrated
    assert ensure_calibrated(lc, "host", 8, 30_000, devices=["nic0"])
    host_before, nic0_before = lc.call("host", "query", "models_json"), lc.call("nic0", "query", "models_json")
    said = []
    assert lc.call("nic1", "query", "health")["calibrated"] is False
    assert not ensure_calibrated(lc, "host", 8, 30_000, devices=["nic0"], on_calibrate=said.append) and not said
    with pytest.raises(UnknownDevice, match="no device nic7 in this colony"):
        ensure_calibrated(lc, "host", 8, 30_000, devices=["nic7"])
    assert ensure_calibrated(lc, "host", 4, 20_000, on_calibrate=said.append, cover=True)
    assert said == ["nic1 not calibrated; the host's record covers it: calibrating nic1 only"]
    assert lc.call("host", "query", "models_json") == host_before       # the larger host record is kept
    assert lc.call("nic0", "query", "models_json") == nic0_before
    assert lc.call("nic1", "query", "health")["sizes"]["max_rows"] == 20_000
    # a host record that falls short of what is asked: every device is calibrated, as before
    said.clear()
    assert ensure_calibrated(lc, "host", 8, 60_000, on_calibrate=said.append, cover=True)
    assert "host's record covers 8 runs to 30,000 rows" in said[-1] and "only" not in said[-1]
    assert lc.call("host", "query", "health")["sizes"]["max_rows"] == 60_000


def test_a_drifted_record_is_recalibrated_over_the_sizes_it_covered():
    from colony.drivers.query import ensure_calibrated
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    lc.store("nic0").put("particles", "o0", uniform(10_000, seed=3))
    assert ensure_calibrated(lc, "host", 6, 20_000)
    assert lc.call("nic0", "query", "health")["sizes"] == {"runs": 6, "min_rows": 10_000, "max_rows": 20_000,
                                                           "seed": 1}
    svc = lc.host("nic0").services["query"]
    for _ in range(40):                       # its queries ran 3x slower than predicted, again and again
        svc.models.residuals.update("filter", 1.0, 3.0)
    assert lc.call("nic0", "query", "health")["drift"]
    said = []
    # a drift recalibration repeats the record's sizes, not the caller's
    assert ensure_calibrated(lc, "host", 500, 5_000_000, on_calibrate=said.append)
    assert said[-1].startswith("nic0 drifted") and "6 runs to 20,000 rows, as recorded" in said[-1]
    h = lc.call("nic0", "query", "health")
    assert h["sizes"]["runs"] == 6 and h["sizes"]["max_rows"] == 20_000 and not h["drift"]


def test_devices_that_keep_their_records_get_the_hosts_models_when_another_is_calibrated(tmp_path):
    """A restarted colony where one SmartNIC lost its record (pruned, or a new device): only
    that one is calibrated, and the others, whose models load from their records, must still
    get the host's models. Without them every decision there was "down", unpriced (a benchmark
    run reported no decision accuracy at all)."""
    from colony.drivers.query import ensure_calibrated
    from colony.query.plan import TableSpec
    q = {"query": {"models_dir": str(tmp_path)}}         # records on disk, as a Ray device keeps them
    spec = {"host": {"role": "host", "threads": 2, "services": q},
            "nic0": {"role": "smartnic", "threads": 1, "services": q, "pools": ["particles"]},
            "nic1": {"role": "smartnic", "threads": 1, "services": q, "pools": ["particles"]}}
    lc = LocalColony(devices_config(spec))
    lc.store("nic0").put("particles", "o0", uniform(10_000, seed=4))
    calibrate_colony(lc, "host", n_runs=8, max_rows=30_000, devices=["host", "nic0"])    # nic1 has no record
    fresh = LocalColony(devices_config(spec))        # restarted: each device loads its own record
    fresh.store("nic0").put("particles", "o0", uniform(10_000, seed=4))
    assert fresh.hosts["nic0"].services["query"].models is not None
    assert fresh.hosts["nic0"].services["query"].host_models is None
    said = []
    assert ensure_calibrated(fresh, "host", 8, 30_000, on_calibrate=said.append, cover=True)
    assert said == ["nic1 not calibrated; the host's record covers it: calibrating nic1 only"]
    client = QueryClient(fresh, "host", {"particles": TableSpec("particles", "particles", "*")})
    r = client.query("select particle_id & 15 as g, count(*) from particles group by g", explain=True)
    assert r.decision["reason"].startswith("lowest predicted latency")
    assert {"down", "back"} <= set(r.decision["predicted"])


def test_a_small_calibration_probes_with_about_as_many_templates_as_runs():
    """Each probe set keeps its share of the budget (at least 2 of its templates); a budget of
    every template or more, or none, keeps every set whole and draws nothing."""
    import numpy as np

    from colony.cost.calibrate import LTEMPLATES
    from colony.drivers.query import PROBES, _probe_budget, _probe_sets, call_path_sizes
    sizes = call_path_sizes(30_000)
    sets = list(_probe_sets(sizes, 0))
    total = sum(len(p) for _t, p in sets)
    # the particle probes at every size, the TPC-H-shaped templates at the two largest
    assert len(sets) == len(sizes) + 2 and total == len(sizes) * len(PROBES) + 2 * len(LTEMPLATES)
    rng, twin = (np.random.Generator(np.random.SFC64(1)) for _ in range(2))
    for whole in (None, total, 240):
        assert _probe_budget(sets, whole, rng) == sets
    assert rng.random() == twin.random()        # nothing drawn: a full calibration's constants as before
    for budget in (6, 16, 30):
        cut = _probe_budget(sets, budget, rng)
        assert [t for t, _p in cut] == [t for t, _p in sets]
        kept = [len(p) for _t, p in cut]
        assert all(2 <= k <= len(p) for k, (_t, p) in zip(kept, sets))
        assert all(set(c) <= set(p) and len(set(c)) == len(c) for (_t, c), (_u, p) in zip(cut, sets))
        assert sum(kept) <= max(budget + len(sets), 2 * len(sets))
    assert sum(len(p) for _t, p in _probe_budget(sets, 6, rng)) == 10
