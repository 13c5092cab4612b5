"""A service placed at run time (what `colony load` does with the query service on a
colony `colony up` started) is placed again when Ray restarts its device (issue 16).

Named to run after test_query_ray.py, which starts its own cluster before the session
colony exists (both need the same device resources)."""

import os
import signal
import time

from colony.data import uniform
from colony.drivers.query import QueryClient
from colony.errors import RuntimeFailure
from colony.query.plan import TableSpec

DEV = "nic2"


def _status(c, device):
    return next(s for s in c.status() if s["device"] == device)


def test_a_run_time_placement_survives_the_devices_restart(ray_colony, tmp_path):
    c = ray_colony
    keys = [k for k in (f"placed/{i}" for i in range(64)) if c.owner("durable", k) == DEV][:2]
    t = uniform(20_000, seed=4)
    for i, k in enumerate(keys):
        c.put("durable", k, t.slice(i * 10_000, 10_000))
    c.place("query", ["host0", DEV], models_dir=str(tmp_path / "models"), timeout_s=30)
    client = QueryClient(c, "host0", {"t": TableSpec("t", "durable", "placed/*")}, devices=[DEV])
    sql = "select count(*) as n from t where x < 0.5"
    want = sum(x < 0.5 for x in t["x"].to_pylist())
    assert client.query(sql, "down").table["n"][0].as_py() == want
    before = _status(c, DEV)
    assert "query" in before["services"]
    os.kill(before["pid"], signal.SIGKILL)
    deadline = time.time() + 60
    while True:
        try:
            after = _status(c, DEV)
            break
        except RuntimeFailure:
            if time.time() > deadline:
                raise
            time.sleep(0.5)
    assert after["restarted"] and after["pid"] != before["pid"]
    assert "query" in after["services"]                         # placed again, with its options
    assert c.call(DEV, "query", "health")["ok"]
    assert client.query(sql, "down").table["n"][0].as_py() == want
    for k in keys:
        c.drop("durable", k)
