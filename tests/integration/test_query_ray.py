"""The query service on the Ray runtime: placed on emulated SmartNICs, same answers as local SQL."""

import pytest

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def rt(ray_colony):
    """A second colony, "querytest", on the session's Ray cluster, on a node of its own.

    Its devices ask for resources of their own (``querytest_<device>``): the session colony's
    devices hold ``colony_<device>``, so a second colony asking for those waited for a node
    that never freed and failed its first call after the deadline whenever it ran after a
    test of the session colony."""
    import colony
    from colony.config.builders import default_dict
    from colony.config.schema import ColonyConfig
    d = default_dict()
    d["colony"]["name"] = "querytest"
    d["devices"]["nic0"]["link_gbps"] = 8.0
    # the host and the SmartNIC the pool lives on: the test uses no other device (the set-up's
    # time is mostly the added Ray node's start; three more actors cost CPU, not time, here)
    d["devices"] = {n: d["devices"][n] for n in ("host0", "nic0")}
    d["pools"] = {"particles": {"members": ["nic0"], "policy": "tft"}}
    d["services"] = {"query": {"devices": "all"}}
    for dev in d["devices"]:
        d["devices"][dev]["resources"] = {f"querytest_{dev}": 1}
    cfg = ColonyConfig.from_dict(d, source="<querytest>")
    cluster = ray_colony.cluster
    node = cluster.add_node(num_cpus=1, object_store_memory=256 << 20,
                            resources={f"querytest_{dev}": 1.0 for dev in cfg.devices})
    cluster.wait_for_nodes()
    c = colony.connect(cfg)
    try:
        yield c, c        # the runtime paces nic0's calls at its 8 Gbit/s link itself
    finally:
        c.shutdown()
        cluster.remove_node(node)


def test_query_on_emulated_smartnic_matches_local(rt):
    from colony.data import uniform
    from colony.query import plan as qplan
    from colony.drivers.query import QueryClient, calibrate_colony
    c, links = rt
    t = uniform(40_000, seed=9)
    for i in range(2):
        c.put("particles", f"p{i}", t.slice(i * 20_000, 20_000))
    calibrate_colony(links, "host0", n_runs=8, max_rows=20_000)
    client = QueryClient(links, "host0")
    for sql, key in (("select * from particles where x >= 0.7 and y < 0.3 and z <= 0.1", "x"),
                     ("select particle_id & 3 as g, count(*) as n from particles where x < 0.5 group by g", "g")):
        ref = qplan.run_sql_locally(sql, {"particles": [t]}).sort_by([(key, "ascending")])
        for pl in ("auto", "down", "back", "split"):
            r = client.query(sql, pl)
            got = r.table.sort_by([(key, "ascending")])
            assert got.equals(ref), (sql, pl)
            assert r.device == "nic0"
    assert links.call("nic0", "query", "health")["calibrated"]
