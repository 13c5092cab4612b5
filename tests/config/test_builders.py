"""Every colony Colony composes is built by colony.config.builders and validated by one schema."""

from __future__ import annotations

import pytest

from colony.config.builders import csd_colony, devices, embedded, query_colony
from colony.errors import ConfigError


def test_embedded_with_links_pools_and_services():
    c = embedded(links_gbps={"nic0": 16.0}, pools={"particles": ["nic0"]},
                 services={"query": {"devices": "all", "options": {"models_dir": "/tmp/m"}}})
    assert c.device("nic0").link_gbps == 16.0 and c.device("nic1").link_gbps is None
    assert c.pool("particles").members == ("nic0",)
    assert c.device_services("nic2") == {"query": {"models_dir": "/tmp/m"}}
    assert "device" not in c.services     # the placements given replace the default's


def test_devices_keeps_per_device_service_options():
    c = devices({"a": {"role": "csd", "services": {"nearstore": {"device_id": 0}}},
                 "b": {"role": "csd", "services": {"nearstore": {"device_id": 1}}, "threads": 2}})
    assert c.device_services("a") == {"nearstore": {"device_id": 0}}
    assert c.device_services("b") == {"nearstore": {"device_id": 1}} and c.device("b").threads == 2
    assert c.device("a").profile == "csd"


def test_device_options_must_name_placed_devices():
    with pytest.raises(ConfigError, match="device_options.x"):
        devices({"a": {}}).from_dict({"devices": {"a": {"role": "smartnic"}},
                                      "services": {"sift": {"devices": ["a"], "device_options": {"x": {}}}}})


def test_csd_and_query_colonies():
    c = csd_colony(3, "/tmp/w", temp_dir="/tmp/r", num_cpus=2)
    assert list(c.devices) == ["csd0", "csd1", "csd2"] and c.runtime.num_cpus == 2
    assert c.device("csd1").spill_dir == "/tmp/w/csd1" and c.device_services("csd0") == {"nearstore": {"workdir": "/tmp/w"}}
    q = query_colony(2, host_threads=2, nic_threads=1, query_options={"max_result_bytes": 10})
    assert q.pool("particles").members == ("nic0", "nic1") and q.device("host").threads == 2
    assert q.device_services("nic1") == {"query": {"max_result_bytes": 10}}
