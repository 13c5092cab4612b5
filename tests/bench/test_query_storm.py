"""The storm benchmark's pieces on an in-process colony: pinned-core config, a burst under a
policy, and the mixed workload record/summary."""

from colony.bench.query_storm import _config, burst, mixed
from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.query import QueryClient, calibrate_colony
from colony.query.plan import TableSpec
from colony.runtime.local import LocalColony


def test_config_pins_host_and_devices_to_different_cores():
    cfg = _config("/tmp/none", 2)
    cores = {d.name: d.cores for d in cfg.devices.values()}
    assert cores["host0"] == (0,) and all(cores[f"nic{i}"] == (1,) for i in range(4))


def test_burst_and_mixed_workload_on_a_local_colony():
    spec = {"host": {"role": "host", "threads": 2, "services": {"query": {}}}}
    for i in range(4):
        spec[f"nic{i}"] = {"role": "smartnic", "threads": 1, "services": {"query": {}},
                           "pools": [f"particles_nic{i}"]}
    lc = LocalColony(devices_config(spec))
    for i in range(4):
        lc.store(f"nic{i}").put(f"particles_nic{i}", "o0", uniform(8_000, seed=i))
    for i in range(4):
        lc.set_link(f"nic{i}", 8.0)
    link = lc
    calibrate_colony(link, "host", n_runs=10, max_rows=10_000)
    clients = {f"nic{i}": QueryClient(link, "host", {"particles": TableSpec("particles", f"particles_nic{i}")})
               for i in range(4)}
    b = burst(clients, "down", 2, seed=1)
    assert b["queries"] == 8 and b["pushed_back"] == 0 and b["p99_s"] >= b["p50_s"] > 0
    qs = [{"sql": "select * from particles where x < 0.1", "family": "T16", "held_out": False},
          {"sql": "select particle_id & 7 as g, count(*) from particles group by g", "family": "T11",
           "held_out": True}]
    m = mixed(link, "host", qs, 3, seed=2)
    s = m["summary"]
    assert s["queries"] == 2 and s["failures"] == 0 and {r["device"] for r in m["records"]} <= set(clients)
    assert "always_down" in s["total_s"] and s["prediction_error"]["held_out"]
