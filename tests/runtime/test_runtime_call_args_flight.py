"""Large parts of a service call's arguments go ahead of the call over the callee's Flight
endpoint (DoPut) when the transfer layer's measured rule says Flight (another node, from
256 KiB); the call carries references, the callee takes the parts back, and the link is
charged once. Small arguments stay in Ray's request."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from colony import codec
from colony.errors import RuntimeFailure
from colony.pacing import counted
from colony.runtime.flight import RESULT_FLIGHT_BYTES, PartRef

pytestmark = pytest.mark.ray


def _in(colony, dev: str) -> int:
    return counted(colony.links(), f"client<->{dev}", f"client->{dev}")


def test_a_large_call_argument_rides_flight_and_is_counted_once(ray_colony):
    c = ray_colony
    table = pa.table({"x": np.random.default_rng(5).random(300_000)})
    buf = codec.pack([table])                                          # 2.4 MB packed object
    dev = c.owner("default", "ca/1")
    assert c.transfers.bulk(buf.size, dev) and buf.size >= RESULT_FLIGHT_BYTES
    sent, before = c.transfers.args, _in(c, dev)
    entry = c.call(dev, "objects", "put", "default", "ca/1", buf)      # the object as a call argument
    assert c.transfers.args == sent + 1                                # over Flight, ahead of the call
    assert buf.size <= _in(c, dev) - before < buf.size + (16 << 10)    # charged once
    assert entry.nbytes == buf.size and c.get_object("default", "ca/1").equals(buf)
    t_arg = pa.table({"y": np.arange(100_000, dtype=np.int64)})        # a table argument, 0.8 MB
    f = c.call_async(c.owner("default", "ca/2"), "objects", "put", "default", "ca/2", t_arg)
    c.wait([f])
    assert c.transfers.args == sent + 2 and c.get("default", "ca/2")[0].equals(t_arg)
    for k in ("ca/1", "ca/2"):
        c.drop("default", k)


def test_a_small_call_argument_stays_in_rays_request(ray_colony):
    c = ray_colony
    sent = c.transfers.args
    small = codec.pack([pa.table({"x": np.arange(1000)})])
    dev = c.owner("default", "ca/3")
    c.call(dev, "objects", "put", "default", "ca/3", small)
    assert c.transfers.args == sent and c.get_object("default", "ca/3").equals(small)
    c.drop("default", "ca/3")


def test_a_reference_to_an_argument_the_device_does_not_hold_is_refused_by_name(ray_colony):
    with pytest.raises(RuntimeFailure, match="'nic0' holds no call argument"):
        ray_colony.call("nic0", "objects", "put", "default", "ca/4", PartRef("nic0", "nope", 1 << 20, "buffer"))
