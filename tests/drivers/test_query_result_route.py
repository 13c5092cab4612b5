"""A push-back's (and a split's) large result goes from the host straight to the client
(in-process colony): its bytes cross the host -> client link, never host -> device or
device -> client; a small result takes the normal call path."""

from __future__ import annotations

import pytest

from colony.drivers.emulated import emulated_colony, load_particles
from colony.drivers.query import QueryClient
from colony.pacing import counted
from colony.query import plan as qplan


def _bytes(lc, link: str, direction: str) -> int:
    return counted(lc.link_stats(), link, direction)


LEGS = {"host->client": ("client<->host", "host->client"), "nic0->client": ("client<->nic0", "nic0->client"),
        "host->nic0": ("nic0<->host", "host->nic0"), "nic0->host": ("nic0<->host", "nic0->host")}


def _legs(lc) -> dict:
    return {k: _bytes(lc, *v) for k, v in LEGS.items()}


@pytest.mark.parametrize("placement", ["back", "split"])
def test_large_pushed_back_result_crosses_the_host_client_link(tmp_path, placement):
    lc = emulated_colony(n_nics=1, links_gbps=[64.0], workdir=str(tmp_path))
    parts = load_particles(lc, "nic0", 40_000, objects=2, seed=5)
    sql = ("select particle_id, x, y, z from particles where x < 0.9" if placement == "back" else
           "select particle_id, x, y from particles where x < 0.9 order by x")
    before = _legs(lc)
    r = QueryClient(lc, "host").query(sql, placement)
    moved = {k: v - before[k] for k, v in _legs(lc).items()}
    ref = qplan.run_sql_locally(sql, {"particles": [parts]})
    keys = [("particle_id", "ascending"), ("x", "ascending")]
    assert r.placement == placement and r.table.sort_by(keys).equals(ref.sort_by(keys))
    assert r.table.nbytes > 512 << 10
    assert moved["host->client"] >= r.table.nbytes            # the result: host -> client, once
    assert moved["host->nic0"] < 64 << 10                     # not back through the device
    assert moved["nic0->client"] < 64 << 10
    assert moved["nic0->host"] > 0                            # the device's input to the host


def test_small_pushed_back_result_takes_the_call_path(tmp_path):
    lc = emulated_colony(n_nics=1, links_gbps=[64.0], workdir=str(tmp_path))
    load_particles(lc, "nic0", 20_000, objects=2, seed=6)
    before = _legs(lc)
    r = QueryClient(lc, "host").query("select particle_id & 3 as g, count(*) as n from particles group by g", "back")
    moved = {k: v - before[k] for k, v in _legs(lc).items()}
    assert r.table.num_rows == 4
    assert moved["host->client"] == 0 and moved["host->nic0"] > 0 and moved["nic0->client"] > 0


def test_set_link_paces_both_ends_of_a_device_link():
    lc = emulated_colony(n_nics=1, links_gbps=[4.0])
    assert lc.links["host"].gbps_to("nic0") == 4.0          # the host's end of nic0's link follows nic0
    lc.set_link("nic0", 2.0)
    assert lc.links["host"].gbps_to("nic0") == 2.0 and lc.links["nic0"].gbps_to("host") == 2.0
    assert lc.links["host"].gbps_to("client") is None       # the host's own link stays unpaced
