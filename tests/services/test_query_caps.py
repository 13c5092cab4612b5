"""Sizes and payloads a peer sends the query service are capped and checked (issue 14)."""

import pytest

from colony.errors import InvalidArgument
from colony.config.builders import devices as devices_config
from colony.runtime.local import LocalColony


@pytest.fixture()
def lc():
    return LocalColony(devices_config({"nic0": {"role": "smartnic", "threads": 1,
                                 "services": {"query": {"max_result_bytes": 1 << 20}}}}))


@pytest.mark.parametrize("n", [-1, (1 << 20) + 1, 64 << 30, "1000", 1.5, True, None])
def test_blob_size_is_capped(lc, n):
    with pytest.raises(InvalidArgument, match=r"blob size must be an integer in 0..1048576|'nbytes' must be <class 'int'>"):
        lc.call("nic0", "query", "blob", n)       # before: bytes(64 GiB) was attempted


def test_blob_within_cap(lc):
    assert lc.call("nic0", "query", "blob", 4096).size == 4096


def test_looping_host_models_are_refused(lc):
    tree = {"left": [1, 0, -1], "right": [2, 2, -1], "feature": [0, 0, 0], "threshold": [0.0] * 3,
            "value": [0.0] * 3}
    models = {"device": "host", "threads": 2, "exec": {"kind": "forest", "trees": [tree]},
              "ser_time": {"a": 0, "b": 0}, "ser_bytes": {"a": 0, "b": 8}, "deser_s": 0.0}
    with pytest.raises(InvalidArgument, match="child does not come after its parent"):
        lc.call("nic0", "query", "set_host_models", models)
    assert lc.call("nic0", "query", "health")["host_models"] is False
