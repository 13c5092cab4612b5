"""The in-process LocalColony implements the whole Colony interface from a ColonyConfig."""

from __future__ import annotations

import pyarrow as pa
import pytest

from colony.config.builders import devices as devices_config, embedded
from colony.data import uniform
from colony.errors import ServiceError, SiftError, UnknownDevice
from colony.runtime.local import LocalColony
from colony.services.protocol import Colony, DeviceInfo


def _colony() -> LocalColony:
    return LocalColony(devices_config({"host": {"role": "host", "threads": 2},
                                       "nic0": {"role": "smartnic", "pools": ["p"]},
                                       "nic1": {"role": "smartnic", "pools": ["p"], "services": {"sift": {}}}}))


def test_devices_describe_the_configuration():
    c = _colony()
    infos = {d.name: d for d in c.devices()}
    assert all(isinstance(d, DeviceInfo) for d in infos.values())
    assert infos["host"].role == "host" and infos["host"].label == "real" and infos["host"].threads == 2
    assert infos["nic1"].label == "emulated bluefield2" and "sift" in infos["nic1"].services
    assert "sift" not in infos["nic0"].services and infos["nic0"].pools == ("p",)


def test_put_and_get_go_through_the_owners_store():
    c = _colony()
    t = uniform(1000, seed=1)
    entry = c.put("p", "part-00007", t)
    owner = c.owner("p", "part-00007")
    assert entry.key == "part-00007" and c.store(owner).list("p") == ["part-00007"]
    assert all(c.store(d).list("p") == [] for d in ("nic0", "nic1") if d != owner)
    assert c.store(owner).get("p", "part-00007").size == entry.nbytes
    (back,) = c.get("p", "part-00007")
    assert back.equals(t)


def test_place_changes_what_is_placed():
    c = _colony()
    with pytest.raises(ServiceError, match="not placed"):
        c.call("nic0", "sift", "status")
    c.place("sift", ["nic0"])
    assert "sift" in next(d for d in c.devices() if d.name == "nic0").services
    with pytest.raises(SiftError, match="not configured"):     # placed: now the service itself answers
        c.call("nic0", "sift", "status")
    c.place("sift", "role:smartnic")
    assert all("sift" in d.services for d in c.devices() if d.role == "smartnic")


def test_call_async_and_wait_return_results_and_raise_errors():
    c = _colony()
    futs = [c.call_async(d, "objects", "list", "p") for d in ("nic0", "nic1")]
    assert c.wait(futs) == [[], []]
    bad = c.call_async("nic0", "sift", "status")
    with pytest.raises(ServiceError):
        c.wait(bad)
    with pytest.raises(UnknownDevice):
        c.call("nope", "objects", "list", "p")


def test_same_config_as_the_ray_runtime():
    cfg = embedded(pools={"particles": ["nic0"]})
    c = LocalColony(cfg)
    assert {d.name for d in c.devices()} == {"host0", "nic0", "nic1", "nic2", "nic3"}
    c.put("particles", "part-00001", pa.table({"x": [1, 2, 3]}))
    assert c.owner("particles", "part-00001") == "nic0" and c.store("nic0").list("particles") == ["part-00001"]


def test_every_protocol_method_is_implemented():
    members = [m for m in vars(Colony) if not m.startswith("_")]
    assert set(members) >= {"call", "call_async", "wait", "devices", "place", "put", "get"}
    for m in members:
        assert callable(getattr(LocalColony, m)), m
