"""Shared set-up of the query-service tests."""

import pytest

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.drivers.query import calibrate_colony
from colony.runtime.local import LocalColony


def _calibrated_pair(seeds=(2, 3), rows: int = 20_000) -> LocalColony:
    """An in-process host (2 threads) and one SmartNIC (1 thread) with the query service,
    one particle object of ``rows`` per seed on the SmartNIC, its link at 8 Gbit/s, and both
    calibrated briefly (12 runs)."""
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    for i, seed in enumerate(seeds):
        lc.store("nic0").put("particles", f"o{i}", uniform(rows, seed=seed))
    lc.set_link("nic0", 8.0)
    calibrate_colony(lc, "host", n_runs=12, max_rows=rows)
    return lc


@pytest.fixture(scope="session")
def calibrated_pair():
    """The builder of such a colony (a module's own fixture calls it with its seeds)."""
    return _calibrated_pair
