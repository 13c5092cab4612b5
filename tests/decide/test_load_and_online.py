"""The device's own load in its predictions, the latency/utilization policies, the bounded
queue, and the online correction of the cost model (bounded, decaying, drift flagged)."""

import numpy as np
import pytest

from colony.config.builders import devices as devices_config
from colony.cost.models import DeviceModels, LinearModel, OpsExec, Residuals
from colony.data import uniform
from colony.decide import DeviceLoad, HostLoad, decide, loaded_exec, total_as_priced
from colony.drivers.query import QueryClient, calibrate_colony
from colony.errors import DeviceBusy, QueryError
from colony.query.estimate import OPS, Estimate
from colony.runtime.local import LocalColony


def _models(name, threads, per_row):
    k = len(OPS)
    serial = [0.0] * k
    serial[OPS.index("rows")] = per_row
    return DeviceModels(device=name, threads=threads, exec=OpsExec(serial=serial, parallel=[0.0] * k, intercept=1e-4),
                        ser_time=LinearModel(1e-5, 1e-9), ser_bytes=LinearModel(500, 1.0), deser_s=1e-5,
                        link=LinearModel(5e-5, 1e-9))


def _est(rows=1e6):
    ops = dict.fromkeys(OPS, 0.0)
    ops["rows"] = rows
    return Estimate(rows=rows / 100, out_cols=2, out_width=16.0, ops=ops, input_rows=rows, input_bytes=int(rows * 72),
                    objects=4)


def _calibrated():
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    lc.store("nic0").put("particles", "o0", uniform(20_000, seed=2))
    lc.set_link("nic0", 8.0)
    link = lc
    calibrate_colony(link, "host", n_runs=12, max_rows=20_000)
    return lc, link


def test_device_queue_enters_down_and_policies_differ():
    dev, host = _models("nic", 1, 2e-8), _models("host", 2, 1e-8)
    idle = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2))
    assert idle.placement == "down" and "queue" not in idle.predicted["down"]
    busy = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2),
                  dev_load=DeviceLoad(queue_depth=20, service_s=0.05, threads=1, limit=64))
    assert busy.predicted["down"]["queue"] == pytest.approx(1.0)
    assert busy.placement == "back"                        # latency: the queue makes down slower
    util = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2),
                  dev_load=DeviceLoad(queue_depth=20, service_s=0.05, threads=1, limit=64), policy="utilization")
    assert util.placement == "down" and "utilization" in util.reason
    full = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2),
                  dev_load=DeviceLoad(queue_depth=64, service_s=0.05, threads=1, limit=64), policy="utilization")
    assert full.placement == "back"
    with pytest.raises(QueryError, match="policy"):
        decide(_est(), dev, host, policy="fastest")


def test_a_worker_start_is_priced_once_but_does_not_decide():
    """A start is in the prediction of the placement that pays it, added once (after the
    call-path fit), and out of the comparison: it serves every later query there, and counted,
    a device with no worker yet lost every query to a warm host and never started one."""
    dev, host = _models("nic", 1, 2e-8), _models("host", 2, 1e-8)
    warm = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2))
    cold = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2), dev_load=DeviceLoad(threads=1, start_s=1.1))
    assert cold.predicted["down"]["worker_start"] == 1.1 and "worker_start" not in cold.predicted["back"]
    assert cold.predicted["down"]["total"] == pytest.approx(warm.predicted["down"]["total"] + 1.1)
    assert cold.predicted["down"]["total"] > cold.predicted["back"]["total"]
    assert cold.placement == warm.placement == "down" and "paid once" in cold.reason
    hosted = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2, start_s=0.9))
    assert hosted.predicted["back"]["worker_start_host"] == 0.9 and "worker_start_host" not in hosted.predicted["down"]
    assert hosted.placement == "down"
    # the utilization policy says so where it compared placements (a full queue), not where it
    # kept the query down without comparing
    room = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2, start_s=0.9), policy="utilization",
                  dev_load=DeviceLoad(threads=1, limit=4))
    assert room.placement == "down" and room.reason == "utilization policy: the device has room"
    full = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2, start_s=0.9), policy="utilization",
                  dev_load=DeviceLoad(queue_depth=4, threads=1, limit=4))
    assert full.placement != "down" and "device queue full" in full.reason and "paid once" in full.reason


def test_residuals_are_bounded_decay_and_flag_drift():
    r = Residuals(alpha=0.2, bound=2.0, drift_at=1.5, min_n=10)
    for _ in range(50):                                    # the device became 3x slower
        r.update("filter", 1.0 * r.factor("filter"), 3.0)
    assert r.factor("filter") == pytest.approx(2.0)        # bounded
    assert "filter" in r.drifted()                         # (and "*": the whole device drifted)
    for _ in range(40):                                    # back to normal: old evidence decays
        r.update("filter", 1.0 * r.factor("filter"), 1.0)
    assert r.factor("filter") == pytest.approx(1.0, abs=0.01) and not r.drifted()
    m = _models("nic", 1, 2e-8)
    base = m.predict_exec(_est().ops)
    fam = m.family(_est().ops)
    assert fam.rpartition("@")[0] == "rows[]"      # only data volume is priced: its largest term, no shape
    m.residuals.update(fam, base, 1.5 * base)
    assert m.predict_exec(_est().ops) == pytest.approx(base * np.exp(0.2 * np.log(1.5)))


def test_a_query_no_operator_prices_still_corrects_the_device_wide_entry():
    """A short calibration can fit the linear part to an intercept alone: no operator of a
    query carries cost, and without a family such a device never corrected itself online."""
    m = _models("nic", 1, 0.0)
    assert m.family(_est().ops) == Residuals.GLOBAL
    base = m.predict_exec(_est().ops)
    m.residuals.update(m.family(_est().ops), base, 2.0 * base)
    assert m.predict_exec(_est().ops) == pytest.approx(base * np.exp(0.2 * np.log(2.0)))


def test_service_corrects_online_reports_it_and_bounds_its_queue():
    lc, link = _calibrated()
    c = QueryClient(link, "host")
    for _ in range(3):
        c.query("select * from particles where x < 0.2", "down")
    h = link.call("nic0", "query", "health")
    assert h["learner"] in ("ops", "nnls", "blend", "forest") and h["corrections"]
    assert sum(v["n"] for v in h["corrections"].values()) >= 3 and h["queue"] == 0
    lc.host("nic0").services["query"].max_queue = 0
    with pytest.raises(DeviceBusy, match="queued"):
        c.query("select * from particles where x < 0.2", "down")


def test_family_attribution_works_for_the_amdahl_learner_too():
    from colony.cost.models import NNLSExec
    m = _models("nic", 1, 2e-8)
    coef = [0.0] * len(OPS)
    coef[OPS.index("filter")] = 1e-8
    m.exec = NNLSExec(coef=coef, intercept=1e-4, serial=0.5)
    ops = dict.fromkeys(OPS, 0.0)
    ops["filter"] = 1e6
    assert m.family(ops).rpartition("@")[0] == "filter[]"


def test_the_correction_key_is_the_compute_operator_and_shape_not_the_bytes_every_query_reads():
    """On a host that receives pushed-back objects the copy of the input dominates every
    query's predicted time; the correction must still tell a filter from a group-by."""
    from colony.cost.models import OpsExec
    m = _models("host", 2, 2e-8)
    serial = [0.0] * len(OPS)
    serial[OPS.index("in_bytes")] = 1e-9            # 72 MB in: ~70 ms, larger than any operator
    serial[OPS.index("cmp")] = 2e-9
    serial[OPS.index("hash_agg")] = 5e-9
    m.exec = OpsExec(serial=serial, parallel=[0.0] * len(OPS), intercept=1e-4)
    filt = dict.fromkeys(OPS, 0.0)
    filt.update(in_bytes=72e6, rows=1e6, scan=9e6, cmp=1e6)
    agg = dict(filt, hash_agg=1e6, groups=16.0)
    assert m.family(filt).startswith("cmp[]@") and m.family(agg).startswith("hash_agg[agg]@")
    base_f, base_a = m.predict_exec(filt), m.predict_exec(agg)
    for _ in range(20):                                # group-bys run 30 % faster than modelled
        m.residuals.update(m.family(agg), m.predict_exec(agg), 0.7 * base_a)
    assert m.predict_exec(agg) == pytest.approx(0.7 * base_a, rel=0.05)
    # the filter moves only by the device-wide half of those steps, not by the group-by's own
    assert abs(np.log(m.predict_exec(filt) / base_f)) < 0.6 * abs(np.log(0.7))


def test_residuals_keep_a_bounded_number_of_shapes():
    r = Residuals(max_entries=8)
    for i in range(20):
        r.update(f"cmp[s{i}]", 1.0, 1.1)
    assert len(r.state) == 8 and Residuals.GLOBAL in r.state and "cmp[s19]" in r.state and "cmp[s0]" not in r.state


def test_client_feedback_corrects_the_end_to_end_prediction():
    lc, link = _calibrated()
    svc = lc.host("nic0").services["query"]
    svc.models.call_path["down"] = {"a": 0.5, "b": 1.0}       # a call-path fit 0.5 s too slow
    c = QueryClient(link, "host")
    first = c.query("select * from particles where x < 0.2", "down").decision["predicted"]["down"]["total"]
    for _ in range(6):
        last = c.query("select * from particles where x < 0.2", "down").decision["predicted"]["down"]["total"]
    assert first > 0.5 and last < 0.6 * first
    corr = link.call("nic0", "query", "health")["corrections"]
    ours = [k for k in corr if k.startswith("total:down@")]
    assert len(ours) == 1 and corr[ours[0]]["n"] >= 6


def test_the_end_to_end_correction_learns_what_the_executions_do_not():
    """A measured total with its measured executions swapped for their loaded prices: the
    executions' misses are learnt per shape from the executions themselves, once."""
    pred = {"exec": 0.010, "deser": 0.002, "transfer": 0.004, "contention": 0.008, "total": 0.030}
    act = {"exec": 0.025, "transfer": 0.006, "total": 0.040}
    assert loaded_exec(pred) == pytest.approx(0.015)              # 0.010 x (1 + 0.008 / 0.016)
    assert total_as_priced(pred, act) == pytest.approx(0.040 - 0.025 + 0.015)
    split = {"exec": 0.004, "exec_host": 0.006, "total": 0.02}
    assert total_as_priced(split, {"exec": 0.005, "exec_host": 0.009, "total": 0.03}) == pytest.approx(0.026)
    assert total_as_priced({"total": 0.01}, {"exec": 0.5, "total": 0.02}) == 0.02   # nothing priced to swap


def test_an_execution_miss_is_not_learnt_again_by_the_end_to_end_correction():
    """The device's execution model far too fast (20 us for any plan): its execution correction
    learns it (to its bound), the client's end-to-end feedback for the same queries does not."""
    lc, link = _calibrated()
    # 100k rows, not 20k: the miss must dwarf what the rest of the total may be off by (on 20k
    # rows the totals ran 2.1-3.1x their price, and the premise below failed now and then)
    lc.store("nic0").put("particles", "o1", uniform(80_000, seed=3))
    svc = lc.host("nic0").services["query"]
    k = len(OPS)
    svc.models.exec = svc.models.exec_linear = OpsExec(serial=[0.0] * k, parallel=[0.0] * k, intercept=2e-5)
    svc.models.residuals.state.clear()
    c = QueryClient(link, "host")
    sql = "select id, x * y + z as w from particles where x < 0.9 order by w"
    # a first run pays the worker's start and cold caches (its rest ran 2-4x its price), which
    # is not this test's subject: run it, then forget what it taught and the feedback it left
    c.query(sql, "down")
    svc.models.residuals.state.clear()
    c._feedback.clear()
    runs = [c.query(sql, "down") for _ in range(7)]
    # the miss is large (executions ran ~100x their price, totals 3-4.6x on 20k rows in
    # earlier stops, 2.1-3.1x in the thirtieth; 4.4-5.1x on 100k): learnt end to end
    # (alpha 0.2 in log space over 7 runs), totals over 2.5x take the total's correction to
    # e^(0.79 ln 2.5) = 2.06, its bound of 2.0, well over the 1.6 asserted below
    assert all(r.actual["exec"] > 20 * r.decision["predicted"]["down"]["exec"] for r in runs)
    assert np.median([r.actual["total"] / r.decision["predicted"]["down"]["total"] for r in runs]) > 2.5
    fb = c._feedback["nic0"]
    pred, act = runs[-1].decision["predicted"]["down"], runs[-1].actual
    assert fb["predicted"] == pred["total"]
    assert fb["actual"] == pytest.approx(act["total"] - act["exec"] + loaded_exec(pred))
    corr = link.call("nic0", "query", "health")["corrections"]
    execs = {k: v["factor"] for k, v in corr.items() if not k.startswith("total:")}
    totals = {k: v["factor"] for k, v in corr.items() if k.startswith("total:down@")}
    assert execs == {"*": 2.0}                        # the execution's own correction took it, to its bound
    # measured totals ran many times their price, all of it execution: the end-to-end entry
    # learns only what the rest ran, i.e. each total with its execution swapped for the
    # execution's price. Replayed from the runs whose feedback reached the device (each run's
    # rides on the next request, so the last one's is still pending), that is the factor it
    # holds; learnt from the raw totals it would be another (near the 2.0 bound). A bound on
    # the factor alone failed under load, when the rest itself ran 1.64x its price.
    def replay(actual, bound=svc.models.residuals.bound):
        r = Residuals(alpha=svc.models.residuals.alpha, bound=bound)
        for run in runs[:-1]:
            p = run.decision["predicted"]["down"]
            r.update("total:down", p["total"], actual(run.actual, p))
        return r.factor("total:down")
    def as_priced(a, p):                  # the total with its execution as priced
        return a["total"] - a["exec"] + loaded_exec(p)
    rest = replay(as_priced)
    assert len(totals) == 1 and list(totals.values())[0] == pytest.approx(rest, rel=1e-3), (totals, rest)
    # the premise, unbounded (under load the rest alone reached the 2.0 bound once, and the
    # bounded replays were then equal): raw totals would teach more than the rest did
    free = replay(as_priced, 1e9)
    raw = replay(lambda a, p: a["total"], 1e9)
    assert raw > 1.15 * free, (raw, free)


def test_end_to_end_corrections_stay_in_their_size_class():
    """A small query's end-to-end residual is mostly fixed per-call cost; spread over a large
    query that a transfer dominates, it mispriced it (the demo: x1.37 learnt on a 19-ms filter
    priced a 93-ms wide filter at 183 ms). Each factor-of-2 class of the fitted total learns
    apart, and the key a decision gives is the one the client's measurement updates."""
    from colony.services.query import _total_key
    m = _models("nic", 1, 2e-8)
    small, key_s = m.predict_total("down", 0.019)
    large, key_l = m.predict_total("down", 0.13)
    assert key_s != key_l and key_s.startswith("total:down@") and small == pytest.approx(0.019)
    for _ in range(20):
        m.residuals.update(key_s, m.predict_total("down", 0.019)[0], 1.37 * 0.019)
    assert m.predict_total("down", 0.019)[0] == pytest.approx(1.37 * 0.019, rel=0.05)
    assert m.predict_total("down", 0.13)[0] == pytest.approx(large)              # untouched
    assert m.predict_total("down", 0.021)[1] == key_s                             # same class
    d = decide(_est(), m, _models("host", 8, 2e-9), HostLoad(0, 8, 8))
    assert set(d.total_keys) == set(d.predicted) and d.total_keys["down"].startswith("total:down@")
    fb = {"placement": "down", "predicted": 0.1, "actual": 0.2}
    assert _total_key({**fb, "key": d.total_keys["down"]}) == d.total_keys["down"]
    assert _total_key({**fb, "key": "total:back@3"}) is None and _total_key(fb) is None   # not this placement's


def test_a_host_corrects_pushed_back_plans_and_split_upper_parts_apart():
    """One host model prices a whole pushed-back plan and a split's upper part; they can
    share a shape yet be mispriced in opposite directions, so each role has its own entry."""
    from colony.cost.models import OpsExec
    m = _models("host", 2, 2e-8)
    serial = [0.0] * len(OPS)
    serial[OPS.index("hash_agg")] = 5e-9
    m.exec = OpsExec(serial=serial, parallel=[0.0] * len(OPS), intercept=1e-4)
    agg = dict.fromkeys(OPS, 0.0)
    agg.update(rows=1e6, hash_agg=1e6, groups=16.0)
    assert m.family(agg, role="back").startswith("back:hash_agg[agg]@")
    assert m.family(agg, role="split").startswith("split:hash_agg[agg]@")
    base = m.predict_exec(agg, 2)
    for _ in range(30):                       # back runs 30 % faster, split runs 50 % slower than priced
        m.residuals.update(m.family(agg, 2, "back"), m.predict_exec(agg, 2, "back"), 0.7 * base)
        m.residuals.update(m.family(agg, 2, "split"), m.predict_exec(agg, 2, "split"), 1.5 * base)
    assert m.predict_exec(agg, 2, "back") == pytest.approx(0.7 * base, rel=0.08)
    assert m.predict_exec(agg, 2, "split") == pytest.approx(1.5 * base, rel=0.08)


def test_each_execution_learns_into_the_entry_that_priced_it():
    """A host with one of its two threads free is priced on one thread; the online correction
    must update that price's entry (its size class), not the entry of all the host's threads."""
    from types import SimpleNamespace

    from colony.services.query import QueryService
    dev, host = _models("nic", 1, 2e-8), _models("host", 2, 0.0)
    par = [0.0] * len(OPS)
    par[OPS.index("rows")] = 4e-8              # all parallel: one thread costs twice two
    host.exec = OpsExec(serial=[0.0] * len(OPS), parallel=par, intercept=1e-4)
    ops = _est().ops
    d = decide(_est(), dev, host, HostLoad(free_threads=1, threads=2), placement="back")
    priced = d.exec_keys["back"]["exec_host"]
    assert priced == host.family(ops, 1, "back") != host.family(ops, None, "back")
    assert d.exec_keys["down"]["exec"] == dev.family(ops)
    sent = QueryService._host_prediction(SimpleNamespace(host_models=host), d, "back")
    assert sent["family"] == priced and sent["exec_host"] == pytest.approx(d.predicted["back"]["exec_host"])
    idle = decide(_est(), dev, host, HostLoad(free_threads=2, threads=2), placement="back")
    assert idle.exec_keys["back"]["exec_host"] == host.family(ops, None, "back")
