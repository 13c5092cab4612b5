"""The token bucket that paces emulated links: rate honoured, burst bounded, FIFO debt."""

import threading
import time

import pytest

from colony.pacing import TokenBucket


def test_rate_is_honoured_on_a_fake_clock(clk):
    b = TokenBucket(1000.0, burst=100.0, clock=clk, sleep=clk.sleep)
    for _ in range(50):
        b.consume(100)
    # 5000 bytes at 1000 B/s after a 100-byte burst: 4.9 s
    assert clk.t == pytest.approx(4.9)
    assert b.bytes == 5000 and b.waited == pytest.approx(4.9)


def test_idle_time_refills_only_up_to_burst(clk):
    b = TokenBucket(1000.0, burst=100.0, clock=clk, sleep=clk.sleep)
    clk.t = 100.0                              # a long idle period
    assert b.consume(100) == 0.0               # the burst passes at once
    assert b.consume(500) == pytest.approx(0.5)


def test_large_transfer_waits_size_over_rate(clk):
    b = TokenBucket.gbps(8e-6, burst=1.0, clock=clk, sleep=clk.sleep)   # 1000 B/s
    assert b.rate == pytest.approx(1000.0)
    assert b.consume(10_001) == pytest.approx(10.0)


def test_real_clock_concurrent_callers_share_the_rate():
    b = TokenBucket(2_000_000.0, burst=20_000.0)   # 2 MB/s
    t0 = time.perf_counter()
    threads = [threading.Thread(target=lambda: [b.consume(50_000) for _ in range(4)]) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    assert elapsed >= (600_000 - 20_000) / 2_000_000 * 0.95   # >= 0.29 s


def test_bad_rates_are_refused():
    with pytest.raises(ValueError):
        TokenBucket(0)
    with pytest.raises(ValueError):
        TokenBucket(10, burst=0)
    with pytest.raises(ValueError):
        TokenBucket(10).reserve(-1)


def test_unpaced_bucket_only_counts():
    b = TokenBucket(None)
    assert b.consume(10 ** 9) == 0.0 and b.bytes == 10 ** 9 and not b.paced and b.waited == 0.0
    assert TokenBucket.gbps(None).rate is None


def test_token_bucket_paces_to_rate(clk):
    tb = TokenBucket(1e6, burst=1, clock=clk, sleep=clk.sleep)   # 1 MB/s
    for _ in range(10):
        tb.consume(100_000)
    assert clk.t == pytest.approx(1.0)
    assert tb.bytes == 1_000_000 and tb.waited == pytest.approx(1.0)


def test_token_bucket_burst_and_refill(clk):
    tb = TokenBucket(1e6, burst=500_000, clock=clk, sleep=clk.sleep)
    assert tb.consume(500_000) == 0.0                    # the burst is free
    assert tb.consume(250_000) == pytest.approx(0.25)
    clk.t += 10.0                                        # idle: refills only up to the burst
    assert tb.consume(500_000) == 0.0
    assert tb.consume(1_000_000) == pytest.approx(1.0)


def test_token_bucket_shared_by_threads():
    tb = TokenBucket(4e6, burst=1)            # 4 MB/s, real clock
    t0 = time.monotonic()
    ts = [threading.Thread(target=lambda: [tb.consume(50_000) for _ in range(4)]) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert time.monotonic() - t0 >= 0.18                 # 800 kB at 4 MB/s = 0.2 s
