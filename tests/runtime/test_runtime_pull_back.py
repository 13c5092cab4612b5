"""pull_back on the 3-node session colony: the device hands the host references and the host
pulls the objects from the device's read endpoint over Flight, charged by the device on its
link to the host; the device's call to the host carries no object bytes."""

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


def test_host_pulls_pushed_back_objects_over_the_devices_read_endpoint(ray_colony):
    c = ray_colony
    c.place("query", ["nic0", "host0"], pull_back=True)
    try:
        t = uniform(60_000, seed=4)
        keys = [f"pull/{i}" for i in (0, 4)]                      # TFT: both owned by nic0
        assert {c.owner("default", k) for k in keys} == {"nic0"}
        stored = sum(c.put("default", k, t.slice(i * 30_000, 30_000)).nbytes for i, k in enumerate(keys))
        assert c.pull("nic0", "default", keys[0]).size > 0       # the client may pull too (its own link end)
        client = QueryClient(c, "host0", tables={"particles": TableSpec("particles", "default", "pull/*")},
                             devices=["nic0"])
        sql = "select particle_id & 3 as g, count(*) as n from particles where x < 0.5 group by g"
        sent0 = _bytes(c, "host0<->nic0", "nic0->host0")             # charged by nic0 (its send)
        args0 = _bytes(c, "nic0<->host0", "nic0->host0")             # charged by host0 (call arguments)
        r = client.query(sql, "back")
        ref = qplan.run_sql_locally(sql, {"particles": [t]}).sort_by([("g", "ascending")])
        assert r.placement == "back" and r.table.sort_by([("g", "ascending")]).equals(ref)
        assert _bytes(c, "host0<->nic0", "nic0->host0") - sent0 >= stored
        assert _bytes(c, "nic0<->host0", "nic0->host0") - args0 < 16 << 10
        for k in keys:
            c.drop("default", k)
    finally:
        c.place("query", ["nic0", "host0"])                 # back to the default for the session's other tests
