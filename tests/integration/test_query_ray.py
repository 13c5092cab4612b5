"""The query service on the Ray runtime: placed on emulated SmartNICs, same answers as local SQL."""

import pytest

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def rt():
    import colony
    from colony.config.builders import embedded
    # its own colony name: in a session that already runs the `ray_colony` fixture, connect()
    # attaches to that Ray cluster, and a same-named colony would attach to its devices
    cfg = embedded(links_gbps={"nic0": 8.0}, pools={"particles": ["nic0"]}, name="querytest",
                   services={"query": {"devices": "all"}})
    c = colony.connect(cfg, temp_dir="/tmp/ray-issue5", num_cpus=2, object_store_memory=512 << 20)
    try:
        yield c, c        # the runtime paces nic0's calls at its 8 Gbit/s link itself
    finally:
        c.shutdown()


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
