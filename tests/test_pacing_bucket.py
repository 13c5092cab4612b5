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
