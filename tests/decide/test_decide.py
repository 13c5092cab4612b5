"""The decision engine follows the time model: placement by predicted latency, reasons given."""

import numpy as np
import pytest

from colony.cost.models import DeviceModels, LinearModel, NNLSExec
from colony.decide import HostLoad, StormPolicy, decide, predict
from colony.query.estimate import OPS, Estimate


def _models(name, threads, per_row, link_b=None, serial=0.0):
    coef = [0.0] * len(OPS)
    coef[OPS.index("rows")] = per_row
    coef[OPS.index("take")] = per_row / 4
    return DeviceModels(device=name, threads=threads, exec=NNLSExec(coef=coef, intercept=1e-4, serial=serial),
                        ser_time=LinearModel(1e-5, 1e-9), ser_bytes=LinearModel(500, 1.0), deser_s=1e-5,
                        link=LinearModel(5e-5, link_b) if link_b else None)


def _est(rows, sel, aggregate=False, supported=True):
    ops = {k: 0.0 for k in OPS}
    ops.update(rows=rows, cmp=rows, filter=rows, take=rows * sel * 9)
    e = Estimate(rows=1 if aggregate else rows * sel, out_cols=9, out_width=72.0, ops=ops, input_rows=rows,
                 input_bytes=int(rows * 72), objects=4, supported=supported, reason="" if supported else "join")
    if aggregate:
        lo = dict(ops)
        e.split_ops, e.split_rows, e.split_cols, e.split_width = lo, rows * sel, 2, 16.0
        e.upper_ops = {k: 0.0 for k in OPS} | {"rows": rows * sel, "hash_agg": rows * sel}
    return e


DEV = _models("nic", 1, 2e-8, link_b=1 / 200e6)      # slow device, 200 MB/s link
HOST = _models("host", 8, 2e-9, serial=0.0)


def test_selective_query_stays_down_and_wide_one_goes_back():
    assert decide(_est(1e6, 0.01), DEV, HOST, HostLoad(0, 8, 8)).placement == "down"
    fast_link = _models("nic", 1, 2e-7, link_b=1 / 10e9)
    assert decide(_est(1e6, 0.9), fast_link, HOST, HostLoad(0, 8, 8)).placement == "back"


def test_busy_host_keeps_work_on_device():
    fast_link = _models("nic", 1, 2e-7, link_b=1 / 10e9)
    idle = decide(_est(1e6, 0.9), fast_link, HOST, HostLoad(0, 8, 8, service_s=0.05))
    busy = decide(_est(1e6, 0.9), fast_link, HOST, HostLoad(200, 0, 8, service_s=0.05))
    assert idle.placement == "back" and busy.placement == "down"


def test_time_model_terms_add_up():
    p = predict(_est(1e6, 0.5, aggregate=True), DEV, HOST, HostLoad(0, 8, 8))
    for v in p.values():
        assert v["total"] == pytest.approx(sum(x for k, x in v.items() if k not in ("total", "bytes")))
    assert set(p) == {"down", "back", "split"}


def test_the_hosts_legs_beyond_their_links_enter_back_and_split_only():
    """Offsets the call-path probes measured on the host's legs (the handover to the host and
    back, the answer relayed on to the client) add to those terms of back and split."""
    import copy
    dev = copy.deepcopy(DEV)
    est = _est(1e6, 0.5, aggregate=True)
    before = predict(est, dev, HOST, HostLoad(0, 8, 8))
    dev.call_path.update(handover={"a": 0.007, "b": 1.0}, relay={"a": 0.004, "b": 1.0})
    p = predict(est, dev, HOST, HostLoad(0, 8, 8))
    for pl in ("back", "split"):
        assert p[pl]["transfer"] == pytest.approx(before[pl]["transfer"] + 0.007)
        assert p[pl]["result"] == pytest.approx(before[pl]["result"] + 0.004)
        assert p[pl]["total"] == pytest.approx(before[pl]["total"] + 0.011)
    assert p["down"] == before["down"]
    assert dev.leg("handover") == 0.007 and DEV.leg("handover") == 0.0
    dev.call_path.update(handover={"a": -10.0, "b": 1.0}, relay={"a": -10.0, "b": 1.0})   # far below the links
    low = predict(est, dev, HOST, HostLoad(0, 8, 8))
    assert all(low[pl]["transfer"] == 0.0 == low[pl]["result"] for pl in ("back", "split"))


def test_the_hosts_decode_of_split_results_is_priced_like_pushed_back_objects():
    """The host decodes a split's lower results as it decodes a push-back's objects, so the
    host's calibrated setup model prices both (a constant per object under-priced it 5-10x)."""
    host = _models("host", 8, 2e-9)
    host.setup = LinearModel(5e-4, 1e-5)
    est = _est(1e6, 0.5, aggregate=True)
    p = predict(est, DEV, host, HostLoad(0, 8, 8))
    assert p["split"]["deser_host"] == pytest.approx(host.predict_setup(est.split_rows, 1))
    assert p["back"]["deser_host"] == pytest.approx(host.predict_setup(est.input_rows, est.objects))
    wider = predict(_est(1e6, 0.9, aggregate=True), DEV, host, HostLoad(0, 8, 8))
    assert wider["split"]["deser_host"] > p["split"]["deser_host"] > host.deser_s


def test_unsupported_plans_push_back_and_forced_placements_are_honoured():
    assert decide(_est(1e6, 0.5, supported=False), DEV, HOST).placement == "back"
    assert decide(_est(1e6, 0.01), DEV, HOST, placement="back").placement == "back"
    assert decide(_est(1e6, 0.01), DEV, HOST, placement="split").placement == "down"   # nothing to split


def test_probabilistic_storm_control_thins_pushbacks_as_load_grows():
    fast_link = _models("nic", 1, 2e-7, link_b=1 / 10e9)
    rng = np.random.default_rng(0)
    pol = StormPolicy("probabilistic", beta=0.5)
    light = [decide(_est(1e6, 0.9), fast_link, HOST, HostLoad(0, 8, 8), storm=pol, rng=rng).placement
             for _ in range(200)]
    heavy = [decide(_est(1e6, 0.9), fast_link, HOST, HostLoad(48, 8, 8), storm=pol, rng=rng).placement
             for _ in range(200)]
    assert light.count("back") == 200
    assert heavy.count("back") < 150


def test_prices_beyond_the_calibrated_sizes_come_with_a_caveat():
    """A record made on small tables still prices large ones (by extrapolation): the decision
    says so, naming the model, its largest calibrated input and this plan's, instead of
    presenting an extrapolated price as sure as any other."""
    small = _models("nic", 1, 2e-8, link_b=1 / 200e6)
    small.rows_max = 3e4
    host = _models("host", 8, 2e-9)
    host.rows_max = 2e6
    d = decide(_est(1e6, 0.01), small, host, HostLoad(0, 8, 8))
    assert len(d.caveats) == 1 and "nic's models" in d.caveats[0]
    assert "30,000" in d.caveats[0] and "1,000,000" in d.caveats[0] and "33x" in d.caveats[0]
    assert d.to_dict()["caveats"] == d.caveats
    assert decide(_est(5e4, 0.01), small, host, HostLoad(0, 8, 8)).caveats == []     # within 2x: none
    assert decide(_est(1e6, 0.01), small, host, placement="back").caveats == d.caveats
    assert decide(_est(1e6, 0.01), DEV, HOST).caveats == []                           # sizes unknown: none
