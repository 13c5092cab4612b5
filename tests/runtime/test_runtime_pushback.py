"""Push-back goes device -> host directly on the 3-node session colony: the raw objects
cross (and are counted on) the SmartNIC->host link, the client's link carries only the
answer."""

from __future__ import annotations

import pytest

from colony.data import uniform
from colony.drivers.query import QueryClient
from colony.pacing import counted
from colony.query import plan as qplan
from colony.query.plan import TableSpec

pytestmark = pytest.mark.ray


def _args_sent(colony, device: str) -> int:
    return next(s["flight_args_sent"] for s in colony.status() if s["device"] == device)


def _bytes(colony, link: str, direction: str) -> int:
    return counted(colony.links(), link, direction)


@pytest.mark.parametrize("placement", ["back", "split"])
def test_pushed_back_objects_cross_the_device_host_link_not_the_clients(ray_colony, placement):
    c = ray_colony
    c.place("query", ["nic0", "host0"])       # only where needed: the query service adds a stats pool
    t = uniform(60_000, seed=3)
    keys = [f"pb{placement}/{i}" for i in (0, 4)]                 # TFT: both owned by nic0
    assert {c.owner("default", k) for k in keys} == {"nic0"}
    stored = 0
    for i, k in enumerate(keys):
        stored += c.put("default", k, t.slice(i * 30_000, 30_000)).nbytes
    client = QueryClient(c, "host0", tables={"particles": TableSpec("particles", "default", f"pb{placement}/*")},
                         devices=["nic0"])
    sql = "select particle_id & 3 as g, count(*) as n from particles where x < 0.5 group by g"
    to_host0 = _bytes(c, "nic0<->host0", "nic0->host0")
    busy0 = counted(c.links(), "nic0<->host0", "nic0->host0", "busy_s")
    to_client0 = _bytes(c, "client<->nic0", "nic0->client")
    args0 = _args_sent(c, "nic0")
    r = client.query(sql, placement)
    busy = counted(c.links(), "nic0<->host0", "nic0->host0", "busy_s") - busy0
    ref = qplan.run_sql_locally(sql, {"particles": [t]}).sort_by([("g", "ascending")])
    assert r.placement == placement and r.table.sort_by([("g", "ascending")]).equals(ref)
    to_host = _bytes(c, "nic0<->host0", "nic0->host0") - to_host0
    to_client = _bytes(c, "client<->nic0", "nic0->client") - to_client0
    if placement == "back":
        assert stored <= to_host < stored + (64 << 10)     # every raw object crossed nic0 -> host0, once
        # each 2.2 MB object went ahead of the call over host0's Flight endpoint (another node)
        assert _args_sent(c, "nic0") - args0 == len(keys)
    else:
        assert to_host > 0                       # the device's partial result crossed nic0 -> host0
    assert to_client < 16 << 10                  # the client got only the (tiny) answer
    # the measured legs carry the predicted terms' names: `transfer` is the device -> host
    # handover (it holds the paced push the link charged), `result` the answer's way on to the
    # client; with the host's own run they fit inside the client's total
    a = r.actual
    assert a["transfer"] >= 0.9 * busy and (busy > 0 or placement == "split")   # a cut's few rows: maybe 0
    assert a["transfer"] <= a["to_host"] and a["result"] >= 0.0
    assert a["transfer"] + a["result"] + a["deser_host"] + a["exec_host"] <= a["total"]
    for k in keys:
        c.drop("default", k)
