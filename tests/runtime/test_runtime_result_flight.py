"""Large service-call results come back over the device's Flight endpoint (DoGet), small
ones in Ray's reply; either way the result is charged once on the device->client link."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from colony import codec
from colony.pacing import counted
from colony.runtime.flight import RESULT_FLIGHT_BYTES


def _out(colony, dev: str) -> int:
    return counted(colony.links(), f"client<->{dev}", f"{dev}->client")


def test_a_large_call_result_rides_flight_and_is_counted_once(ray_colony):
    c = ray_colony
    table = pa.table({"x": np.random.default_rng(3).random(400_000)})      # 3.2 MB packed
    entry = c.put("default", "rf/1", table)
    dev = c.owner("default", "rf/1")
    stored = c.get_object("default", "rf/1")
    fetched, before = c.transfers.results, _out(c, dev)
    buf = c.call(dev, "objects", "get", "default", "rf/1")                 # the object, as a call result
    assert isinstance(buf, pa.Buffer) and buf.size == entry.nbytes >= RESULT_FLIGHT_BYTES
    assert buf.equals(stored) and codec.unpack(buf)[0].equals(table)
    assert c.transfers.results == fetched + 1                               # over Flight
    assert _out(c, dev) - before == entry.nbytes                            # charged once, by the call
    futs = [c.call_async(dev, "objects", "get", "default", "rf/1") for _ in range(2)]
    assert all(b.equals(stored) for b in c.wait(futs))                      # async calls fetch too
    assert c.transfers.results == fetched + 3
    c.drop("default", "rf/1")


def test_a_small_call_result_stays_in_rays_reply(ray_colony):
    c = ray_colony
    fetched = c.transfers.results
    info = c.call("nic0", "objects", "info")
    assert isinstance(info, dict) and c.transfers.results == fetched
