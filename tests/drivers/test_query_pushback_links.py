"""Push-back from several devices goes device -> host directly (in-process colony): every
device's raw objects cross its own link to the host, the client's links carry answers only."""

from __future__ import annotations

from colony.drivers.emulated import emulated_colony, load_particles
from colony.drivers.query import QueryClient, calibrate_colony
from colony.pacing import counted
from colony.query import plan as qplan


def _bytes(lc, link: str, direction: str) -> int:
    return counted(lc.link_stats(), link, direction)


def test_multi_device_push_back_crosses_each_devices_host_link(tmp_path):
    lc = emulated_colony(n_nics=2, links_gbps=[64.0, 64.0], workdir=str(tmp_path))
    parts = [load_particles(lc, f"nic{i}", 20_000, objects=2, seed=i) for i in range(2)]
    calibrate_colony(lc, "host", n_runs=8, max_rows=20_000)
    stored = {f"nic{i}": sum(lc.store(f"nic{i}").get("particles", k).size
                             for k in lc.store(f"nic{i}").list("particles")) for i in range(2)}
    before = {d: _bytes(lc, f"{d}<->host", f"{d}->host") for d in stored}
    before_client = {d: _bytes(lc, f"client<->{d}", f"{d}->client") for d in stored}
    sql = "select particle_id, x from particles where x < 0.2"
    r = QueryClient(lc, "host").query(sql, "back")
    ref = qplan.run_sql_locally(sql, {"particles": parts})
    keys = [("particle_id", "ascending"), ("x", "ascending")]
    assert r.table.sort_by(keys).equals(ref.sort_by(keys))
    for d, n in stored.items():
        assert _bytes(lc, f"{d}<->host", f"{d}->host") - before[d] >= n          # raw objects to the host
        assert _bytes(lc, f"client<->{d}", f"{d}->client") - before_client[d] < n / 4
