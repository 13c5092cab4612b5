"""Storm admission, the query-file runner's robustness, and the demo."""

import numpy as np
import pytest

from colony.cost.models import DeviceModels, LinearModel, NNLSExec
from colony.data import PARTICLE_SCHEMA
from colony.drivers.query import QueryClient, calibrate_colony
from colony.drivers.emulated import emulated_colony, load_particles
from colony.query.estimate import OPS
from colony.query.plan import TableSpec
from colony.drivers.workload import read_queries, run_file, summarize


def _models(name, threads, per_row, link_b):
    coef = [0.0] * len(OPS)
    coef[OPS.index("rows")] = per_row
    return DeviceModels(device=name, threads=threads, exec=NNLSExec(coef=coef, intercept=1e-4, serial=0.0),
                        ser_time=LinearModel(1e-5, 1e-9), ser_bytes=LinearModel(500, 1.0), deser_s=1e-5,
                        link=LinearModel(5e-5, link_b))


@pytest.fixture()
def pushback_colony():
    """Models that make push-back clearly cheaper (slow device, fast link, fast host)."""
    c = emulated_colony(n_nics=1)
    load_particles(c, "nic0", 20_000, objects=2)
    svc = c.host("nic0").services["query"]
    svc.models = _models("nic0", 1, 1e-5, 1e-12)
    svc.host_models = _models("host", 2, 1e-9, 1e-12)
    return c


def test_admission_refusal_keeps_the_query_on_the_device(pushback_colony):
    c = pushback_colony
    sql = "select * from particles where x < 0.9"
    free = QueryClient(c, "host", storm={"mode": "admission"}).query(sql)
    assert free.placement == "back"
    c.call("host", "query", "set_admission_limit", 0)
    refused = QueryClient(c, "host", storm={"mode": "admission"}).query(sql)
    assert refused.placement == "down" and "admission refused" in refused.decision["reason"]
    assert refused.table.num_rows == free.table.num_rows
    assert c.call("host", "query", "load")["queue_depth"] == 0      # nothing leaked


def test_probabilistic_control_sees_the_host_queue(pushback_colony):
    c = pushback_colony
    svc = c.host("nic0").services["query"]
    from colony.query import plan as qplan
    pb = qplan.to_substrait("select * from particles where x < 0.9", {"particles": PARTICLE_SCHEMA})
    tables = {"particles": ["particles", "*"]}
    busy = {"queue_depth": 400, "free_threads": 0, "threads": 2, "service_s": 1e-4}
    outs = [svc.explain(pb, tables, "auto", busy, {"mode": "probabilistic", "beta": 0.5})["decision"]["placement"]
            for _ in range(40)]
    assert outs.count("down") > 20
    idle = [svc.explain(pb, tables, "auto", None, {"mode": "probabilistic"})["decision"]["placement"]
            for _ in range(10)]
    assert idle.count("back") == 10


def test_query_file_runner_survives_anything(tmp_path):
    f = tmp_path / "q.sql"
    f.write_text("-- comment\n\n# another\nselect count(*) from particles where x < 0.5;\n"
                 "select nope from particles\nselect * from particles where y < 0.1\n")
    qs = read_queries(str(f))
    assert len(qs) == 3
    c = emulated_colony(n_nics=1)
    load_particles(c, "nic0", 20_000, objects=2)
    calibrate_colony(c, "host", n_runs=10, max_rows=30_000)
    recs = run_file(QueryClient(c, "host", {"particles": TableSpec("particles", "particles")}), qs)
    assert "error" in recs[1] and "UnknownColumn" in recs[1]["error"]
    ok = [r for r in recs if "error" not in r]
    assert len(ok) == 2
    for r in ok:
        assert r["oracle"] in r["actual"] and r["regret"] >= 0 and r["rows"] >= 0
        # the execution terms' own repeat error, beside the total's: the floor of the exec targets
        assert set(r["exec_repeat_err"]) == {"down", "back"} and min(r["exec_repeat_err"].values()) >= 0
    s = summarize(recs)
    assert s["errors"] == 1 and s["auto_over_oracle"] > 0 and s["unpriced"] == 0
    assert summarize([{**r, "predicted": {}} for r in recs])["unpriced"] == 2     # decided without prices
    floor = s["prediction_error"]["all"]["exec_noise_pct"]
    assert floor["all"]["n"] == 2 * len(ok) and floor["down"]["n"] == len(ok)
    assert floor["all"]["median"] == pytest.approx(float(np.median([v for r in ok
                                                                  for v in r["exec_repeat_err"].values()])))


def test_query_demo_writes_a_figure(tmp_path):
    from colony.demo.query import query_demo
    out = query_demo(None, str(tmp_path), rows=30_000, calib_runs=10)
    assert (tmp_path / "query_demo.png").exists()
    assert len(out["queries"]) == 4
    join = out["queries"][-1]
    assert join["decision"] in ("down", "back", "split") and "does not model" not in join["reason"]   # joins are estimated
    assert all(np.isfinite(v) for q in out["queries"] for v in q["actual"].values())
