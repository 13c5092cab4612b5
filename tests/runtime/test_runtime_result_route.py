"""On the 3-node session colony, a push-back's large result goes from the host straight to
the client (DoGet on the host's Flight endpoint): its bytes are counted on the host0 -> client
link, never on host0 -> nic0 or nic0 -> client; a device's new link rate paces the host's
end of that link too."""

from __future__ import annotations

import pytest

from colony.data import uniform
from colony.drivers.query import QueryClient
from colony.pacing import counted
from colony.query import plan as qplan
from colony.query.plan import TableSpec

pytestmark = pytest.mark.ray


def _bytes(colony, link: str, direction: str) -> int:
    return counted(colony.links(), link, direction)


LEGS = {"host0->client": ("client<->host0", "host0->client"), "nic0->client": ("client<->nic0", "nic0->client"),
        "host0->nic0": ("nic0<->host0", "host0->nic0"), "nic0->host0": ("nic0<->host0", "nic0->host0")}


def test_pushed_back_result_goes_host_to_client_not_through_the_device(ray_colony):
    c = ray_colony
    c.place("query", ["nic0", "host0"])
    t = uniform(60_000, seed=4)
    keys = [f"route/{i}" for i in (0, 4)]                      # TFT: both owned by nic0
    assert {c.owner("default", k) for k in keys} == {"nic0"}
    for i, k in enumerate(keys):
        c.put("default", k, t.slice(i * 30_000, 30_000))
    client = QueryClient(c, "host0", tables={"particles": TableSpec("particles", "default", "route/*")},
                         devices=["nic0"])
    sql = "select particle_id, x, y, z from particles where x < 0.9"
    before = {k: _bytes(c, *v) for k, v in LEGS.items()}
    fetched = c.transfers.results
    r = client.query(sql, "back")
    moved = {k: _bytes(c, *v) - before[k] for k, v in LEGS.items()}
    ref = qplan.run_sql_locally(sql, {"particles": [t]})
    order = [("particle_id", "ascending"), ("x", "ascending")]
    assert r.placement == "back" and r.table.sort_by(order).equals(ref.sort_by(order))
    assert r.table.nbytes > 1 << 20
    assert moved["host0->client"] >= r.table.nbytes            # the result: host0 -> client
    assert c.transfers.results > fetched                       # fetched from an endpoint (host0's)
    assert moved["host0->nic0"] < 64 << 10 and moved["nic0->client"] < 64 << 10
    assert moved["nic0->host0"] > r.table.nbytes               # the raw objects went to the host
    c.set_link("nic0", 4.0)                                    # both ends of nic0 <-> host0 follow
    try:
        rates = {ln["link"]: ln["gbps"] for ln in c.links()}
        assert rates["nic0<->host0"] == 4.0
    finally:
        c.set_link("nic0", None)
    for k in keys:
        c.drop("default", k)
