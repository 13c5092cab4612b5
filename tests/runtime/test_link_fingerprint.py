"""A link rate changed at run time is a new fingerprint: the records made at the old rate stop
pricing the device, and those made at the new rate (if any) price it from then on."""

import pytest

from colony.config.builders import devices as devices_config
from colony.cost import suite
from colony.data import uniform
from colony.drivers.query import ensure_calibrated
from colony.runtime.calibrate import record
from colony.runtime.fingerprint import fingerprint
from colony.runtime.local import LocalColony


def _lc():
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    lc.store("nic0").put("particles", "o0", uniform(10_000, seed=2))
    return lc


def test_a_new_link_rate_uncalibrates_the_device_and_the_old_rate_gets_its_models_back():
    lc = _lc()
    assert ensure_calibrated(lc, "host", 6, 20_000)
    fp0 = lc.hosts["nic0"].ctx.fingerprint
    before = lc.call("nic0", "query", "models_json")
    lc.set_link("nic0", 2.0)
    assert lc.config.device("nic0").link_gbps == 2.0
    assert lc.hosts["nic0"].ctx.fingerprint != fp0
    h = lc.call("nic0", "query", "health")
    assert not h["calibrated"]                       # its models were measured on an unpaced link
    assert lc.call("host", "query", "health")["calibrated"]    # the host did not change
    said = []
    assert ensure_calibrated(lc, "host", 6, 20_000, on_calibrate=said.append)
    assert "nic0 not calibrated" in said[-1] and "calibrating nic0 only" in said[-1]
    paced = lc.call("nic0", "query", "models_json")
    assert paced["link"] != before["link"]
    lc.set_link("nic0", None)                        # back to the configured rate: its own models again
    assert lc.hosts["nic0"].ctx.fingerprint == fp0
    assert lc.call("nic0", "query", "models_json") == before
    lc.set_link("nic0", 2.0)
    assert lc.call("nic0", "query", "models_json") == paced


def test_a_ray_device_takes_the_record_of_its_new_rate(ray_colony):
    c = ray_colony
    fp_paced = fingerprint(c.config.with_link("nic2", 0.5).device("nic2"))
    assert fp_paced != fingerprint(c.config.device("nic2"))
    suite.update("nic2", fp_paced, {"marker": "made at 0.5 Gbit/s"})
    try:
        c.set_link("nic2", 0.5)
        cal = c.call("nic2", "device", "calibration")
        assert cal.get("marker") == "made at 0.5 Gbit/s" and cal["fingerprint"] == fp_paced
        assert record(c, "nic2").get("marker") == "made at 0.5 Gbit/s"     # the client's view follows
    finally:
        c.set_link("nic2", None)
        suite.path_for("nic2", fp_paced).unlink(missing_ok=True)
    assert c.config.device("nic2").link_gbps is None
    assert "marker" not in c.call("nic2", "device", "calibration")


def test_a_calibration_whose_call_path_probes_failed_is_redone(monkeypatch):
    """The call-path fit ends a device's calibration; when its probes fail the device keeps its
    models without it, and the next run must redo it rather than price every total without
    the path's overheads (a probe set that lacked a table did this to a benchmark)."""
    import colony.drivers.query as dq
    lc = _lc()
    real = dq.calibrate_call_path

    def broken(*a, **k):
        raise RuntimeError("probe failed")
    monkeypatch.setattr(dq, "calibrate_call_path", broken)
    with pytest.raises(RuntimeError, match="probe failed"):
        ensure_calibrated(lc, "host", 6, 20_000)
    assert lc.call("nic0", "query", "health")["calibrated"]          # its models were kept...
    assert not lc.call("nic0", "query", "health")["links_calibrated"]  # ... without the call path
    monkeypatch.setattr(dq, "calibrate_call_path", real)
    said = []
    assert ensure_calibrated(lc, "host", 6, 20_000, on_calibrate=said.append)
    assert "nic0 not calibrated" in said[-1]
    assert lc.call("nic0", "query", "health")["links_calibrated"]
    assert "call_path" in lc.call("nic0", "query", "models_json")["report"]
    assert not ensure_calibrated(lc, "host", 6, 20_000)               # and then it is kept


def test_a_call_path_fit_of_an_older_rule_is_refitted_alone():
    """A record whose call-path fit predates CALL_PATH_REVISION keeps its models: only the
    call path is refitted (probe queries, not the models' calibration suite)."""
    from colony.drivers.query import CALL_PATH_REVISION
    lc = _lc()
    assert ensure_calibrated(lc, "host", 6, 20_000)
    m = lc.call("nic0", "query", "models_json")
    assert m["report"]["call_path"]["revision"] == CALL_PATH_REVISION
    assert lc.call("nic0", "query", "health")["call_path_revision"] == CALL_PATH_REVISION
    lc.call("nic0", "query", "set_call_path", m["call_path"], {"back": {"n": 3}})    # as an older build recorded it
    assert lc.call("nic0", "query", "health")["call_path_revision"] == 1
    said = []
    assert ensure_calibrated(lc, "host", 6, 20_000, on_calibrate=said.append)
    assert said == [f"nic0: call-path fit of an older revision, refitting it (revision {CALL_PATH_REVISION})"]
    after = lc.call("nic0", "query", "models_json")
    assert after["exec"] == m["exec"] and after["report"]["kept"] == m["report"]["kept"]    # models kept
    assert after["report"]["call_path"]["revision"] == CALL_PATH_REVISION
    assert not ensure_calibrated(lc, "host", 6, 20_000)
