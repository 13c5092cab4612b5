"""The online correction learns from the execution priced under the load the decision saw
(``decide.loaded_exec``): a slowdown the measured stretch already prices is not learnt a
second time, and a stretch reading that overstates what the queries feel is corrected."""

import numpy as np
import pytest

from colony.config.builders import devices as devices_config
from colony.data import uniform
from colony.decide import device_work, loaded_exec
from colony.drivers.query import QueryClient, calibrate_colony
from colony.query.plan import TableSpec
from colony.runtime.local import LocalColony


class _Cores:
    """A core-load reading fixed by the test (the real sampler measures the machine)."""

    def __init__(self, stretch: float) -> None:
        self.stretch = stretch

    def slowdown(self, own: float = 0.0) -> float:
        return self.stretch

    def settled(self, own: float = 0.0) -> float:
        return self.stretch


def test_loaded_exec_is_the_execution_share_of_the_contention():
    down = {"deser": 1.0, "exec": 6.0, "ser": 1.0, "transfer": 2.0, "contention": 5.0}   # stretch 1.5
    assert loaded_exec(down) == pytest.approx(9.0)
    assert device_work(down) * 0.5 == down["contention"]
    back = {"transfer": 2.0, "deser_host": 1.0, "exec_host": 3.0, "contention_host": 2.0, "contention": 1.0}
    assert loaded_exec(back, "exec_host") == pytest.approx(4.5)        # host stretch 1.5
    assert loaded_exec({"exec": 6.0}) == 6.0                           # no load priced: the term itself


def test_a_stretch_the_queries_do_not_feel_is_corrected_not_added():
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 2, "services": {"query": {}}},
                                     "nic0": {"role": "smartnic", "threads": 1, "services": {"query": {}},
                                              "pools": ["particles"]}}))
    lc.store("nic0").put("particles", "o0", uniform(40_000, seed=5))
    svc = lc.host("nic0").services["query"]
    svc.cores = _Cores(1.0)
    calibrate_colony(lc, "host", n_runs=12, max_rows=40_000)
    client = QueryClient(lc, "host", {"particles": TableSpec("particles", "particles")})
    sql = "select particle_id & 7 as g, count(*), sum(vx) from particles where x < 0.6 group by g"
    # the sampler now reads 1.8x, but nothing else runs: the queries take what they took
    svc.cores.stretch = 1.8
    runs = [client.query(sql, "down") for _ in range(16)]
    assert all(r.decision["load"]["device"]["slowdown"] == pytest.approx(1.8) for r in runs)
    last = runs[-6:]
    priced = np.median([loaded_exec(r.decision["predicted"]["down"]) for r in last])
    measured = np.median([r.actual["exec"] for r in last])
    # learnt against exec x 1.8, the correction brings the loaded price back to what ran;
    # learnt against exec alone (before), it stayed at what ran and the stretch added 1.8x on top
    assert 0.7 < priced / measured < 1.4
    bare = np.median([r.decision["predicted"]["down"]["exec"] for r in last])
    assert bare / measured < 0.8                 # the execution term itself carries the correction
