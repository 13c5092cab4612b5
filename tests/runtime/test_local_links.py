"""LocalColony charges the same links as the Ray runtime: paced at the devices' rates,
counted per direction, device-to-device calls on the link between the two devices."""

from __future__ import annotations

import time

import pyarrow as pa

from colony import codec
from colony.config.builders import embedded
from colony.runtime.local import LocalColony


def _links(lc) -> dict:
    return {ln["link"]: ln["directions"] for ln in lc.link_stats()}


def test_calls_are_paced_and_counted_on_the_callers_link():
    lc = LocalColony(embedded(links_gbps={"nic0": 0.08}))           # 10 MB/s
    obj = codec.pack(pa.table({"x": list(range(250_000))}))           # ~2 MB
    t0 = time.perf_counter()
    lc.call("nic0", "objects", "put", "default", "k/0", obj)
    took = time.perf_counter() - t0
    assert took >= obj.size / 10e6 * 0.95                              # paced: size / rate
    d = _links(lc)["client<->nic0"]
    assert d["client->nic0"]["bytes"] == obj.size and d["nic0->client"]["bytes"] == 0


def test_device_to_device_traffic_is_charged_between_the_two_devices_not_the_client():
    lc = LocalColony(embedded())
    obj = codec.pack(pa.table({"x": list(range(10_000))}))
    lc.call("nic0", "objects", "put", "default", "k/4", obj)
    lc.call("nic1", "objects", "copy_from", "nic0", "default", "k/4")   # nic1 asks nic0 for it
    d = _links(lc)
    assert d["nic1<->nic0"]["nic0->nic1"]["bytes"] == obj.size
    assert d["client<->nic1"]["nic1->client"]["bytes"] == 0              # the client got an Entry only


def _waited(lc, direction: str = "client->nic0") -> float:
    return _links(lc)["client<->nic0"][direction]["waited_s"]


def test_a_query_call_never_rides_on_an_earlier_transfers_stream():
    """A stream's next transfer (a sifting run's deliveries) counts the gap since the last one
    as its own transport; a query's call is a message of its own: 30 ms of idle link before
    it are not 30 ms of its transfer (a 287-byte reply let a 50 MB push-back cross free)."""
    lc = LocalColony(embedded(links_gbps={"nic0": 0.08}))           # 10 MB/s
    buf = codec.pack(pa.table({"x": list(range(125_000))}))          # ~1 MB: ~0.1 s on this link
    full = buf.size / 10e6
    lc.call("nic0", "objects", "put", "default", "k/0", buf)          # warm: the first put is slower
    lc.call("nic0", "objects", "put", "default", "k/1", buf)
    time.sleep(0.03)
    w0 = _waited(lc)
    lc.call("nic0", "objects", "put", "default", "k/2", buf)          # continues the stream
    streamed = _waited(lc) - w0
    assert streamed <= full - 0.02                                    # the idle 30 ms were credited
    lc.place("query", ["nic0"])
    tiny = codec.pack(pa.table({"x": [1, 2, 3]}))
    lc.call("nic0", "objects", "put", "default", "t/0", tiny)
    time.sleep(0.03)
    w0 = _waited(lc)
    assert lc.call("nic0", "query", "sink", buf) == buf.size          # a message: paid in full
    assert _waited(lc) - w0 >= full * 0.99
