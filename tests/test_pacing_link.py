"""The one link model (colony.pacing.Link): counted always, paced when it has a rate, per
direction; streams reach the configured rate, lone calls pay latency + size / rate."""

from __future__ import annotations

import pytest

from colony.pacing import Link, LinkModel, counted, gbps_to_Bps, payload_bytes


def test_gbps_conversion_is_the_one_helper():
    assert gbps_to_Bps(8.0) == 1e9 and gbps_to_Bps(None) is None
    assert LinkModel.gbps(1.0).rate == 125e6 and LinkModel.gbps(1.0).gbit_per_s == pytest.approx(1.0)


def test_unpaced_link_counts_bytes_per_direction_and_never_waits(clk):
    ln = Link("client", "nic0", LinkModel(), clock=clk, sleep=clk.sleep)
    assert ln.transfer(10 ** 9, "client", "nic0", seconds=0.5) == 0.0
    ln.transfer(7, "nic0", "client")
    st = ln.stats()
    assert st["directions"]["client->nic0"] == {"bytes": 10 ** 9, "transfers": 1, "busy_s": 0.5, "waited_s": 0.0}
    assert st["directions"]["nic0->client"]["bytes"] == 7 and clk.t == 0.0
    assert counted([st], st["link"], "client->nic0", "busy_s") == 0.5 and counted([st], st["link"], "nic0->client") == 7
    assert counted([st], "client<->nic9", "nic9->client") == 0      # a link that carried nothing yet
    with pytest.raises(ValueError):
        ln.transfer(1, "nic1", "nic0")


def test_lone_call_is_charged_latency_plus_size_over_rate(clk):
    ln = Link("a", "b", LinkModel.gbps(8.0, latency_s=50e-6), clock=clk, sleep=clk.sleep)   # 1 GB/s
    clk.t = 10.0
    assert ln.transfer(1000, "a", "b") == pytest.approx(50e-6 + 1e-6)
    assert ln.stats()["directions"]["a->b"]["busy_s"] == pytest.approx(51e-6)


def test_stream_reaches_the_rate_and_duplex_directions_are_independent(clk):
    ln = Link("a", "b", LinkModel(rate=1e6), clock=clk, sleep=clk.sleep)
    for _ in range(10):
        ln.transfer(100_000, "a", "b")
    assert clk.t == pytest.approx(1.0)                 # 1 MB at 1 MB/s
    t0 = clk.t
    ln.transfer(100_000, "b", "a")                     # the other direction has its own rate
    assert clk.t - t0 == pytest.approx(0.1)


def test_stream_hides_the_transports_own_time_up_to_size_over_rate(clk):
    ln = Link("a", "b", LinkModel(rate=1e6), clock=clk, sleep=clk.sleep)
    for _ in range(10):
        clk.t += 0.03                                   # the transport takes 30 ms per 100 kB
        ln.transfer(100_000, "a", "b")
    assert clk.t == pytest.approx(0.03 + 1.0, abs=1e-9)   # max(transport, size/rate) per transfer
    for _ in range(10):
        clk.t += 0.04                                   # a transport slower than the link: it bounds
        ln.transfer(10_000, "a", "b")
    assert clk.t == pytest.approx(1.03 + 0.4, abs=1e-9)
    clk.t += 1.0                                        # idle: the next call is charged in full
    assert ln.transfer(10_000, "a", "b") == pytest.approx(0.01)


def test_half_duplex_shares_one_rate(clk):
    ln = Link("a", "b", LinkModel(rate=1e6, duplex=False), clock=clk, sleep=clk.sleep)
    ln.transfer(500_000, "a", "b")
    ln.transfer(500_000, "b", "a")
    assert clk.t == pytest.approx(1.0)


def test_set_model_keeps_counters(clk):
    ln = Link("a", "b", LinkModel(), clock=clk, sleep=clk.sleep)
    ln.transfer(5, "a", "b")
    ln.set_model(LinkModel(rate=10.0))
    ln.transfer(10, "a", "b")
    assert ln.bytes == 15 and ln.waited_s == pytest.approx(1.0)
    with pytest.raises(ValueError):
        ln.set_model(LinkModel(rate=0.0))


def test_payload_bytes_counts_arrow_and_buffers_in_nested_arguments():
    import pyarrow as pa
    t = pa.table({"x": list(range(100))})
    assert payload_bytes(("pool", "k", t, {"b": b"abc", "l": [pa.py_buffer(b"12345")]}, 7, None)) == \
        t.nbytes + 3 + 5


def test_real_clock_concurrent_senders_share_one_direction():
    import threading
    import time
    ln = Link("a", "b", LinkModel(rate=2_000_000.0))        # 2 MB/s
    t0 = time.perf_counter()
    threads = [threading.Thread(target=lambda: [ln.transfer(40_000, "a", "b") for _ in range(5)])
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    assert 0.19 <= took < 0.4                                 # 400 kB at 2 MB/s, shared
    assert ln.stats()["directions"]["a->b"]["bytes"] == 400_000


def test_payload_bytes_ignores_metadata_that_merely_has_an_nbytes_field():
    from colony.store import Entry
    assert payload_bytes(Entry("p", "k", 4 << 20, 10, "none")) == 0      # an acknowledgement, not data


def test_a_message_never_continues_an_earlier_stream(clk):
    ln = Link("a", "b", LinkModel(rate=1e6), clock=clk, sleep=clk.sleep)
    ln.transfer(287, "a", "b")                          # a small reply
    clk.t += 0.03                                       # 30 ms of idle link
    assert ln.transfer(100_000, "a", "b", stream=False) == pytest.approx(0.1)   # paid in full
    clk.t += 0.03
    assert ln.transfer(100_000, "a", "b") == pytest.approx(0.07)    # a stream's next part: gap credited
    assert ln.transfer(100_000, "a", "b", stream=False) == pytest.approx(0.1)   # after a busy lane: queued


def test_a_wait_below_the_sleeps_resolution_is_charged_and_queued_not_slept(clk):
    ln = Link("a", "b", LinkModel(rate=1e9), clock=clk, sleep=clk.sleep)    # 1 GB/s
    clk.t = 5.0
    assert ln.transfer(5_000, "a", "b", stream=False) == pytest.approx(5e-6)   # owed 5 us ...
    assert clk.t == 5.0                                                      # ... not slept
    for _ in range(100):                               # a stream of them is paced in aggregate
        ln.transfer(5_000, "a", "b")
    assert clk.t == pytest.approx(5.0 + 101 * 5e-6, abs=Link.MIN_SLEEP_S)
    assert ln.stats()["directions"]["a->b"]["waited_s"] >= 101 * 5e-6 * 0.99
