"""MBWU orchestration: daemons, generators, sweeps, the bottleneck rule."""

import pytest

from colony.errors import InvalidParameter, NotAnMBWU, ToolUnavailable
from colony.quantify import mbwu, monitor
from colony.quantify.ycsb import workload


def _util(cpu=50.0, disk=10.0, mem=10.0, net=None):
    return {"cpu_pct_mean": cpu, "cores": 2, "mem_pct_max": mem,
            "disks": {"vda": {"util_pct": disk}}, "net": net or {}}


def test_bottleneck_rule_only_storage_is_an_mbwu():
    s = monitor.bottleneck(_util(cpu=99, disk=95))
    assert s["resource"] == "storage" and s["is_media_bound"]
    c = monitor.bottleneck(_util(cpu=97, disk=30))
    assert c["resource"] == "cpu" and not c["is_media_bound"] and "30%" in c["why"]
    assert monitor.bottleneck(_util(mem=99))["resource"] == "memory"
    n = monitor.bottleneck(_util(net={"eth0": {"rx_mib_s": 110, "tx_mib_s": 1}}), link_mib_s=119)
    assert n["resource"] == "network"
    assert monitor.bottleneck(_util())["resource"] == "undetermined"


def test_require_mbwu_refuses_platform_bound_peaks():
    with pytest.raises(NotAnMBWU, match="cpu"):
        mbwu.require_mbwu({"mbwu_ops": None, "refused": "bottleneck = cpu"})
    assert mbwu.require_mbwu({"mbwu_ops": 7314.7}) == 7314.7


def test_thread_sweep_network_landscape(tmp_path):
    w = workload("a", recordcount=400, operationcount=300)
    seen = []
    res = mbwu.thread_sweep(tmp_path / "dev", w, threads=[1, 3], duration=60, landscape="network", drop_cache=False,
                            progress=lambda k, r: seen.append(k))
    assert seen == ["load", "run", "run"]
    assert [p["threads"] for p in res["points"]] == [1, 3]
    for p in res["points"]:
        assert p["per_device"][0]["ops"] == 300                 # operationcount honoured
        assert set(p["per_device"][0]["by_op"]) <= {"read", "update"}
        assert p["per_device"][0]["read_misses"] == 0            # every read finds a loaded record
        assert "cpu_pct_mean" in p["utilization"] and p["bottleneck"]["resource"]
    assert res["load"]["records"] == 400 and res["load"]["db"]["properties"]["rocksdb.estimate-num-keys"] > 0
    # MBWU reported iff the peak was media-bound
    assert (res["mbwu_ops"] is not None) == res["bottleneck"]["is_media_bound"]
    if res["mbwu_ops"] is None:
        assert "not an MBWU" in res["refused"]
    assert res["caching"]["mode"] == "minimized"


def test_integrated_landscape_and_device_sweep(tmp_path):
    w = workload("b", recordcount=300, operationcount=200)
    res = mbwu.device_sweep([tmp_path / "d1", tmp_path / "d2"], w, threads=2, mbwu_ops=1000.0, duration=60,
                            landscape="integrated", plateau=10.0)
    assert [p["devices"] for p in res["points"]] == [1, 2]
    assert res["points"][1]["per_device"][1]["ops"] == 200
    assert res["plateau_at_devices"] == 2                  # a 1000% gain threshold is never met
    assert res["points"][0]["mbwus"] == pytest.approx(res["points"][0]["ops_per_s"] / 1000.0)
    assert res["device"]["warning"]                        # both paths are on one block device here


def test_inserts_extend_the_keyspace(tmp_path):
    w = workload("d", recordcount=200, operationcount=300)
    res = mbwu.thread_sweep(tmp_path / "dev", w, threads=[2], duration=60, landscape="integrated",
                            drop_cache=False)
    ops = res["points"][0]["per_device"][0]["by_op"]
    assert ops.get("insert", 0) > 0 and res["points"][0]["per_device"][0]["read_misses"] == 0


def test_disaggregated_needs_network_storage(tmp_path):
    with pytest.raises(ToolUnavailable, match="network storage"):
        mbwu.Platform([tmp_path], "disaggregated")


def test_bad_arguments(tmp_path):
    w = workload("a", recordcount=10)
    with pytest.raises(InvalidParameter):
        mbwu.thread_sweep(tmp_path, w, threads=[0])
    with pytest.raises(InvalidParameter):
        mbwu.Platform([tmp_path], "cloud")
    with pytest.raises(InvalidParameter):
        mbwu.device_sweep([tmp_path], w, 1, mbwu_ops=0)


def test_power_falls_back_to_supplied_watts():
    pm = monitor.PowerMeter(supplied_watts=123.0)
    pm.rapl, pm.ipmi = [], None
    pm.start()
    assert pm.stop() == {"watts": 123.0, "source": "supplied (--watts); no RAPL or IPMI readable here"}
    pm2 = monitor.PowerMeter()
    pm2.rapl, pm2.ipmi = [], None
    pm2.start()
    assert pm2.stop()["watts"] is None


def test_remote_daemon_via_connect(tmp_path):
    import threading
    from colony.quantify import kv
    ready, stop, port = threading.Event(), threading.Event(), {}
    t = threading.Thread(target=kv.serve, args=(str(tmp_path / "db"), "127.0.0.1", 0, False, True,
                                                 lambda p: (port.setdefault("p", p), ready.set()), stop), daemon=True)
    t.start()
    assert ready.wait(20)
    try:
        w = workload("c", recordcount=200, operationcount=150)
        res = mbwu.thread_sweep(None, w, threads=[2], duration=60, connect=("127.0.0.1", port["p"]),
                                drop_cache=False)
        assert res["points"][0]["per_device"][0]["ops"] == 150
        assert res["mbwu_ops"] is None and "storage host" in res["remote_daemon"]["note"]
        with pytest.raises(InvalidParameter):
            mbwu.thread_sweep(None, w, threads=[1], connect=("127.0.0.1", port["p"]), landscape="integrated")
    finally:
        stop.set()
        t.join(10)


def test_load_phase_is_rate_limited(monkeypatch):
    """The token bucket never runs ahead of the target rate (a fake clock advances only in sleep)."""
    class FakeTime:
        def __init__(self):
            self.t = 0.0
        def monotonic(self):
            return self.t
        def sleep(self, s):
            self.t += s
        def perf_counter(self):
            return self.t

    class Sink:
        puts = []
        def put(self, k, v):
            Sink.puts.append((k, len(v)))
        def flush(self):
            pass
        def stats(self):
            return {}
        def close(self):
            pass

    clock = FakeTime()
    monkeypatch.setattr(mbwu, "time", clock)
    w = workload("a", recordcount=100)
    res = mbwu._load(Sink, w, threads=1, rate=50.0, seed=0)
    assert res["seconds"] == pytest.approx(100 / 50.0)
    assert res["ops_per_s"] == pytest.approx(50.0)
    assert len(Sink.puts) == 100 and all(n == 4096 and len(k) == 16 for k, n in Sink.puts)
    assert len({k for k, _ in Sink.puts}) == 100


def test_drop_page_cache_reports_either_way(tmp_path):
    ok = mbwu.drop_page_cache(str(tmp_path / "drop_caches"))
    assert ok["dropped"] and (tmp_path / "drop_caches").read_text() == "3\n"
    no = mbwu.drop_page_cache(str(tmp_path / "missing" / "drop_caches"))
    assert not no["dropped"] and "not permitted" in no["how"]
