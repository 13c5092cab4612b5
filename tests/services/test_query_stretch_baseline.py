"""Contention is priced relative to the load the models were calibrated under: a machine as
busy now as while calibrating adds nothing (the models already carry it), a busier one adds
the ratio; the baseline travels with the models."""

import time

from colony.config.builders import devices as devices_config
from colony.cost.models import DeviceModels
from colony.data import uniform
from colony.drivers.query import calibrate_colony
from colony.runtime.local import LocalColony
from colony.services.cpu import CoreLoad


def test_contention_is_relative_to_the_calibration_load(cores):
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    lc.store("nic0").put("particles", "o0", uniform(10_000, seed=2))
    svc = lc.host("nic0").services["query"]
    cores.stretch = 2.0                                 # calibrated while the machine was 2x busy
    svc.cores = cores
    calibrate_colony(lc, "host", n_runs=8, max_rows=10_000)
    models = DeviceModels.from_json(lc.call("nic0", "query", "models_json"))
    assert models.stretch == 2.0 and models.report["stretch"] == 2.0
    assert svc._stretch() == 1.0                        # as busy as then: no contention term
    svc.cores.stretch = 3.0
    assert svc._stretch() == 1.5                        # busier: the ratio
    svc.cores.stretch = 1.0
    assert svc._stretch() == 1.0                        # quieter: never below 1


def test_settled_reads_a_fresh_window():
    cl = CoreLoad(window_s=0.3, every_s=0.05, spin_s=0.002)
    t0 = time.monotonic()
    s = cl.settled()
    cl.close()
    assert time.monotonic() - t0 >= 0.3 and s >= 1.0
