"""pull_back: a push-back hands the host references, and the host pulls the objects from the
device (charged on the device's link to the host) instead of the device sending them inside
its call; results are the same as the default hand-over."""

import pytest

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.query import QueryClient
from colony.errors import InvalidArgument
from colony.runtime.local import LocalColony


def _colony(pull: bool) -> LocalColony:
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1,
                                              "services": {"query": {"pull_back": pull}}, "pools": ["particles"]}}))
    lc.store("nic0").put("particles", "o0", uniform(5_000, seed=7))
    lc.store("nic0").put("particles", "o1", uniform(5_000, seed=8))
    return lc


def _sent_to_host(lc) -> dict:
    """Bytes nic0 -> host, by whose end charged them: the device's (a pull) or the host's (call arguments)."""
    return {"device": sum(ln["directions"].get("nic0->host", {}).get("bytes", 0)
                          for ln in lc.links["nic0"].stats()),
            "host": sum(ln["directions"].get("nic0->host", {}).get("bytes", 0) for ln in lc.links["host"].stats())}


def test_host_pulls_pushed_back_objects_with_the_same_result():
    sql = "select count(*) as n, sum(x) as s from particles where y < 0.5"
    got = {}
    for pull in (False, True):
        lc = _colony(pull)
        r = QueryClient(lc, "host").query(sql, "back")
        assert r.placement == "back"
        got[pull] = r.table.to_pylist()
        stored = sum(lc.store("nic0").get("particles", k).size for k in ("o0", "o1"))
        sent = _sent_to_host(lc)
        if pull:    # the objects left by the device's end (the pull); the call carried references
            assert sent["device"] >= stored and sent["host"] < 10_000
        else:       # the objects were arguments of the device's call to the host
            assert sent["host"] >= stored and sent["device"] == 0
    assert got[True] == got[False]


def test_a_malformed_reference_is_refused():
    lc = _colony(True)
    with pytest.raises(InvalidArgument, match="pull, pool and key"):
        lc.call("host", "query", "run_pushed", b"x", {"particles": [{"pull": "nic0", "pool": 3}]})
