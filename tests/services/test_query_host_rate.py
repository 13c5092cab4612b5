"""The host measures how many seconds it really spends per predicted second of pushed-back
work (forced push-backs included, from the prediction the device sends along), and reports
its admitted backlog in those seconds: a reservation of p predicted seconds weighs p x rate."""

import pytest

from colony.drivers.query import QueryClient


@pytest.fixture(scope="module")
def colony(calibrated_pair):
    return calibrated_pair((5,))


def test_forced_push_backs_measure_the_host_rate_and_the_backlog_is_in_measured_seconds(colony):
    host = colony.host("host").services["query"]
    n0 = host._host_jobs.samples            # the call-path calibration's probes pushed back already
    c = QueryClient(colony, "host")
    sql = "select *, sqrt(abs(vx * vy)) as g from particles where x < 0.9"
    for _ in range(4):
        assert c.query(sql, "back").placement == "back"
    assert host._host_jobs.samples == n0 + 4           # each forced push-back is a sample
    rate = host._host_jobs.rate
    assert rate != 1.0 and 0.25 <= rate <= 20.0          # measured (bounded)
    assert colony.call("host", "query", "health")["host_rate"] == pytest.approx(rate)
    r = colony.call("host", "query", "admit", 0.1, 1e9)
    try:
        load = colony.call("host", "query", "load")
        assert load["rate"] == pytest.approx(rate)
        assert load["backlog_s"] == pytest.approx(0.1 * rate, rel=1e-6)
    finally:
        colony.call("host", "query", "unadmit", r["ticket"])
    assert colony.call("host", "query", "load")["backlog_s"] == 0.0
    assert host._host_jobs.rate == pytest.approx(rate)    # a dropped reservation teaches nothing
